"""The operators' counts of a batch of ranks folded where the ranks were read (a Dask worker), before
they cross to the coordinator. A rank's counts are a row per (kind, name, parent): ~400 rows, 100 KB,
50 times the rest of its per-rank tables together; a batch of 32 ranks shares most names, so its
folded counts weigh about what one rank's did. The fold is a sum and a max per key (_op_counts._Totals),
so folding in batches first gives the coordinator's tables exactly."""

from __future__ import annotations

from dataclasses import replace

from scope.analyzers._batches import as_batch
from scope.analyzers._op_counts import _Totals
from scope.analyzers._rank_tables import RankTables


def prefold_op_counts(parts: list[RankTables]) -> list[RankTables]:
    """The parts of a batch, the first with counts carrying the whole batch's counts folded, the others
    none (OpFold.add skips a part without counts, and still counts its steps)."""
    counted = [p for p in parts if p.rank_steps and p.op_counts is not None and p.op_counts.num_rows]
    if len(counted) < 2:
        return parts
    totals = _Totals()
    for part in counted:
        totals.add(part.op_counts)
    totals._fold(sort=False)
    folded = as_batch(totals.total)
    first = counted[0].rank
    return [replace(p, op_counts=folded if p.rank == first else None) if p in counted else p for p in parts]
