"""The step time budget: every microsecond of each step on each rank in exactly one bucket.

Checked on every real trace of ../shared/data and on the sample runs (sum within 1% of the step per
rank and step), on the real dataloader pair (num_workers=0 loses ~40% of its step to input; 4 workers
do not), and on synthetic timelines whose answer is known to the nanosecond.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from scope.ingest import ingest
from scope.rankpass.budget import BUCKETS, Waits, budget_rows, cpu_claims, gpu_claims
from tests.conftest import ROOT, SHARED_DATA, shared_data
from tests.helpers import context

TRACE_DIRS = ("hta", "tracelens", "kineto_dataloader")


def _shared_traces() -> list[Path]:
    files: list[Path] = []
    for d in TRACE_DIRS:
        root = SHARED_DATA / d
        if root.exists():
            files += sorted(p for p in root.rglob("*") if p.name.endswith((".json", ".json.gz")) and p.is_file())
    # a store someone wrote beside the traces (scope analyze without --store) is not a trace
    return [f for f in files if "scope_store" not in f.relative_to(SHARED_DATA).parts]


def _sample_runs() -> list[Path]:
    return sorted(p for p in (ROOT / "sample_traces").iterdir() if (p / "run.json").exists())


def budget_of(path: Path, store: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(budget, breakdown) of a trace or run directory, without running the other analyzers."""
    report = ingest(path, store)
    ctx = context(path, report.store)
    return ctx.table("budget"), ctx.table("breakdown")


def assert_sums_to_steps(table: pd.DataFrame, breakdown: pd.DataFrame) -> None:
    assert set(table["bucket"]) <= set(BUCKETS)
    assert (table["us"] >= 0).all()
    sums = table.groupby(["rank", "step"]).agg(us=("us", "sum"), step_us=("step_us", "first"))
    off = (sums["us"] - sums["step_us"]).abs() / sums["step_us"].clip(lower=1e-9)
    assert (off <= 0.01).all(), sums[off > 0.01]
    # one budget per step the breakdown knows (a step of zero length has no bucket to fill)
    steps = breakdown[breakdown["step_us"] > 0].set_index(["rank", "step"]).index
    assert set(steps) == set(sums.index)


@pytest.mark.shared_data
@pytest.mark.parametrize(
    "trace", _shared_traces() or [None], ids=lambda p: str(p.relative_to(SHARED_DATA)) if p else "none"
)
def test_budget_sums_to_the_step_on_every_shared_trace(trace: Path | None, tmp_path: Path) -> None:
    if trace is None:
        shared_data("hta")
    assert trace is not None
    table, breakdown = budget_of(trace, tmp_path / "store")
    assert not table.empty
    assert_sums_to_steps(table, breakdown)


@pytest.mark.parametrize("run", _sample_runs(), ids=lambda p: p.name)
def test_budget_sums_to_the_step_on_every_sample_run(run: Path, tmp_path: Path) -> None:
    table, breakdown = budget_of(run, tmp_path / "store")
    assert not table.empty
    assert_sums_to_steps(table, breakdown)
    assert set(table["timeline"]) == {"cpu"}  # gloo runs: read from the training thread


def _shares(table: pd.DataFrame) -> pd.Series:
    steps = table.drop_duplicates(["rank", "step"])["step_us"].sum()
    return table.groupby("bucket")["us"].sum() / steps


@pytest.mark.shared_data
def test_dataloader_pair_input_share(tmp_path: Path) -> None:
    slow, _ = budget_of(shared_data("kineto_dataloader", "num_workers_0"), tmp_path / "a")
    fast, _ = budget_of(shared_data("kineto_dataloader", "num_workers_4"), tmp_path / "b")
    # num_workers=0: the GPU idles a third of every step waiting for the batch (DataLoader 40% of the step)
    per_step = slow[slow["bucket"] == "input"].groupby("step")["share"].sum()
    assert len(per_step) == 6 and (per_step > 0.30).all(), per_step
    assert _shares(slow)["compute"] > 0.45
    # 4 workers: input is gone from the typical step (the first profiled step still waits for a batch)
    fast_steps = fast[fast["bucket"] == "input"].groupby("step")["share"].sum().reindex(range(5, 11), fill_value=0)
    assert fast_steps.median() < 0.06, fast_steps
    assert _shares(fast)["compute"] > 0.6


# --- synthetic timelines: the answer known to the nanosecond -------------------------------------------

LOADER = "enumerate(DataLoader)#_{}DataLoaderIter.__next__"
WINDOW = pd.DataFrame({"step": [1], "start_ns": [0], "end_ns": [1000]})


