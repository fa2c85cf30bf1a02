"""The rank's step windows (ProfilerStep), or one window over its whole timeline without steps; stays in
the worker."""

from __future__ import annotations

import pandas as pd

from scope.rankpass.spec import RankTable
from scope.rankpass.timeline import step_windows
from scope.rankpass.view import RankView


def make(view: RankView) -> pd.DataFrame:
    if view.has_steps:  # step_windows' frame, from the three columns alone
        return pd.DataFrame({c: view.step_column(c) for c in ("step", "start_ns", "end_ns")})
    return step_windows(view.job.store_root, view.rank, view.value("sets"), pd.DataFrame())


TABLE = RankTable(name="windows", make=make, needs=("sets",), travels=False)
