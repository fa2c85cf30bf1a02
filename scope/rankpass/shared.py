"""What several analyzers need, computed once per `scope analyze` run and kept on the Context.

The breakdown, the straggler and the comm-bound analyzers all start from the same two results: the
collectives matched across ranks (from the compact per-rank collectives table) and the per-rank,
per-step breakdown (one pass over each rank's events, in worker processes when the run is big).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, TypeVar

import numpy as np
import pandas as pd

from scope.rankpass.batches import ArrowBatches
from scope.rankpass.budget import BUDGET_COLUMNS
from scope.rankpass.budget_evidence import EVIDENCE_COLUMNS
from scope.rankpass.match import MATCH_COLUMNS, MATCH_TEXT, Matched, match_collectives
from scope.rankpass.rank_tables import rank_tables
from scope.rankpass.timeline import BREAKDOWN_COLUMNS, RankJob

if TYPE_CHECKING:  # scope.analysis builds these lazily: a runtime import back would be a cycle
    from scope.analysis import Context

T = TypeVar("T")
# Below this many events in all, worker processes cost more than they save.
PARALLEL_MIN_EVENTS = 3_000_000


def cached(ctx: Context, key: str, build: Callable[[], T]) -> T:
    """An analyzer's own intermediate result, computed once per analysis (Context.memo)."""
    return ctx.memo(key, build)


def matched(ctx: Context) -> Matched:
    return ctx.matched


def breakdown(ctx: Context) -> pd.DataFrame:
    """Per rank and step: compute, exposed comm (wait / transfer), overlapped comm, memcpy, idle."""
    return ctx.breakdown


def build_matched(ctx: Context) -> Matched:
    """What Context.matched computes on first use."""
    from scope.engine import give_back_memory

    store = ctx.store
    assert store is not None
    matched = match_collectives(store.collectives(MATCH_COLUMNS, MATCH_TEXT), store.ranks)
    give_back_memory()  # what reading every rank's collectives file freed
    return matched


def total_events(ctx: Context) -> int:
    ranks = ctx.store.meta.get("ranks", {}) if ctx.store else {}
    return sum(int(m.get("n_events", 0) or 0) for m in ranks.values())


def budget(ctx: Context) -> pd.DataFrame:
    """Per rank, step and cause: the step time budget (scope/rankpass/budget.py), built with the breakdown."""
    rank_pass(ctx)
    return ctx.memo("budget", lambda: pd.DataFrame(columns=BUDGET_COLUMNS))


def budget_evidence(ctx: Context) -> pd.DataFrame:
    """Per rank and step: what the budget's findings cite (scope/rankpass/budget_evidence.py)."""
    rank_pass(ctx)
    return ctx.memo("budget_evidence", lambda: pd.DataFrame(columns=EVIDENCE_COLUMNS))


def rank_job(root: str, matched: Matched, rank: int) -> RankJob:
    """What a worker needs for one rank: its waits (with the peer waited for) and the intervals of its
    collectives whose group was only partly traced."""
    return next(rank_jobs(root, matched, [rank]))


def rank_jobs(root: str, matched: Matched, ranks: list[int]) -> Iterator[RankJob]:
    """rank_job for each rank, made as they are taken: every rank's rows looked up in the instances at
    once, then cut per rank (a lookup per rank cost 2 ms, most of the driver's time in the per-rank
    pass: 33 s at 16,384 ranks; every job made first held 80 MB there)."""
    per_rank, inst = matched.per_rank, matched.instances
    if per_rank.empty:
        yield from (RankJob(root, rank) for rank in ranks)
        return
    keyed = inst.drop_duplicates(["pg", "seq"]).set_index(["pg", "seq"]) if not inst.empty else None
    keys = pd.MultiIndex.from_arrays([per_rank["pg"], per_rank["seq"]])
    last = keyed["last_arriver"].reindex(keys).to_numpy() if keyed is not None else np.full(len(keys), np.nan)
    peers = pd.to_numeric(pd.Series(last), errors="coerce").fillna(-1).to_numpy(dtype=np.int64)
    partial = _partly_traced(keyed, keys)
    waiting = (per_rank["wait_us"] > 0).to_numpy()
    start = per_rank["start_ns"].to_numpy(dtype=np.int64)
    end_wait = start + np.rint(per_rank["wait_us"].to_numpy() * 1e3).astype(np.int64)
    end = per_rank["end_ns"].to_numpy(dtype=np.int64)
    rows = per_rank.groupby("rank", sort=False).indices
    for rank in ranks:
        if rank not in rows:
            yield RankJob(root, rank)
            continue
        mine = rows[rank]
        wait, part = mine[waiting[mine]], mine[partial[mine]]
        yield RankJob(root, rank, start[wait], end_wait[wait], peers[wait], start[part], end[part])


