"""Operations and kernels of a run: how often each ran and how long, per profiled step of a rank.

Table `op_stats`: one row per (kind, name, parent) over every traced rank's profiled steps, with the
time per step averaged over all rank-steps (an op that runs on half the ranks counts half) and the
largest rank's figure beside it. `parent` is the CPU operator that launched a GPU kernel (the
innermost operator on the launching thread around its `cudaLaunchKernel`, found through the
kernel's correlation id): a kernel renamed by a new library version still has the same parent, which
is how `scope compare` matches it (TraceLens matches ops by call-tree position for the same reason).
CPU operators nest, so their time is inclusive (aten::conv2d holds aten::convolution).

Table `host_budget` (GPU ranks only): the step budget seen from the training thread, in the budget
table's long format (analyzers/budget/analyze.py) with timeline "host". The budget of a GPU rank says what the
GPU did; this says what the host thread did meanwhile: in order of precedence, the scopes of
scope/rankpass/budget.py (input pipeline, checkpoint, sync, optimizer, gc), then CUDA runtime calls
(`launch`: kernel launches; `runtime`: copies, allocations and the rest), then CPU operators' own time
(`cpu_ops`), and `unexplained`, time in no traced event (Python between ops). It is how `scope compare`
says where the time a faster data loader freed went on the host. CPU ranks need none: their budget
is the training thread's already.

Each rank is read once, by one task (rank_job: a read of OPS_EVENT_COLUMNS, then rank_products, which
a pass that reads each rank once for several analyzers calls on its own read): its name-level counts,
its kernels attributed to parents and (a GPU rank) its host budget, on numpy arrays of the events'
name and kind codes (~10 ms for a rank of 27k events, where grouping their text in pandas took ~70).
The counts are folded into per-name totals as ranks finish, so no process holds every event of every
rank, nor a row per rank and name.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from scope.analysis import Context, Result
from scope.rankpass.batches import as_batch
from scope.rankpass.op_counts import COLUMNS, OPS_EVENT_COLUMNS, OpFold, fold_rows, rank_products
from scope.rankpass.op_counts import innermost as innermost  # re-exported: the tests pin it
from scope.store import Store

TABLE = "op_stats"
HOST_TABLE = "host_budget"
# From this many GPU ranks on, their reading runs in worker processes (below, starting them costs more).
PARALLEL_MIN_RANKS = 8
__all__ = [
    "OPS_EVENT_COLUMNS",
    "OpFold",
    "analyze",
    "fold_rows",
    "innermost",
    "op_stats",
    "op_tables",
    "rank_job",
    "rank_products",
]


def analyze(ctx: Context) -> Result:
    if ctx.store is None or not ctx.store.ranks:
        return Result()

    table, host = ctx.table("op_stats"), ctx.table("host_budget")  # folded in the per-rank pass
    tables = {name: df for name, df in ((TABLE, table), (HOST_TABLE, host)) if not df.empty}
    return Result(tables=tables)


def op_stats(store: Store, workers: int | None = None) -> pd.DataFrame:
    return op_tables(store, workers)[0]


def op_tables(
    store: Store, workers: int | None = None, engine: str = "local", scheduler: str | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(op_stats, host_budget). Each rank is read once, by one task (worker processes when there are
    many), and its counts are folded into the totals as it arrives: this process holds one row per
    (kind, name, parent), never one per rank and name (at 16,384 ranks, 3 million rows)."""
    from scope.engine import map_unordered

    steps = _steps_per_rank(store)
    if steps.empty:
        return pd.DataFrame(columns=COLUMNS), pd.DataFrame()
    jobs = [(str(store.root), int(r)) for r in steps.index]
    parallel = len(jobs) >= PARALLEL_MIN_RANKS
    done = map_unordered(rank_job, jobs, engine=engine, workers=workers if parallel else 1, scheduler=scheduler)
    fold = OpFold()
    for rank, counts, budget in done:  # OpFold takes batches, as the per-rank pass makes them (scope/rankpass)
        fold.add(as_batch(fold_rows(counts, int(steps[rank]))), as_batch(budget), int(steps[rank]))
    return fold.tables()


def rank_job(job: tuple[str, int]) -> tuple[int, pd.DataFrame, pd.DataFrame]:
    """A worker's task (picklable in and out): one rank of the store at job[0], read once: its calls and
    time per (kind, name, parent) inside profiled steps, and (a GPU rank) its host budget."""
    root, rank = job
    store = Store(Path(root), {})
    ev = store.read_events(rank, columns=OPS_EVENT_COLUMNS).to_pandas()
    counts, budget = rank_products(ev, store.read_steps(rank), rank)
    return rank, counts, budget


def _steps_per_rank(store: Store) -> pd.Series:
    steps = store.steps()
    if steps.empty:
        return pd.Series(dtype="int64")
    return steps.groupby("rank")["step"].nunique()
