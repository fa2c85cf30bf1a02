"""Time breakdown: interval arithmetic, the GPU and CPU (gloo) timelines, and the identity
compute + exposed comm + exposed memcpy + idle = step time on real traces."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from scope.ingest import ingest
from scope.rankpass import intervals as iv
from scope.rankpass import run as rankpass_run
from scope.rankpass.timeline import breakdown_rows, cpu_sets, gpu_sets
from tests.conftest import shared_data
from tests.helpers import context

US = 1000  # ns


def _brute(spans: list[tuple[int, int]], horizon: int) -> np.ndarray:
    covered = np.zeros(horizon, dtype=bool)
    for s, e in spans:
        covered[s:e] = True
    return covered


def _as_list(spans: iv.Spans) -> list[tuple[int, int]]:
    return list(zip(spans[0].tolist(), spans[1].tolist(), strict=True))


def test_interval_algebra_matches_brute_force() -> None:
    rng = np.random.default_rng(7)
    for _ in range(200):
        a_s = rng.integers(0, 90, 6)
        a = iv.union(a_s, a_s + rng.integers(0, 15, 6))
        b_s = rng.integers(0, 90, 5)
        b = iv.union(b_s, b_s + rng.integers(0, 15, 5))
        ca, cb = _brute(_as_list(a), 120), _brute(_as_list(b), 120)
        assert iv.total(iv.intersect(a, b)) == (ca & cb).sum()
        assert iv.total(iv.subtract(a, b)) == (ca & ~cb).sum()
        assert iv.total(iv.join(a, b)) == (ca | cb).sum()
        lo, hi = np.array([0, 10, 50]), np.array([120, 40, 55])
        expected = [ca[lo_:hi_].sum() for lo_, hi_ in zip(lo, hi, strict=True)]
        assert iv.lengths_in_windows(a, lo, hi).tolist() == expected
        assert iv.length_in(a, 10, 40) == expected[1]
        # disjoint, sorted, non-empty
        assert (a[1] > a[0]).all() and (a[0][1:] > a[1][:-1]).all()


def _events(rows: list[tuple]) -> pd.DataFrame:
    cols = ["name", "cat", "kind", "ts_ns", "dur_ns", "thread", "coll_op"]
    df = pd.DataFrame(rows, columns=cols)
    df["ts_ns"] *= US
    df["dur_ns"] *= US
    return df


WINDOW = pd.DataFrame({"step": [1], "start_ns": [0], "end_ns": [100 * US]})


def test_gpu_breakdown_by_hand() -> None:
    ev = _events(
        [
            ("gemm", "kernel", "compute", 0, 40, -1, None),
            ("gemm", "kernel", "compute", 50, 10, -1, None),
            ("ncclDevKernel_AllReduce", "kernel", "comm", 30, 25, -1, "all_reduce"),
            ("Memcpy HtoD", "gpu_memcpy", "memcpy", 58, 12, -1, None),
            ("Memset", "gpu_memset", "memset", 80, 5, -1, None),
            ("aten::mm", "cpu_op", "cpu_op", 0, 100, 5, None),  # CPU side: not part of a GPU timeline
        ]
    )
    waits = iv.union(np.array([30 * US]), np.array([45 * US]))  # the all-reduce waited until t=45
    row = breakdown_rows(0, gpu_sets(ev), waits, WINDOW).iloc[0]
    assert row["compute_us"] == 50
    assert row["exposed_comm_us"] == 10  # [40, 50): comm not under compute
    assert row["exposed_comm_wait_us"] == 5 and row["exposed_comm_transfer_us"] == 5
    assert row["overlapped_comm_us"] == 15
    assert row["memcpy_us"] == 15  # [60, 70) and [80, 85)
    assert row["idle_us"] == 25
    assert row["timeline"] == "gpu"


def test_cpu_breakdown_by_hand() -> None:
    """Training thread 1: compute, a comm hook that idles 22 us before launching the all-reduce,
    a gloo all-reduce in flight on a worker thread while the thread computes and then blocks."""
    ev = _events(
        [
            ("ProfilerStep#1", "user_annotation", "step", 0, 100, 1, None),
            ("aten::mm", "cpu_op", "cpu_op", 0, 30, 1, None),
            ("autograd::engine::evaluate_function: AccumulateGrad", "cpu_op", "cpu_op", 30, 30, 1, None),
            ("aten::copy_", "cpu_op", "cpu_op", 30, 5, 1, None),
            ("c10d::allreduce_", "cpu_op", "cpu_op", 55, 3, 1, "all_reduce"),
            ("gloo:all_reduce", "user_annotation", "comm", 58, 32, -1, "all_reduce"),
            ("aten::add_", "cpu_op", "cpu_op", 70, 10, 1, None),
        ]
    )
    waits = iv.union(np.array([58 * US]), np.array([75 * US]))
    row = breakdown_rows(0, cpu_sets(ev), waits, WINDOW).iloc[0]
    assert row["compute_us"] == 45  # mm 30 + copy 5 + add 10
    assert row["comm_launch_us"] == 22  # [35, 55) and [58, 60) inside the hook's op
    assert row["exposed_comm_us"] == 45  # launch 22 + c10d op 3 + blocked [60,70) and [80,90)
    assert row["exposed_comm_wait_us"] == 10  # blocked [60, 70) inside the wait interval
    assert row["exposed_comm_transfer_us"] == 35
    assert row["overlapped_comm_us"] == 10  # gloo in flight under aten::add_
    assert row["idle_us"] == 10 and row["memcpy_us"] == 0
    assert row["timeline"] == "cpu"


IDENTITY = ["compute_us", "exposed_comm_us", "memcpy_us", "idle_us"]


def assert_identity(bd: pd.DataFrame) -> None:
    assert not bd.empty
    total = bd[IDENTITY].sum(axis=1)
    assert np.allclose(total, bd["step_us"], atol=1e-6)
    assert np.allclose(bd["exposed_comm_wait_us"] + bd["exposed_comm_transfer_us"], bd["exposed_comm_us"])
    for col in [*IDENTITY, "exposed_comm_wait_us", "exposed_comm_transfer_us", "overlapped_comm_us"]:
        assert (bd[col] >= -1e-6).all(), col


@pytest.mark.shared_data
def test_identity_and_values_on_real_gpu_traces(tmp_path: Path) -> None:
    store = ingest(shared_data("hta", "trace_filter"), tmp_path / "store").store
    bd = context(tmp_path, store).table("breakdown")
    assert_identity(bd)
    assert set(bd["rank"]) == {0, 1} and set(bd["step"]) == {551, 552}
    assert (bd["timeline"] == "gpu").all()
    steps = store.steps().set_index(["rank", "step"])["step_us"]
    assert np.allclose(bd.set_index(["rank", "step"])["step_us"], steps.loc[bd.set_index(["rank", "step"]).index])
    # Both ranks run NCCL SendRecv that partly waits for the other rank.
    assert (bd["compute_us"] > 50_000).all() and (bd["exposed_comm_us"] > 50_000).all()
    assert bd["exposed_comm_wait_us"].sum() > 0


@pytest.mark.shared_data
def test_identity_on_a_single_rank_trace_without_comm(tmp_path: Path) -> None:
    store = ingest(shared_data("hta", "ns_resolution_trace"), tmp_path / "store").store
    bd = context(tmp_path, store).table("breakdown")
    assert_identity(bd)
    assert (bd["exposed_comm_wait_us"] == 0).all()  # one rank: nobody to wait for


@pytest.mark.shared_data
def test_worker_processes_give_the_same_breakdown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = ingest(shared_data("hta", "trace_filter"), tmp_path / "store").store
    serial = context(tmp_path, store).table("breakdown")
    monkeypatch.setattr(rankpass_run, "PARALLEL_MIN_EVENTS", 0)  # as if the run were big
    parallel = context(tmp_path, store, workers=2).table("breakdown")
    pd.testing.assert_frame_equal(serial, parallel)


def _flops_trace(path: Path) -> Path:
    """A minimal Kineto trace: one 1 ms step with 3 GFLOP in two operators (with_flops=True args)."""
    import json

    events = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 1000, "dur": 1000},
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "aten::mm",
            "pid": 1,
            "tid": 1,
            "ts": 1100,
            "dur": 500,
            "args": {"flops": 2e9},
        },
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "aten::addmm",
            "pid": 1,
            "tid": 1,
            "ts": 1700,
            "dur": 200,
            "args": {"flops": 1e9},
        },
    ]
    trace = {
        "schemaVersion": 1,
        "distributedInfo": {"rank": 0, "world_size": 1, "backend": "gloo"},
        "traceEvents": events,
    }
    path.mkdir()
    (path / "rank0.pt.trace.json").write_text(json.dumps(trace))
    return path


def test_mfu_from_trace_flops_and_from_model_flops(tmp_path: Path) -> None:
    import scope.analyzers.mfu as mfu

    store = ingest(_flops_trace(tmp_path / "t"), tmp_path / "store").store
    ctx = context(tmp_path, store, peak_tflops=10.0)
    row = mfu.analyze(ctx).tables["mfu"].iloc[0]
    assert row["flops"] == 3e9 and row["flops_source"] == "trace"
    assert row["achieved_tflops"] == pytest.approx(3.0) and row["mfu_pct"] == pytest.approx(30.0)
    ctx = context(tmp_path, store, peak_tflops=10.0, model_flops_per_step=5e9)
    row = mfu.analyze(ctx).tables["mfu"].iloc[0]
    assert row["flops_source"] == "model" and row["mfu_pct"] == pytest.approx(50.0)
    no_peak = mfu.analyze(context(tmp_path, store)).tables["mfu"].iloc[0]
    assert np.isnan(no_peak["mfu_pct"]) and no_peak["achieved_tflops"] == pytest.approx(3.0)
