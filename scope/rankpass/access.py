"""The per-rank tables of one analysis, made on first use (Context.table): the pass runs once for every
table the analysis wants (the analyzers' declared reads), not once per table asked for."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pandas as pd

from scope.rankpass.match import Matched
from scope.rankpass.registry import Registry
from scope.store import Store


class RankTables:
    def __init__(
        self,
        store: Store | None,
        options: dict[str, Any],
        matched: Callable[[], Matched],
        registry: Registry,
        wanted: Iterable[str] | None = None,
    ) -> None:
        """`wanted`: the tables to make in the one pass (None: every travelling table of the registry)."""
        self.store, self.options, self.matched, self.registry = store, options, matched, registry
        self.wanted = list(wanted) if wanted is not None else registry.names()
        self.made: dict[str, pd.DataFrame] = {}

    def get(self, name: str) -> pd.DataFrame:
        if name not in self.made:
            spec = self.registry[name]
            if not spec.travels:
                raise KeyError(f"per-rank product {name!r} stays in the worker: it is no table")
            todo = [n for n in dict.fromkeys([*self.wanted, name]) if n not in self.made]
            self.made.update(self._make(todo))
        return self.made[name]

    def give(self, name: str, table: pd.DataFrame) -> None:
        """A table given by hand (a test, a library user): the pass leaves it as it is."""
        self.registry[name]
        self.made[name] = table

    def _make(self, names: list[str]) -> dict[str, pd.DataFrame]:
        from scope.rankpass.run import make_tables

        if self.store is None:  # no traces: every table empty
            return {n: pd.DataFrame(columns=list(self.registry[n].columns) or None) for n in names}
        return make_tables(self.store, self.registry, names, self.matched, self.options)
