"""Toy per-rank table: per rank and step, how many events start in the step window (reads the events and the
pass's step windows)."""

from __future__ import annotations

import numpy as np

from scope.rankpass.spec import RankTable
from scope.rankpass.view import RankView

COLUMNS = ("rank", "step", "events")


def make(view: RankView) -> dict[str, np.ndarray]:
    windows = view.value("windows")
    lo = windows["start_ns"].to_numpy(dtype=np.int64)
    hi = windows["end_ns"].to_numpy(dtype=np.int64)
    ts = view.events["ts_ns"].to_numpy(dtype=np.int64)
    counts = np.array([int(((ts >= a) & (ts < b)).sum()) for a, b in zip(lo, hi, strict=True)], dtype=np.int64)
    return {"rank": np.full(lo.size, view.rank, dtype=np.int64), "step": windows["step"].to_numpy(), "events": counts}


TABLE = RankTable(
    name="events_per_step", make=make, columns=COLUMNS, events=("ts_ns",), needs=("windows",), order=("rank", "step")
)
