"""Ranks' small results joined in batches as they arrive: the per-rank pass (_shared.py) and the ops
fold (_op_counts.py) both keep one frame per batch, never one per rank. Its own module because
_shared imports _op_counts through the pass, so _op_counts cannot import _shared."""

from __future__ import annotations

import pandas as pd

# Ranks' results are joined every this many: a DataFrame (or a dict of arrays) per rank weighs more than
# its few rows, and 16,384 of them held apart would make the driver grow with the rank count.
JOIN_EVERY = 256


class FrameBatches:
    """Ranks' small frames, joined every JOIN_EVERY as they arrive (empty ones dropped)."""

    def __init__(self) -> None:
        self.parts: list[pd.DataFrame] = []
        self.pending: list[pd.DataFrame] = []

    def add(self, frame: pd.DataFrame) -> None:
        if frame.empty:
            return
        self.pending.append(frame)
        if len(self.pending) >= JOIN_EVERY:
            self.parts.append(pd.concat(self.pending, ignore_index=True))
            self.pending = []

    def joined(self, order: list[str] | None = None, columns: list[str] | None = None) -> pd.DataFrame:
        """Every rank's rows in arrival order, or sorted by `order`; empty (with `columns`) when no rank
        had any."""
        parts, self.parts, self.pending = self.parts + self.pending, [], []
        if not parts:
            return pd.DataFrame(columns=columns)
        table = pd.concat(parts, ignore_index=True)
        return table.sort_values(order).reset_index(drop=True) if order else table
