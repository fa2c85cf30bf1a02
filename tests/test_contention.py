"""Host CPU contention as a root cause (analyzers/contention.py), the overview's roots-first grouping,
peer groups of the straggler analysis and the pipeline bubble's latency figures."""

from __future__ import annotations

import json

from scope.analyzers import analyzer, link_rules
from scope.analyzers.contention import contention_findings, host_cores
from scope.analyzers.pipeline.findings import latency_cause
from scope.analyzers.stragglers import peer_groups
from scope.app.links import verdict

from scope.causality import describe_counts, finding_tree, link_findings
from scope.finding import Finding
from tests.conftest import ROOT


def test_ranks_outnumbering_cores_make_a_contention_note() -> None:
    run = {"hosts": [{"name": "vm", "ranks": [0, 1, 2, 3], "cpus": 2}, {"name": "big", "ranks": [4, 5], "cpus": 64}]}
    hosts = host_cores(run, sidecar_cpus={})
    (f,) = contention_findings(hosts, busy={}, traced={0, 1, 2, 3, 4, 5})
    assert "host_contention" in analyzer("contention").kinds
    assert f.kind == "host_contention" and f.severity == "info" and f.ranks == [0, 1, 2, 3]
    assert f.metrics["oversubscription"] == 2.0 and "4 ranks share 2 CPU cores" in f.summary


def test_a_saturated_host_is_contended_and_the_sidecar_gives_cores_missing_from_run_json() -> None:
    hosts = host_cores({"hosts": [{"name": "a", "ranks": [0, 1]}, {"name": "b", "ranks": [2, 3]}]}, {"a": 8, "b": 8})
    assert hosts == {"a": ([0, 1], 8), "b": ([2, 3], 8)}
    found = contention_findings(hosts, busy={"a": 97.0, "b": 40.0}, traced={0, 1, 2, 3})
    assert [f.metrics["host"] for f in found] == ["a"] and "97% busy" in found[0].summary


def test_recorded_runs_without_core_counts_make_no_contention_claim() -> None:
    """The shipped sample runs predate `hosts[].cpus` and have no sidecar: nothing is guessed."""
    run = json.loads((ROOT / "sample_traces" / "straggler" / "run.json").read_text())
    assert contention_findings(host_cores(run, {}), {}, {0, 1, 2, 3}) == []


def test_pipeline_ranks_are_judged_only_against_their_stage() -> None:
    assert peer_groups([0, 1, 2, 3], {}) == [[0, 1, 2, 3]]
    assert peer_groups([0, 1, 2, 3], {0: (0,), 1: (1,), 2: (0,), 3: (1,)}) == [[0, 2], [1, 3]]
    assert peer_groups([0, 1, 2, 3], {r: (r,) for r in range(4)}) == [[0], [1], [2], [3]]


def test_latency_bound_bubble_names_transfer_and_compute_figures() -> None:
    summary = {"latency_pts": 30.0, "hop_latency_us": 1700.0, "action_compute_us": 900.0}
    sentence, remedy = latency_cause(summary, excess=38.0)
    assert "1.7 ms from a send" in sentence and "0.9 ms of compute per micro-batch" in sentence
    assert "larger micro-batches" in remedy and "fewer stages" in remedy and "overlap" in remedy
    assert latency_cause({**summary, "latency_pts": 5.0}, excess=38.0) is None


def _overview_findings() -> list[Finding]:
    hc = Finding("host_contention", "info", "host vm is CPU-contended", ranks=[0, 1, 2, 3])
    bubble = Finding(
        "pipeline_bubble", "warning", "bubble 80%", ranks=[0, 1, 2, 3], metrics={"excess_pct": 37, "imbalance_pts": 2}
    )
    st = Finding(
        "straggler", "warning", "rank 1 looks slow", ranks=[1], metrics={"step_ratio": 1.4, "persistent": True}
    )
    cb = Finding("comm_bound", "warning", "waiting for rank 1", ranks=[1], metrics={"cause": "waiting"})
    return link_findings([bubble, st, cb, hc], link_rules())


def test_overview_names_the_root_and_counts_problems_and_effects() -> None:
    findings = _overview_findings()
    tree = finding_tree(findings)
    assert [node.finding.kind for node in tree] == ["host_contention"]
    assert sorted(f.kind for f in tree[0].descendants()) == ["comm_bound", "pipeline_bubble", "straggler"]
    assert describe_counts(findings) == "1 problem, 3 effects"
    level, sentence = verdict(findings, analyzed=True)
    assert level == "warning" and sentence.startswith("Slowed: host vm is CPU-contended")
    assert "3 effects of it folded under it" in sentence


def test_overview_layout_folds_effects_under_their_cause() -> None:
    from scope.app.pages.overview import finding_cards

    cards = finding_cards(_overview_findings())
    assert len(cards) == 2 and type(cards[1]).__name__ == "Details"
    assert "3 effects of this problem" in str(cards[1].children[0].children)
