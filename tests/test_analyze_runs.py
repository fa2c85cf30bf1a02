"""Real 4-rank gloo DDP runs of the sample workload with injected faults, analyzed end to end.

One healthy run, a compute straggler, a slow link and a communication-bound job (tests/conftest.py:
ddp_run, shared with other tests; about 30 s each on two cores, five profiled steps each); faults are
strong (factor 4, 100 ms delays) so that the verdicts survive a noisy host.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from scope.cli import main

SCENARIOS = ("healthy", "straggler", "slow_link", "comm_bound")
PERF_KINDS = {"straggler", "comm_bound", "slow_collective"}


@pytest.fixture(scope="session")
def analyzed_runs(ddp_run: Callable[[str], Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """scenario -> the `scope analyze --json` result of a real run (tests/conftest.py: ddp_run)."""
    results = {}
    for name in SCENARIOS:
        traces = ddp_run(name)
        root = tmp_path_factory.mktemp(f"analyzed_{name}")
        out = root / "analysis.json"
        assert main(["analyze", str(traces), "--store", str(root / "store"), "--json", str(out), "-q"]) == 0
        results[name] = json.loads(out.read_text())
    return results


def _perf(report: dict) -> list[dict]:
    return [f for f in report["findings"] if f["kind"] in PERF_KINDS]


def _roots(findings: list[dict]) -> list[str]:
    """Ids of the findings no other finding explains (scope.causality links)."""
    return [f["id"] for f in findings if not f["caused_by"]]


def _why(report: dict) -> str:
    """What a failed assertion should show: the verdicts and the numbers behind them."""
    steps = pd.DataFrame(report.get("comm_bound_steps", []))
    scores = pd.DataFrame(report.get("straggler_scores", []))
    return "\n".join(
        [
            *(f["summary"] for f in _perf(report)),
            steps.drop(columns=["waiting_for"], errors="ignore").round(1).to_string(),
            scores[["rank", "score", "compute_step_ratio", "compute_loss_us", "host_loss_us"]].round(2).to_string(),
        ]
    )


@pytest.mark.multirank
def test_healthy_run_has_no_performance_finding(analyzed_runs: dict[str, dict]) -> None:
    report = analyzed_runs["healthy"]
    assert _perf(report) == [], _why(report)
    # nor a budget finding: every bucket within its norm (notes aside)
    assert [f["kind"] for f in report["findings"] if f["severity"] != "info"] == [], report["findings"]
    scores = pd.DataFrame(report["straggler_scores"])
    assert sorted(scores["rank"]) == [0, 1, 2, 3] and not scores["flagged"].any()


@pytest.mark.multirank
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_breakdown_identity_and_matched_collectives(analyzed_runs: dict[str, dict], scenario: str) -> None:
    report = analyzed_runs[scenario]
    bd = pd.DataFrame(report["breakdown"])
    assert set(bd["rank"]) == {0, 1, 2, 3} and set(bd["step"]) == set(range(2, 7))  # wait 1, warmup 1, 5 active
    assert (bd["timeline"] == "cpu").all()
    parts = bd[["compute_us", "exposed_comm_us", "memcpy_us", "idle_us"]].sum(axis=1)
    assert np.allclose(parts, bd["step_us"], atol=1e-6)
    assert np.allclose(bd["exposed_comm_wait_us"] + bd["exposed_comm_transfer_us"], bd["exposed_comm_us"])
    assert (bd[["compute_us", "exposed_comm_us", "idle_us", "exposed_comm_wait_us"]] >= -1e-6).all().all()
    coll = pd.DataFrame(report["collectives"])
    # per step: the gradient bucket all-reduce(s) and the loss all-reduce, on all four ranks
    assert (coll["op"] == "all_reduce").all() and (coll["ranks"].map(len) == 4).all()
    assert coll["mismatch"].isna().all() and (coll["n_missing"] == 0).all()
    big = coll[coll["bytes"] > 1 << 20]
    assert len(big) >= 3 and (big["busbw_gbps"] > 0).all()
    assert coll["last_arriver"].between(0, 3).all() and (coll["skew_us"] >= 0).all()
    # the step time budget: every step of every rank adds up to its step time, read from the training thread
    budget = pd.DataFrame(report["budget"])
    sums = budget.groupby(["rank", "step"]).agg(us=("us", "sum"), step_us=("step_us", "first"))
    assert ((sums["us"] - sums["step_us"]).abs() <= 0.01 * sums["step_us"]).all()
    assert set(sums.index) == set(zip(bd["rank"], bd["step"], strict=True)) and (budget["timeline"] == "cpu").all()


@pytest.mark.multirank
def test_straggler_is_named(analyzed_runs: dict[str, dict]) -> None:
    perf = _perf(analyzed_runs["straggler"])
    named = [f for f in perf if f["kind"] == "straggler"]
    assert [f["ranks"] for f in named] == [[3]], _why(analyzed_runs["straggler"])
    assert named[0]["metrics"]["straggler_kind"] == "compute"
    assert named[0]["metrics"]["score"] < 0.75 and named[0]["metrics"]["time_lost_us"] > 0
    # the other ranks' exposed communication is waiting for rank 3: a consequence of the straggler, the one root;
    # a comm_bound finding names the ranks that wait, and rank 3 as the one they wait for
    assert all(f["ranks"] == [3] for f in perf if f["kind"] != "comm_bound")
    for f in perf:
        if f["kind"] == "comm_bound":
            assert f["metrics"]["waiting_for"] == [3] and 3 not in f["ranks"], f
    assert _roots(perf) == [named[0]["id"]] and named[0]["caused_by"] == ""
    assert all(f["caused_by"] == named[0]["id"] for f in perf if f["kind"] == "comm_bound")


@pytest.mark.multirank
def test_slow_link_is_attributed_to_its_rank(analyzed_runs: dict[str, dict]) -> None:
    perf = _perf(analyzed_runs["slow_link"])
    slow = [f for f in perf if f["kind"] == "slow_collective"]
    assert [f["ranks"] for f in slow] == [[2]], _why(analyzed_runs["slow_link"])
    assert slow[0]["metrics"]["straggler_kind"] == "communication"
    assert not [f for f in perf if f["kind"] == "straggler"], _why(analyzed_runs["slow_link"])
    assert _roots(perf) == [slow[0]["id"]], _why(analyzed_runs["slow_link"])


@pytest.mark.multirank
def test_comm_bound_run_is_flagged(analyzed_runs: dict[str, dict]) -> None:
    perf = _perf(analyzed_runs["comm_bound"])
    bound = [f for f in perf if f["kind"] == "comm_bound"]
    assert len(bound) == 1, _why(analyzed_runs["comm_bound"])
    assert bound[0]["metrics"]["cause"] == "transfer" and bound[0]["metrics"]["busbw_gbps"] > 0
    assert not [f for f in perf if f["kind"] == "straggler"], _why(analyzed_runs["comm_bound"])
