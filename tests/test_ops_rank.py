"""analyzers/ops.py's per-rank products on arrays: kernels counted by the operator that launched them
(the innermost one around the launch, found in a vectorized sweep), operators and runtime calls by
name, only inside profiled steps; the edge cases of the array path (an empty rank, a rank without GPU
kernels, a kernel no traced call launched, events outside steps) on timelines whose answer is known;
and rank_job (read, then rank_products) on a real GPU trace."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from scope.analyzers.ops import OPS_EVENT_COLUMNS, innermost, rank_job, rank_products

from scope.ingest import ingest
from tests.conftest import shared_data

COUNT_COLUMNS = ["kind", "name", "parent", "calls", "ns"]
CATS = {"cpu_op": "cpu_op", "annotation": "user_annotation", "runtime": "cuda_runtime", "step": "cpu_op"}
CATS |= {k: "kernel" for k in ("compute", "comm", "memcpy", "memset")}


def events(rows: list[tuple[str, str, int, int, int, int, int]]) -> pd.DataFrame:
    """(kind, name, ts, dur, thread, correlation, step) rows as the store gives them: text as categoricals."""
    kind, name, ts, dur, thread, corr, step = zip(*rows, strict=True) if rows else ([],) * 7
    table = pa.table(
        {
            "kind": pa.array(kind, pa.string()).dictionary_encode(),
            "name": pa.array(name, pa.string()).dictionary_encode(),
            "cat": pa.array([CATS[k] for k in kind], pa.string()).dictionary_encode(),
            "ts_ns": pa.array(ts, pa.int64()),
            "dur_ns": pa.array(dur, pa.int64()),
            "thread": pa.array(thread, pa.int64()),
            "correlation": pa.array(corr, pa.int64()),
            "step": pa.array(step, pa.int32()),
        }
    )
    return table.to_pandas()


def windows(*steps: tuple[int, int, int]) -> pd.DataFrame:
    return pd.DataFrame(steps, columns=["step", "start_ns", "end_ns"]).assign(rank=0)


def counts(rows: list[tuple[str, str, str, int, int]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=COUNT_COLUMNS)


def test_innermost_is_the_last_started_op_that_has_not_ended() -> None:
    """The vectorized sweep finds, for each point, what a stack over the ops finds: the last op (by
    start, longest first) that starts at or before the point and ends at or after it, even where ops
    overlap without nesting or tie."""
    rng = np.random.default_rng(7)
    for n in (0, 1, 2, 5, 40, 300):
        start = rng.integers(0, 200, n)
        dur = rng.integers(0, 60, n)
        order = np.lexsort((-dur, start))
        start, end = start[order], (start + dur)[order]
        points = rng.integers(-5, 270, 200)
        brute = [max((i for i in range(n) if start[i] <= t <= end[i]), default=-1) for t in points]
        assert innermost(start, end, points).tolist() == brute


def test_kernels_are_counted_by_the_operator_that_launched_them() -> None:
    ev = events(
        [
            ("step", "ProfilerStep#1", 0, 1000, 1, 0, 1),
            ("cpu_op", "aten::linear", 0, 100, 1, 0, 1),
            ("cpu_op", "aten::mm", 10, 40, 1, 0, 1),  # inside aten::linear
            ("runtime", "cudaLaunchKernel", 20, 5, 1, 5, 1),  # inside aten::mm
            ("runtime", "cudaLaunchKernel", 60, 5, 1, 6, 1),  # inside aten::linear only
            ("runtime", "cudaLaunchKernel", 200, 5, 1, 8, 1),  # in no operator
            ("runtime", "cudaLaunchKernel", 300, 5, 2, 9, 1),  # on a thread with no operators
            ("compute", "gemm", 30, 50, 7, 5, 1),
            ("compute", "gemm", 400, 50, 7, 5, 1),  # the same launch's correlation: the same parent
            ("compute", "add", 90, 10, 7, 6, 1),
            ("compute", "add", 210, 10, 7, 8, 1),
            ("memcpy", "Memcpy HtoD", 310, 10, 7, 9, 1),
            ("compute", "gemm", 500, 10, 7, 77, 1),  # no traced launch
            ("compute", "gemm", 900, 10, 7, 5, -1),  # outside the profiled steps
            ("cpu_op", "aten::mm", 2000, 10, 1, 0, -1),
        ]
    )
    got, host = rank_products(ev, windows((1, 0, 1000)), 0)
    # operators and runtime calls first, then kernels, each block sorted by kind, name and parent
    expected = counts(
        [
            ("cpu_op", "aten::linear", "", 1, 100),
            ("cpu_op", "aten::mm", "", 1, 40),
            ("runtime", "cudaLaunchKernel", "", 4, 20),
            ("compute", "add", "", 1, 10),
            ("compute", "add", "aten::linear", 1, 10),
            ("compute", "gemm", "", 1, 10),
            ("compute", "gemm", "aten::mm", 2, 100),
            ("memcpy", "Memcpy HtoD", "", 1, 10),
        ]
    )
    pd.testing.assert_frame_equal(got, expected.astype({c: got[c].dtype for c in COUNT_COLUMNS}))
    assert got.dtypes["calls"] == np.int64 and got.dtypes["ns"] == np.int64
    # the training thread's step: its 3 launches (thread 2's is not its own) claim 15 ns before the
    # operators around them, which keep the other 90 ns; the rest is in no event
    by_bucket = host.set_index("bucket")["us"] * 1e3
    assert by_bucket.round().to_dict() == {"launch": 15, "cpu_ops": 90, "unexplained": 895}
    assert set(host["timeline"]) == {"host"} and (host["rank"] == 0).all()


def test_a_rank_without_gpu_kernels_counts_names_only_inside_steps() -> None:
    ev = events(
        [
            ("step", "ProfilerStep#1", 0, 1000, 1, 0, 1),
            ("cpu_op", "aten::mm", 10, 40, 1, 0, 1),
            ("cpu_op", "aten::mm", 60, 20, 1, 0, 1),
            ("annotation", "forward", 0, 100, 1, 0, 1),
            ("comm", "gloo:all_reduce", 100, 50, 3, 0, 1),  # gloo's collective is no GPU timeline
            ("cpu_op", "aten::add", 2000, 10, 1, 0, -1),
        ]
    )
    got, host = rank_products(ev, windows((1, 0, 1000)), 3)
    expected = counts(
        [
            ("annotation", "forward", "", 1, 100),
            ("comm", "gloo:all_reduce", "", 1, 50),
            ("cpu_op", "aten::mm", "", 2, 60),
        ]
    )
    pd.testing.assert_frame_equal(got, expected.astype({c: got[c].dtype for c in COUNT_COLUMNS}))
    assert host.empty


@pytest.mark.parametrize(
    "rows",
    [[], [("cpu_op", "aten::mm", 10, 40, 1, 0, -1), ("compute", "gemm", 30, 5, 7, 3, -1)]],
    ids=["no events", "no event inside a step"],
)
def test_a_rank_with_nothing_in_its_steps_has_empty_tables(
    rows: list[tuple[str, str, int, int, int, int, int]],
) -> None:
    got, host = rank_products(events(rows), windows(), 0)
    assert got.empty and list(got.columns) == COUNT_COLUMNS and host.empty
    assert got.dtypes["calls"] == np.int64 and got.dtypes["ns"] == np.int64


def test_the_events_are_left_as_they_are_and_extra_columns_ignored() -> None:
    rows = [
        ("cpu_op", "aten::mm", 10, 40, 1, 0, 1),
        ("runtime", "cudaLaunchKernel", 20, 5, 1, 5, 1),
        ("compute", "gemm", 30, 50, 7, 5, 1),
    ]
    plain = rank_products(events(rows), windows((1, 0, 100)), 0)
    ev = events(rows).assign(stream=7, coll_op=None)
    before = ev.copy()
    wide = rank_products(ev, windows((1, 0, 100)), 0)
    pd.testing.assert_frame_equal(ev, before)
    for a, b in zip(plain, wide, strict=True):
        pd.testing.assert_frame_equal(a, b)


@pytest.mark.shared_data
def test_rank_job_is_rank_products_of_the_read_events(tmp_path: Path) -> None:
    """On a real GPU trace (HTA's critical-path sample): kernels found their launching operators, the host
    budget fills its steps, and rank_job gives what rank_products gives on the events it reads."""
    trace = shared_data("hta", "critical_path")
    store = ingest(trace, tmp_path / "store").store
    rank = store.ranks[0]
    ev = store.read_events(rank, columns=OPS_EVENT_COLUMNS).to_pandas()
    got, host = rank_products(ev, store.read_steps(rank), rank)
    job = rank_job((str(store.root), rank))
    assert job[0] == rank
    pd.testing.assert_frame_equal(job[1], got)
    pd.testing.assert_frame_equal(job[2], host)
    kernels = got[got["kind"].isin(["compute", "memcpy", "memset"])]
    assert (kernels["parent"] != "").any()
    sums = host.groupby("step").agg(us=("us", "sum"), step_us=("step_us", "first"))
    assert ((sums["us"] - sums["step_us"]).abs() <= 1e-6 * sums["step_us"]).all()
