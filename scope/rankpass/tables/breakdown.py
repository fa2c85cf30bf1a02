"""Per rank and step: compute, exposed communication (waiting for peers / transfer), overlapped
communication, copies and idle, adding up to the step (scope/rankpass/timeline.py)."""

from __future__ import annotations

import numpy as np

from scope.rankpass import intervals as iv
from scope.rankpass.spec import RankTable
from scope.rankpass.timeline import BREAKDOWN_COLUMNS, breakdown_columns
from scope.rankpass.view import RankView


def make(view: RankView) -> dict[str, np.ndarray]:
    waits = iv.union(view.job.wait_starts, view.job.wait_ends)
    return breakdown_columns(view.rank, view.value("sets"), waits, view.value("windows"))


TABLE = RankTable(
    name="breakdown",
    make=make,
    columns=tuple(BREAKDOWN_COLUMNS),
    needs=("sets", "windows"),
    matching=True,
    order=("rank", "step"),
)
