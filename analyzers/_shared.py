"""What several analyzers need, computed once per `scope analyze` run and kept on the Context.

The breakdown, the straggler and the comm-bound analyzers all start from the same two results: the
collectives matched across ranks (from the compact per-rank collectives table) and the per-rank,
per-step breakdown (one pass over each rank's events, in worker processes when the run is big).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import pandas as pd
from scope.analyzers._match import Matched, match_collectives, rank_waits
from scope.analyzers._timeline import BREAKDOWN_COLUMNS, RankJob, rank_breakdown

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
    store = ctx.store
    assert store is not None
    return match_collectives(store.collectives(), store.ranks)


def _total_events(ctx: Context) -> int:
    ranks = ctx.store.meta.get("ranks", {}) if ctx.store else {}
    return sum(int(m.get("n_events", 0) or 0) for m in ranks.values())


def build_breakdown(ctx: Context) -> pd.DataFrame:
    """What Context.breakdown computes on first use: one pass over each rank's events."""
    from scope.engine import map_unordered

    store = ctx.store
    if store is None or not store.ranks:
        return pd.DataFrame(columns=BREAKDOWN_COLUMNS)
    per_rank = ctx.matched.per_rank
    jobs = []
    for rank in store.ranks:
        starts, ends = rank_waits(per_rank, rank)
        jobs.append(RankJob(str(store.root), rank, starts, ends))
    workers = ctx.option("workers") if _total_events(ctx) >= PARALLEL_MIN_EVENTS else 1
    parts = list(
        map_unordered(
            rank_breakdown,
            jobs,
            engine=ctx.option("engine", "local"),
            workers=workers,
            scheduler=ctx.option("scheduler"),
        )
    )
    parts = [p for p in parts if not p.empty]
    if not parts:
        return pd.DataFrame(columns=BREAKDOWN_COLUMNS)
    return pd.concat(parts, ignore_index=True).sort_values(["rank", "step"]).reset_index(drop=True)
