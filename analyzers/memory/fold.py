"""The memory pass's ranks, folded on the coordinator as they arrive.

The pass used to keep every rank's RankMemory (four frames, empty on a rank without memory events) until
the last rank was in: ~9 MB of the coordinator per 1,024 ranks of the scale synth, none of it output
(benchmarks/scale.py, docs/dask.md). A rank without memory events now sends None, and the rows of the
others are joined every JOIN_EVERY ranks, so the coordinator holds the output's rows, not one object per rank.
"""

from __future__ import annotations

import pandas as pd
from scope.analyzers.memory.rank import RankMemory

from scope.rankpass.batches import JOIN_EVERY


class Rows:
    """One table's rows from the ranks, joined every JOIN_EVERY parts; read back in rank order."""

    def __init__(self) -> None:
        self.joined: list[pd.DataFrame] = []
        self.pending: list[pd.DataFrame] = []

    def add(self, frame: pd.DataFrame) -> None:
        if frame.empty:
            return
        self.pending.append(frame)
        if len(self.pending) >= JOIN_EVERY:
            self.joined.append(pd.concat(self.pending, ignore_index=True))
            self.pending = []

    def frame(self, columns: list[str]) -> pd.DataFrame:
        """Every rank's rows, ranks in order and each rank's rows in its own order (a stable sort: as the
        ranks' frames concatenated in rank order), with `columns`; empty with them when no rank had any."""
        frames = self.joined + self.pending
        self.joined, self.pending = [], []
        if not frames:
            return pd.DataFrame(columns=columns)
        rows = pd.concat(frames, ignore_index=True)
        return rows.sort_values("rank", kind="stable").reset_index(drop=True)[columns]


class RankFold:
    """The ranks' memory rows by table, and their notes in rank order."""

    def __init__(self) -> None:
        self.devices, self.steps, self.timeline, self.allocators = Rows(), Rows(), Rows(), Rows()
        self._notes: list[tuple[int, list[str]]] = []

    def add(self, part: RankMemory | None) -> None:
        if part is None:
            return
        self.devices.add(part.devices)
        self.steps.add(part.steps)
        self.timeline.add(part.timeline)
        self.allocators.add(part.allocators)
        if part.notes:
            self._notes.append((part.rank, part.notes))

    def notes(self) -> list[str]:
        return [n for _, notes in sorted(self._notes, key=lambda p: p[0]) for n in notes]
