"""One rank's tables from one read of its events: the breakdown (_timeline.py), the step time budget
(_budget.py), the budget's evidence (_budget_evidence.py), the communication streams (comm_streams.py),
the FLOPs per step the trace records (mfu.py), the operators' counts and the host budget (ops.py) and
whether the rank may run a pipeline schedule (pipeline/rank.py). Apart from all of them, which it
joins: the budget reads the timeline's sets, so the timeline cannot also call the budget.

Each of those used to read every rank's events itself: six reads of each rank (at 16,384 ranks, 100k
Parquet reads and pandas conversions of ~27k events each). One read serves them all, in the worker
that holds the rank."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import pyarrow as pa

from scope.rankpass import intervals as iv
from scope.rankpass.batches import as_batch
from scope.rankpass.budget import BUDGET_EVENT_COLUMNS, Host, rank_budget, waits_of
from scope.rankpass.budget_evidence import evidence_columns
from scope.rankpass.op_counts import OPS_EVENT_COLUMNS, fold_rows, rank_products
from scope.rankpass.streams import stream_rows
from scope.rankpass.timeline import EVENT_COLUMNS, RankJob, breakdown_rows, cpu_sets, gpu_sets, has_gpu, step_windows
from scope.store import Store

# What comm_streams and mfu read beyond the breakdown and the budget.
STREAM_COLUMNS = ["kind", "ts_ns", "dur_ns", "stream", "coll_op", "device"]
FLOPS_COLUMNS = ["step", "flops"]
# What stream_rows reads of the communication kernels.
STREAM_ROW_COLUMNS = ["ts_ns", "dur_ns", "stream", "coll_op"]
RANK_COLUMNS = list(
    dict.fromkeys(EVENT_COLUMNS + BUDGET_EVENT_COLUMNS + STREAM_COLUMNS + FLOPS_COLUMNS + OPS_EVENT_COLUMNS)
)


@dataclass
class RankTables:
    """A rank's part of each per-rank table; small (rows per step or per stream, never per event). The
    tables travel as Arrow batches (_batches.as_batch: None for no rows), which the driver joins."""

    rank: int
    breakdown: pa.RecordBatch | None
    budget: pa.RecordBatch | None
    evidence: pa.RecordBatch | None
    streams: pa.RecordBatch | None  # comm_streams' rows
    flops: pa.RecordBatch | None  # rank, step, flops: the FLOPs the trace records per step (mfu)
    op_counts: pa.RecordBatch | None  # ops: calls and ns per (kind, name, parent) in profiled steps (fold_rows)
    host_budget: pa.RecordBatch | None  # ops: the training thread's budget per step (a GPU rank)
    rank_steps: int  # its profiled steps (ops counts a rank without any not at all)
    may_pipeline: bool  # any micro-batch action or point-to-point op (the pipeline analyzer reads it again)


def rank_tables(job: RankJob) -> RankTables:
    """The rank's tables, from one read of its events."""
    store = Store(job.store_root, {})
    events = store.read_events(job.rank, columns=RANK_COLUMNS).to_pandas()
    steps = store.read_steps(job.rank)
    on_gpu = has_gpu(events)
    sets = gpu_sets(events) if on_gpu else cpu_sets(events)
    win = step_windows(job.store_root, job.rank, sets, steps)
    waits = iv.union(job.wait_starts, job.wait_ends)
    breakdown = breakdown_rows(job.rank, sets, waits, win)
    host = Host.of(events)
    budget = rank_budget(job.rank, events, on_gpu, waits_of(job), win, host)
    evidence = evidence_columns(job.rank, events, win, host)
    # imported here: the pipeline package imports _shared, which imports this module
    from scope.analyzers.pipeline.rank import may_pipeline_names

    rank_steps = int(steps["step"].nunique()) if not steps.empty else 0
    counts, host_budget = rank_products(events, steps, job.rank, host) if rank_steps else (_NONE, _NONE)
    counts = fold_rows(counts, rank_steps)
    return RankTables(
        job.rank,
        as_batch(breakdown),
        as_batch(budget),
        as_batch(evidence),
        as_batch(_streams(job.rank, events)),
        as_batch(_flops(job.rank, events)),
        as_batch(counts),
        as_batch(host_budget),
        rank_steps,
        may_pipeline_names(events["name"], events["coll_op"]),
    )


_NONE = pd.DataFrame()


def _streams(rank: int, events: pd.DataFrame) -> pd.DataFrame:
    """comm_streams' rows: the GPU communication kernels per stream, against the GPU compute kernels."""
    on_device = (events["device"] >= 0).to_numpy()
    comm = on_device & (events["kind"] == "comm").to_numpy()
    if not comm.any():
        return pd.DataFrame()
    compute = on_device & (events["kind"] == "compute").to_numpy()
    return stream_rows(rank, events.loc[comm, STREAM_ROW_COLUMNS], events.loc[compute, ["ts_ns", "dur_ns"]])


def _flops(rank: int, events: pd.DataFrame) -> pd.DataFrame:
    """FLOPs per profiled step recorded by the trace (operators profiled with with_flops=True)."""
    counted_rows = ((events["flops"] > 0) & (events["step"] >= 0)).to_numpy()
    if not counted_rows.any():
        return pd.DataFrame()
    counted = events.loc[counted_rows, ["step", "flops"]]
    per_step = counted.groupby("step")["flops"].sum()
    return per_step.rename("flops").reset_index().assign(rank=rank)