def _partly_traced(keyed: pd.DataFrame | None, keys: pd.MultiIndex) -> np.ndarray:
    """Collectives of a group some of whose ranks are not in the traces: from one side, time in the
    kernel waiting for the untraced peers cannot be told from transfer."""
    if keyed is None or not len(keys):
        return np.zeros(len(keys), dtype=bool)
    sub = keyed.reindex(keys)
    missing = pd.to_numeric(sub["n_missing"], errors="coerce").fillna(0).to_numpy() > 0
    size = pd.to_numeric(sub["group_size"], errors="coerce").fillna(0).to_numpy()
    present = pd.to_numeric(sub["n_ranks"], errors="coerce").fillna(0).to_numpy()
    p2p = sub["p2p"].fillna(False).to_numpy(dtype=bool) if "p2p" in sub.columns else np.zeros(len(keys), dtype=bool)
    return (missing | (size > present)) & ~p2p


def build_breakdown(ctx: Context) -> pd.DataFrame:
    """What Context.breakdown computes on first use: the per-rank pass (rank_pass)."""
    return rank_pass(ctx)


def rank_pass(ctx: Context) -> pd.DataFrame:
    """The breakdown, from the pass over each rank's events that makes every per-rank table, run once
    per analysis: also when the breakdown was given by hand (Context.breakdown's setter) and an analyzer
    asks for another of its tables."""
    return ctx.memo("rank_pass", lambda: _run_pass(ctx))


def _run_pass(ctx: Context) -> pd.DataFrame:
    """One pass over each rank's events
    (scope/rankpass/rank_tables.py), which also yields the step time budget, its evidence, the communication
    streams, the trace's FLOPs per step, the operators' tables and the ranks that may run a pipeline
    (kept as ctx.memo: 'budget', 'budget_evidence', 'comm_streams', 'trace_flops', 'op_tables',
    'pipeline_candidates')."""
    from scope.engine import give_back_memory, map_unordered
    from scope.rankpass.op_counts import OpFold

    store = ctx.store
    if store is None or not getattr(store, "ranks", None):  # no traces (or a test's stand-in for a store)
        return pd.DataFrame(columns=BREAKDOWN_COLUMNS)
    jobs = rank_jobs(str(store.root), ctx.matched, store.ranks)
    workers = ctx.option("workers") if total_events(ctx) >= PARALLEL_MIN_EVENTS else 1
    done = map_unordered(
        rank_tables,
        jobs,
        engine=ctx.option("engine", "local"),
        workers=workers,
        scheduler=ctx.option("scheduler"),
        count=len(store.ranks),
    )
    frames, streams, flops, ops = ArrowBatches(), ArrowBatches(), ArrowBatches(), OpFold()
    budgets, evidence = ArrowBatches(), ArrowBatches()
    pipeline_candidates: list[int] = []
    for i, part in enumerate(done, 1):
        frames.add(part.breakdown)
        streams.add(part.streams)
        flops.add(part.flops)
        if part.rank_steps:
            ops.add(part.op_counts, part.host_budget, part.rank_steps)
        pipeline_candidates += [part.rank] if part.may_pipeline else []
        budgets.add(part.budget)
        evidence.add(part.evidence)
        if i % TRIM_EVERY == 0:
            give_back_memory()
    # Each table joined and sorted in turn, the heap trimmed after each: their copies on the way (a
    # sort is one) are then never all alive at once (at 4,096 ranks they were 50 MB together).
    tables: dict[str, Callable[[], object]] = {
        "budget": lambda: budgets.joined(["rank", "step"], BUDGET_COLUMNS),
        "budget_evidence": lambda: evidence.joined(["rank", "step"], EVIDENCE_COLUMNS),
        "comm_streams": lambda: streams.joined(["rank", "stream"]),
        "trace_flops": lambda: flops.joined(["rank", "step"]),
        "op_tables": ops.tables,
        "pipeline_candidates": lambda: sorted(pipeline_candidates),
    }
    for key, join in tables.items():
        ctx.memo(key, join)
        give_back_memory()
    return frames.joined(["rank", "step"], BREAKDOWN_COLUMNS)


def comm_streams(ctx: Context) -> pd.DataFrame:
    """Per rank and GPU stream that ran communication kernels (analyzers/comm_streams.py)."""
    rank_pass(ctx)
    return ctx.memo("comm_streams", pd.DataFrame)


def trace_flops(ctx: Context) -> pd.DataFrame:
    """rank, step, flops: what the traces record per profiled step (analyzers/mfu.py)."""
    rank_pass(ctx)
    return ctx.memo("trace_flops", pd.DataFrame)


def op_tables(ctx: Context) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(op_stats, host_budget): analyzers/ops.py, folded as the ranks' products arrive."""
    rank_pass(ctx)
    return ctx.memo("op_tables", lambda: (pd.DataFrame(), pd.DataFrame()))


def pipeline_candidates(ctx: Context) -> list[int]:
    """The ranks whose events hold a micro-batch action or a point-to-point op (pipeline/rank.py
    may_pipeline): the only ones the pipeline analyzer reads again."""
    rank_pass(ctx)
    return ctx.memo("pipeline_candidates", list)


# The heap's freed pages are given back (scope.engine.give_back_memory) every this many ranks' results:
# what unpickling and joining them freed would otherwise stay with the process.
TRIM_EVERY = 64
