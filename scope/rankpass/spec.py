"""What a per-rank table declares about itself (one RankTable per module under tables/).

`make(view)` gives one rank's part: for a table that travels, its rows (a DataFrame, columns as arrays, an
Arrow batch or None for none), joined on the coordinator in rank order, or folded by `fold` where a table is
more than its ranks' rows put together (the operators' totals); for a product that stays in the worker
(`travels=False`: the step windows, the interval sets, the events as arrays), whatever the tables that
read it need.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from scope.rankpass.view import RankView


class Fold(Protocol):
    """How the coordinator makes one table of the ranks' parts, as they arrive."""

    def add(self, part: pa.RecordBatch | None) -> None: ...

    def table(self) -> pd.DataFrame: ...


@dataclass(frozen=True)
class RankTable:
    name: str
    make: Callable[[RankView], Any]
    # The joined table's columns (its empty form has them); () where the parts say (their columns vary).
    columns: tuple[str, ...] = ()
    # The event columns it reads itself (the pass reads the union of every needed table's, once).
    events: tuple[str, ...] = ()
    # The per-rank products it reads (RankView.value), by name: made first, for the same rank.
    needs: tuple[str, ...] = ()
    # It reads this rank's waits from the collectives matched across ranks (RankJob's intervals).
    matching: bool = False
    # Its rows leave the worker; False: a product other tables read inside the worker.
    travels: bool = True
    # The joined table's order (stable: a rank's rows keep theirs).
    order: tuple[str, ...] = ("rank",)
    # The coordinator's fold, where the table is not its ranks' rows joined (a new one per pass).
    fold: Callable[[], Fold] | None = None
    # Where the engine runs ranks in batches (dask): a batch's parts made one on its worker before they
    # cross to the coordinator; the coordinator's fold must give the same table from it (a sum per key).
    prefold: Callable[[list[pa.RecordBatch]], pa.RecordBatch | None] | None = None
