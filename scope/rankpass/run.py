"""The pass: the wanted per-rank tables and what they need, made from one read of each rank's events, in
the worker that holds the rank, then joined (or folded) on the coordinator as the ranks' parts arrive.

Each table used to read every rank's events itself: six reads of each rank (at 16,384 ranks, 100k Parquet
reads and pandas conversions of ~27k events each). One read serves them all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import pandas as pd
import pyarrow as pa

from scope.rankpass.batches import ArrowBatches, as_batch
from scope.rankpass.jobs import rank_jobs
from scope.rankpass.match import Matched
from scope.rankpass.registry import Registry
from scope.rankpass.spec import Fold, RankTable
from scope.rankpass.timeline import RankJob
from scope.rankpass.view import WINDOW_COLUMNS, RankView
from scope.store import Store

# Below this many events in all, worker processes cost more than they save.
PARALLEL_MIN_EVENTS = 3_000_000
# The heap's freed pages are given back (scope.engine.give_back_memory) every this many ranks' results:
# what unpickling and joining them freed would otherwise stay with the process.
TRIM_EVERY = 64


@dataclass(frozen=True)
class Plan:
    """What a worker makes of each rank: the tables in dependency order, and the event columns they read."""

    tables: tuple[RankTable, ...]

    @property
    def events(self) -> list[str]:
        return list(dict.fromkeys(c for t in self.tables for c in t.events))

    @property
    def travelling(self) -> list[RankTable]:
        return [t for t in self.tables if t.travels]


@dataclass
class RankParts:
    """A rank's part of each travelling table: small (rows per step or stream, never per event), as Arrow
    batches (batches.as_batch: None for no rows)."""

    rank: int
    parts: dict[str, pa.RecordBatch | None] = field(default_factory=dict)


def rank_parts(plan: Plan, job: RankJob) -> RankParts:
    """One rank's parts of the plan's tables, from one read of its events (in a worker)."""
    store = Store(job.store_root, {})
    columns = plan.events
    # kept as Arrow: the tables take numpy arrays of it (RankView.columns), a frame only where one asks
    events = store.read_events(job.rank, columns=columns) if columns else pa.table({})
    view = RankView(job, events, store.read_steps_arrow(job.rank, columns=list(WINDOW_COLUMNS)))
    out = RankParts(job.rank)
    for table in plan.tables:
        value = table.make(view)
        view.put(table.name, value)
        if table.travels:
            out.parts[table.name] = value if isinstance(value, pa.RecordBatch) else as_batch(value)
    return out


def prefold_batch(plan: Plan, parts: list[RankParts]) -> list[RankParts]:
    """A dask batch's parts, each table that declares a prefold made one part (on the batch's first rank
    that had one) before they cross to the coordinator; the local engine has no batches."""
    for table in plan.travelling:
        if table.prefold is None:
            continue
        holders = [p for p in parts if p.parts.get(table.name) is not None]
        if len(holders) < 2:
            continue
        folded = table.prefold([p.parts.pop(table.name) for p in holders])
        if folded is not None:
            holders[0].parts[table.name] = folded
    return parts


def total_events(store: Store | None) -> int:
    ranks = store.meta.get("ranks", {}) if store is not None else {}
    return sum(int(m.get("n_events", 0) or 0) for m in ranks.values())


class _Joined:
    """The default fold: the ranks' rows joined, sorted by the table's order."""

    def __init__(self, table: RankTable) -> None:
        self.spec, self.batches = table, ArrowBatches()

    def add(self, part: pa.RecordBatch | None) -> None:
        self.batches.add(part)

    def table(self) -> pd.DataFrame:
        return self.batches.joined(list(self.spec.order), list(self.spec.columns) or None)


def make_tables(
    store: Store,
    registry: Registry,
    wanted: Iterable[str],
    matched: Callable[[], Matched],
    options: dict[str, Any],
) -> dict[str, pd.DataFrame]:
    """The wanted tables (and no others) for every rank of the store; `matched` is called only when one
    of them reads the matching. Options: engine, workers, scheduler (as `scope analyze` takes them)."""
    from scope.engine import give_back_memory, map_unordered

    plan = Plan(registry.plan(wanted))
    folds: dict[str, Fold] = {t.name: (t.fold() if t.fold else _Joined(t)) for t in plan.travelling}
    ranks = store.ranks
    if ranks:
        reads_matching = any(t.matching for t in plan.tables)
        jobs = rank_jobs(str(store.root), matched() if reads_matching else None, ranks)
        big = total_events(store) >= PARALLEL_MIN_EVENTS
        done = map_unordered(
            partial(rank_parts, plan),
            jobs,
            engine=options.get("engine") or "local",
            workers=options.get("workers") if big else 1,
            scheduler=options.get("scheduler"),
            count=len(ranks),
            combine=partial(prefold_batch, plan),
        )
        for i, part in enumerate(done, 1):
            for name, batch in part.parts.items():
                folds[name].add(batch)
            if i % TRIM_EVERY == 0:
                give_back_memory()
    # Each table joined and sorted in turn, the heap trimmed after each: their copies on the way (a sort is
    # one) are then never all alive at once (at 4,096 ranks they were 50 MB together).
    tables = {}
    for name, fold in folds.items():
        tables[name] = fold.table()
        give_back_memory()
    return tables
