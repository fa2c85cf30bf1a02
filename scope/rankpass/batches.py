"""Ranks' small results, sent to the driver as Arrow batches and joined in batches as they arrive: the
per-rank pass (run.py) and the ops fold (op_counts.py) keep one table per JOIN_EVERY ranks, never one per
rank.

Why Arrow on the way: a DataFrame unpickles as hundreds of small Python objects. Made for every rank and
dropped a batch later, they left the driver's small-object arenas fragmented for good (in a replay of
16,384 ranks' results: 108 arenas, 113 MB, around 35 MB of live objects, none ever given back). An Arrow
batch unpickles as a few buffers on the C heap, which give_back_memory trims."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

# Ranks' results are joined every this many: a batch per rank weighs more than its few rows, and 16,384
# of them held apart would make the driver grow with the rank count.
JOIN_EVERY = 256


def as_batch(table: pd.DataFrame | dict[str, np.ndarray] | None) -> pa.RecordBatch | None:
    """A rank's table (a frame, or columns as arrays) as one batch for the trip to the driver; None
    when it has no rows."""
    if table is None:
        return None
    if isinstance(table, dict):
        if not table or not len(next(iter(table.values()))):
            return None
        return pa.RecordBatch.from_arrays([_column(v) for v in table.values()], list(table))
    if table.empty:
        return None
    # column by column: RecordBatch.from_pandas takes 40% longer; the frames hold no index to keep, and
    # their numpy, text and missing values come back as they went (tests/test_batches.py). pandas'
    # nullable and categorical types would come back as numpy ones and categorical: no rank table has them.
    columns = [_column(table[c]) for c in table.columns]
    return pa.RecordBatch.from_arrays(columns, [str(c) for c in table.columns])


def _column(values: pd.Series | np.ndarray) -> pa.Array:
    try:
        column = pa.array(values, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        # values of several types in one object column (a name read as a number in one event): Arrow
        # holds one type, so they travel as their text; a lost rank would cost more than the type
        column = pa.array([None if _missing(v) else str(v) for v in values], pa.string())
    # a column of pandas' Arrow-backed type comes as the chunks it was made of
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def _missing(value: object) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and value != value)


class ArrowBatches:
    """Ranks' batches, joined into one table every JOIN_EVERY as they arrive (empty ones dropped)."""

    def __init__(self) -> None:
        self.parts: list[pa.Table] = []
        self.pending: list[pa.RecordBatch] = []

    def add(self, batch: pa.RecordBatch | None) -> None:
        if batch is None or not batch.num_rows:
            return
        self.pending.append(batch)
        if len(self.pending) >= JOIN_EVERY:
            self.parts.append(_table(self.pending))
            self.pending = []

    def __len__(self) -> int:
        return sum(p.num_rows for p in self.parts) + sum(b.num_rows for b in self.pending)

    def frame(self) -> pd.DataFrame:
        """Every batch so far as one frame, in arrival order; the batches are let go."""
        return _frame(self._table())

    def joined(self, order: list[str] | None = None, columns: list[str] | None = None) -> pd.DataFrame:
        """Every rank's rows in arrival order, or sorted by `order` (stable: a rank's rows keep its order);
        empty (with `columns`) when no rank had any. Sorted before it becomes a frame, which then takes
        the table's buffers as it goes: two copies of the table at the peak, not four."""
        table = self._table()
        if not table.num_rows:
            return pd.DataFrame(columns=columns)
        if columns and set(columns) <= set(table.column_names):
            table = table.select(columns)
        if order:
            table = table.sort_by([(c, "ascending") for c in order])
        return _frame(table)

    def _table(self) -> pa.Table:
        parts = self.parts + ([_table(self.pending)] if self.pending else [])
        self.parts, self.pending = [], []
        return _table(parts) if parts else pa.table({})


def _frame(table: pa.Table) -> pd.DataFrame:
    if not table.num_columns:
        return pd.DataFrame()
    return table.to_pandas(split_blocks=True, self_destruct=True)


def _table(pieces: list[pa.RecordBatch] | list[pa.Table]) -> pa.Table:
    """One contiguous table; a column typed null in some ranks (no value there) takes the others' type."""
    tables = [p if isinstance(p, pa.Table) else pa.Table.from_batches([p]) for p in pieces]
    return pa.concat_tables(tables, promote_options="permissive").combine_chunks()