def _ev(rows: list[tuple[str, str, str, int, int, int, int]]) -> pd.DataFrame:
    cols = ["name", "cat", "kind", "ts_ns", "dur_ns", "thread", "correlation"]
    df = pd.DataFrame(rows, columns=cols)
    df["coll_op"] = ""
    return df


def _by_bucket(table: pd.DataFrame) -> dict[str, float]:
    return {str(k): float(v) for k, v in table.groupby("bucket")["us"].sum().items()}


def test_gpu_precedence_by_hand() -> None:
    ev = _ev(
        [
            ("ProfilerStep#1", "cpu_op", "step", 0, 1000, 1, -1),
            (LOADER.format("Single"), "user_annotation", "annotation", 0, 200, 1, -1),
            ("cudaMemcpyAsync", "cuda_runtime", "runtime", 210, 10, 1, 7),
            ("Memcpy HtoD (Pageable -> Device)", "gpu_memcpy", "memcpy", 220, 30, -1, 7),
            ("aten::conv2d", "cpu_op", "cpu_op", 260, 40, 1, -1),
            ("cudaLaunchKernel", "cuda_runtime", "runtime", 290, 5, 1, 8),
            ("conv_kernel", "kernel", "compute", 300, 300, -1, 8),
            ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "kernel", "comm", 500, 300, -1, 9),
            ("aten::_local_scalar_dense", "cpu_op", "cpu_op", 650, 170, 1, -1),
            ("cudaLaunchKernel", "cuda_runtime", "runtime", 900, 5, 1, 10),
            ("tail_kernel", "kernel", "compute", 950, 50, -1, 10),
        ]
    )
    waits = Waits({3: (np.array([600]), np.array([700]))})
    table = budget_rows(0, "gpu", gpu_claims(ev, waits), WINDOW)
    assert _by_bucket(table) == pytest.approx(
        {
            "input": 0.3,  # idle 0..220 and 250..300 (to the first kernel launched after it) + the copy 220..250
            "compute": 0.25,  # 300..500 alone, 950..1000
            "comm_overlapped": 0.1,  # 500..600 under conv_kernel
            "comm_wait": 0.1,  # 600..700 waiting for rank 3
            "comm_transfer": 0.1,  # 700..800
            # GPU idle in and after .item() (it drained the queue) to the next kernel (800..950), but for the
            # launch call on the host (900..905): host-bound
            "sync": 0.145,
            "host_bound": 0.005,
        }
    )
    wait = table[table["bucket"] == "comm_wait"].iloc[0]
    assert (wait["family"], wait["peer"]) == ("nccl", 3)
    assert table["us"].sum() == pytest.approx(1.0)


def test_cpu_timeline_sums() -> None:
    ev = _ev(
        [
            ("ProfilerStep#1", "cpu_op", "step", 0, 1000, 1, -1),
            (LOADER.format("MultiProcessing"), "user_annotation", "annotation", 0, 100, 1, -1),
            ("aten::mm", "cpu_op", "cpu_op", 100, 400, 1, -1),
            ("Optimizer.step#SGD.step", "user_annotation", "annotation", 600, 100, 1, -1),
            ("aten::add_", "cpu_op", "cpu_op", 610, 50, 1, -1),
        ]
    )
    got = _by_bucket(budget_rows(0, "cpu", cpu_claims(ev, Waits()), WINDOW))
    assert got == pytest.approx({"input": 0.1, "compute": 0.4, "optimizer": 0.1, "unexplained": 0.4})


@pytest.mark.slow  # seconds of analysis on real data (the unit tier stays under 120 s)
@pytest.mark.shared_data
def test_dataloader_pair_findings(tmp_path: Path) -> None:
    from scope.analysis import run

    slow = run(shared_data("kineto_dataloader", "num_workers_0"), {"store": tmp_path / "a"})
    (root,) = [f for f in slow.findings if not f.caused_by]
    assert root.kind == "input_bound" and root.ranks == [0]
    assert 0.35 <= root.metrics["dataloader_share"] <= 0.45  # DataLoader __next__ ~40% of the step
    assert root.metrics["dataloader_kind"] == "single" and "num_workers=0" in root.summary
    assert root.metrics["htod_pageable"] > 0 and root.metrics["htod_pinned"] == 0 and "pageable" in root.summary
    assert "num_workers" in root.suggestion and "pin_memory" in root.suggestion
    fast = run(shared_data("kineto_dataloader", "num_workers_4"), {"store": tmp_path / "b"})
    assert fast.findings == []


