"""One rank as the tables see it in the worker: its events (the columns the needed tables read), its step
windows, its job (the waits from the matching) and the products made so far."""

from __future__ import annotations

from typing import Any

import pandas as pd

from scope.rankpass.timeline import RankJob


class RankView:
    def __init__(self, job: RankJob, events: pd.DataFrame, steps: pd.DataFrame) -> None:
        self.job = job
        self.rank = job.rank
        self.events = events
        self.steps = steps  # the rank's steps partition (store.read_steps): empty without profiled steps
        self._values: dict[str, Any] = {}

    def value(self, name: str) -> Any:
        """A product this table declared it needs (RankTable.needs), made earlier for this rank."""
        if name not in self._values:
            raise KeyError(f"per-rank product {name!r} read before it was made: declare it in `needs`")
        return self._values[name]

    def put(self, name: str, value: Any) -> None:
        self._values[name] = value
