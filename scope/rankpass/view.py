"""One rank as the tables see it in the worker: its events (the columns the needed tables read), its step
windows, its job (the waits from the matching) and the products made so far.

The events come as the store's Arrow table: `columns` hands them out as numpy arrays and `arrays` as the
budget's Ev (both made once a rank); `events`, a pandas frame, is made only when a table asks for it (the
built-in tables do on CPU ranks only: a frame of ~27k events costs more than most tables)."""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from scope.rankpass.arrays import Ev, EventColumns
from scope.rankpass.timeline import RankJob
from scope.store import Store

# The steps partition's columns the pass reads for every rank (the windows); the rest only if a table asks
# for the whole partition (RankView.steps).
WINDOW_COLUMNS = ("step", "start_ns", "end_ns")


class RankView:
    def __init__(self, job: RankJob, events: pa.Table | pd.DataFrame, steps: pa.Table | pd.DataFrame | None) -> None:
        """`steps`: the rank's steps partition (Store.read_steps_arrow or read_steps; None: it has none)."""
        self.job = job
        self.rank = job.rank
        self._frame = events if isinstance(events, pd.DataFrame) else None
        table = pa.Table.from_pandas(events, preserve_index=False) if self._frame is not None else events
        self.columns = EventColumns(table)
        self.step_table = steps if isinstance(steps, pa.Table) else None
        self._steps_frame = steps if isinstance(steps, pd.DataFrame) else None
        self._values: dict[str, Any] = {}

    @cached_property
    def events(self) -> pd.DataFrame:
        """The events as a frame (names and kinds as categoricals), made on first use."""
        return self._frame if self._frame is not None else self.columns.table.to_pandas()

    @cached_property
    def steps(self) -> pd.DataFrame:
        """The rank's steps partition as a frame (store.read_steps): empty without profiled steps."""
        if self._steps_frame is not None:
            return self._steps_frame
        if self.step_table is None:
            return pd.DataFrame()
        if self.step_table.num_columns <= len(WINDOW_COLUMNS):  # the pass read the windows' columns alone
            return Store(self.job.store_root, {}).read_steps(self.rank)
        return self.step_table.to_pandas()

    @property
    def has_steps(self) -> bool:
        """Whether the rank has profiled steps (a steps partition with rows)."""
        if self._steps_frame is not None:
            return not self._steps_frame.empty
        return self.step_table is not None and self.step_table.num_rows > 0

    def step_column(self, name: str) -> np.ndarray:
        """One column of the steps partition (the rank has steps: has_steps). The pass reads the windows'
        columns alone; another column comes from the whole partition."""
        if self._steps_frame is not None:
            return self._steps_frame[name].to_numpy()
        assert self.step_table is not None
        if name not in self.step_table.column_names:
            return self.steps[name].to_numpy()
        return self.step_table.column(name).to_numpy()

    @cached_property
    def arrays(self) -> Ev:
        """The events as the budget's arrays (ts, end, thread, correlation, stream; name, kind, cat codes)."""
        return Ev.of(self.columns)

    def value(self, name: str) -> Any:
        """A product this table declared it needs (RankTable.needs), made earlier for this rank."""
        if name not in self._values:
            raise KeyError(f"per-rank product {name!r} read before it was made: declare it in `needs`")
        return self._values[name]

    def put(self, name: str, value: Any) -> None:
        self._values[name] = value
