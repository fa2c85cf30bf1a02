"""Causal links between findings (scope.causality): ids, each rule, roots first in the text report."""

from __future__ import annotations

from scope.analyzers import link_rules

from scope import causality
from scope.causality import Link, finding_tree, link_findings
from scope.finding import Finding
from scope.render.text import render_text
from scope.result import Analysis


def straggler(rank: int = 2, ratio: float = 2.5, persistent: bool = True) -> Finding:
    return Finding(
        "straggler",
        "warning",
        f"rank {rank} is a straggler",
        ranks=[rank],
        metrics={"straggler_kind": "compute", "step_ratio": ratio, "persistent": persistent, "time_lost_us": 9e3},
    )


def comm_bound_waiting(ranks: list[int]) -> Finding:
    return Finding("comm_bound", "warning", "mostly waiting", ranks=ranks, metrics={"cause": "waiting"})


def imbalance(rank: int = 1) -> Finding:
    return Finding("pipeline_imbalance", "warning", f"stage on rank {rank} bounds the step", ranks=[rank])


def bubble(excess: float, imbalance_pts: float) -> Finding:
    return Finding(
        "pipeline_bubble",
        "warning",
        "bubble above theory",
        ranks=[0, 1, 2, 3],
        metrics={"excess_pct": excess, "imbalance_pts": imbalance_pts},
    )


def contention(ranks: list[int], severity: str = "info") -> Finding:
    return Finding("host_contention", severity, "4 ranks on 2 cores", ranks=ranks)


def test_ids_are_stable_and_unique_per_kind() -> None:
    fs = [straggler(1), straggler(2), comm_bound_waiting([2])]
    fs[2].id = "straggler-0"  # an analyzer's own id that collides is replaced
    causality.assign_ids(fs)
    assert [f.id for f in fs] == ["straggler-0", "straggler-1", "comm_bound-0"]


def test_comm_bound_waiting_for_a_straggler_is_its_consequence() -> None:
    st, cb = straggler(2), comm_bound_waiting([2])
    out = link_findings([st, cb], link_rules())
    assert out == [st, cb]
    assert cb.caused_by == st.id and st.explains == [cb.id] and st.caused_by == ""


def test_comm_bound_waiting_for_another_rank_or_transfer_bound_stays_a_root() -> None:
    st, cb = straggler(2), comm_bound_waiting([3])
    transfer = Finding("comm_bound", "warning", "transfer", metrics={"cause": "transfer"})
    link_findings([st, cb, transfer], link_rules())
    assert cb.caused_by == "" and transfer.caused_by == "" and st.explains == []


def test_transfer_bound_steps_through_a_slow_link_are_its_consequence() -> None:
    link = Finding("slow_collective", "warning", "rank 1's path is slow", ranks=[1])
    transfer = Finding("comm_bound", "warning", "transfer", metrics={"cause": "transfer"})
    link_findings([transfer, link], link_rules())
    assert transfer.caused_by == link.id and link.explains == [transfer.id]
    # a slow group with no rank named is not a cause to point at
    alone = Finding("comm_bound", "warning", "transfer", metrics={"cause": "transfer"})
    link_findings([alone, Finding("slow_collective", "warning", "pg slow")], link_rules())
    assert alone.caused_by == ""


def test_bubble_mostly_explained_by_imbalance_is_its_consequence() -> None:
    imb, explained = imbalance(1), bubble(excess=30, imbalance_pts=20)
    link_findings([explained, imb], link_rules())
    assert explained.caused_by == imb.id
    imb2, unexplained = imbalance(1), bubble(excess=30, imbalance_pts=5)
    link_findings([unexplained, imb2], link_rules())
    assert unexplained.caused_by == ""


def test_straggler_on_the_bound_stage_is_the_imbalance_itself() -> None:
    """pipeline-imbalance once gave four findings for one cause: one root, the stage named, remains."""
    imb, st, cb, bub = imbalance(1), straggler(1), comm_bound_waiting([1]), bubble(30, 25)
    out = link_findings([bub, imb, st, cb], link_rules())
    assert st not in out and [f.kind for f in out] == ["pipeline_bubble", "pipeline_imbalance", "comm_bound"]
    assert any("also reported as straggler" in e for e in imb.evidence)
    assert cb.caused_by == imb.id and bub.caused_by == imb.id  # the waiting moved to the absorbing finding
    assert sorted(imb.explains) == sorted([bub.id, cb.id])
    assert [node.finding.kind for node in finding_tree(out)] == ["pipeline_imbalance"]


def test_contention_explains_apparent_stragglers_but_not_a_strong_one() -> None:
    hc, weak, cb = contention([0, 1, 2, 3]), straggler(1, ratio=1.35), comm_bound_waiting([1])
    link_findings([weak, cb, hc], link_rules())
    assert weak.caused_by == hc.id and cb.caused_by == hc.id  # lifted to the root
    # the apparent straggler and the waiting for it are artifacts of the shared host: notes, no rank blamed
    assert weak.severity == cb.severity == hc.severity == "info" and weak.metrics["artifact"]
    hc3, bub = contention([0, 1, 2, 3]), bubble(35, 3)
    link_findings([bub, hc3], link_rules())
    assert bub.severity == "warning" and hc3.severity == "warning"  # a cause is as severe as what it explains
    hc2, strong = contention([0, 1, 2, 3]), straggler(2, ratio=1.73)
    link_findings([strong, hc2], link_rules())
    assert strong.caused_by == "" and hc2.explains == [] and hc2.severity == "info"
    assert strong.metrics["host_contention"] == hc2.id and "host contention noted beside it" in strong.evidence[0]


def test_contention_explains_a_bubble_no_imbalance_explains() -> None:
    hc, bub = contention([0, 1, 2, 3]), bubble(35, 3)
    link_findings([bub, hc], link_rules())
    assert bub.caused_by == hc.id


def test_failures_are_never_linked_by_these_rules() -> None:
    crash = Finding("crash", "critical", "rank 2 raised", ranks=[2])
    hc = contention([0, 1, 2, 3])
    link_findings([crash, hc], link_rules())
    assert crash.caused_by == "" and hc.explains == []


def test_a_new_analyzer_adds_its_own_rule() -> None:
    a = Finding("slow_collective", "warning", "slow group", ranks=[0])
    b = Finding("comm_bound", "warning", "transfer", metrics={"cause": "transfer"})

    def slow_group_makes_transfer_bound(findings: list[Finding]) -> list[Link]:
        return [Link(a, b)] if a in findings and b in findings else []

    link_findings([a, b], [slow_group_makes_transfer_bound])
    assert b.caused_by == a.id and a.explains == [b.id]


def test_the_tree_survives_json_and_the_text_report_indents_consequences() -> None:
    st, cb = straggler(2), comm_bound_waiting([2])
    saved = Analysis(findings=link_findings([st, cb], link_rules())).to_dict()
    loaded = Analysis.from_dict(saved).findings
    tree = finding_tree(loaded)
    assert len(tree) == 1 and tree[0].finding.kind == "straggler" and tree[0].children[0].finding.kind == "comm_bound"
    text = render_text(Analysis(findings=loaded), width=200)
    assert "Findings: 1 problem, 1 effect" in text
    assert text.index("straggler") < text.index("-> WARNING comm_bound")