def test_dashboard_bar_per_rank_adds_to_100() -> None:
    from scope.app.figures_budget import budget_figure, budget_shares

    table = pd.DataFrame(
        {
            "rank": [0, 0, 0, 1, 1],
            "step": [1, 1, 2, 1, 1],
            "bucket": ["compute", "input", "compute", "compute", "comm_wait"],
            "us": [60.0, 40.0, 100.0, 30.0, 70.0],
            "step_us": [100.0, 100.0, 100.0, 100.0, 100.0],
        }
    )
    shares = budget_shares(table)
    assert shares.sum(axis=1).round(6).tolist() == [100.0, 100.0]
    assert shares.loc[0, "input"] == pytest.approx(20.0) and shares.loc[1, "comm_wait"] == pytest.approx(70.0)
    fig = budget_figure(table)
    assert [t.name for t in fig.data] == ["compute", "comm: waiting for a peer", "input pipeline"]
    assert list(fig.data[0].y) == ["rank 0", "rank 1"]


@pytest.mark.shared_data
def test_one_rank_of_eight_cannot_split_wait_from_transfer(tmp_path: Path) -> None:
    """The real MI300X DDP trace holds rank 0 of 8: the time inside its all-reduces is waiting for the
    untraced peers or transfer, which one side cannot tell; nothing may blame the interconnect."""
    from scope.analysis import run

    analysis = run(shared_data("tracelens", "mi300_resnet_ddp_rank0.json.gz"), {"store": tmp_path / "s"})
    table = analysis.table("budget")
    assert table is not None
    comm = table[table["bucket"].isin(["comm_wait", "comm_transfer", "comm_unknown"])]
    assert comm.groupby("bucket")["us"].sum().idxmax() == "comm_unknown"
    assert "comm_wait" not in set(comm["bucket"])
    (cb,) = [f for f in analysis.findings if f.kind == "comm_bound"]
    assert cb.metrics["cause"] == "unknown" and cb.metrics["untraced_ranks"] == [1, 2, 3, 4, 5, 6, 7]
    assert "cannot be told from transfer" in cb.summary and "1 of the group's 8 ranks traced" in cb.summary
    assert "trace ranks 1, 2, 3, 4, 5, 6, 7" in cb.suggestion
    for f in analysis.findings:
        assert "interconnect" not in f.summary + f.suggestion and "transfer 54%" not in " ".join(f.evidence)


def _table(input_us: dict[int, float], steps: int = 4, step_us: float = 100_000.0) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows, ev = [], []
    for rank, us in input_us.items():
        for step in range(steps):
            rows += [
                (rank, step, "gpu", "input", "", -1, us, step_us),
                (rank, step, "gpu", "compute", "", -1, step_us - us, step_us),
            ]
            ev.append((rank, step, 0.9 * us, 1, "multi", 0, 2, 100.0, 50, 10.0, 0, "", 0.0, 0.0, 0.0, ""))
    table = pd.DataFrame(rows, columns=["rank", "step", "timeline", "bucket", "family", "peer", "us", "step_us"])
    table["share"] = table["us"] / table["step_us"]
    from scope.rankpass.budget_evidence import EVIDENCE_COLUMNS

    return table, pd.DataFrame(ev, columns=EVIDENCE_COLUMNS)


def test_a_rank_loading_far_slower_than_its_peers_is_an_input_straggler_that_explains_the_waiting() -> None:
    from scope.analyzers.budget.findings import find
    from scope.analyzers.budget.spec import comm_bound_waits_for_input

    from scope.causality import link_findings
    from scope.finding import Finding

    table, evidence = _table({0: 2_000.0, 1: 2_500.0, 2: 40_000.0, 3: 1_500.0})
    (f,) = find(None, table, evidence)  # type: ignore[arg-type]
    assert f.kind == "straggler" and f.ranks == [2] and f.metrics["straggler_kind"] == "input"
    assert "slow to load its data" in f.summary and "40%" in f.summary
    waiting = {"cause": "waiting", "waiting_for": [2]}
    cb = Finding("comm_bound", "warning", "others wait", ranks=[0, 1, 3], metrics=waiting)
    linked = link_findings([f, cb], [comm_bound_waits_for_input])
    assert [g.caused_by for g in linked] == ["", f.id]
    # every rank slow alike: input_bound on all of them, no straggler
    table, evidence = _table({0: 30_000.0, 1: 31_000.0, 2: 29_000.0, 3: 30_500.0})
    (f,) = find(None, table, evidence)  # type: ignore[arg-type]
    assert f.kind == "input_bound" and f.ranks == [0, 1, 2, 3]
    # within the norm: nothing
    table, evidence = _table({0: 3_000.0, 1: 3_000.0})
    assert find(None, table, evidence) == []  # type: ignore[arg-type]
