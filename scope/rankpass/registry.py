"""The per-rank tables the pass can make, and which of them a set of wanted tables takes, in order.

Adding a table: its module under scope/rankpass/tables/ (a RankTable named TABLE) and one line in TABLE_MODULES
below. An analyzer reads it by naming it in its record (AnalyzerSpec.reads) and asking the Context for it
(Context.table). A test may give the Context a Registry of its own (tests/test_rank_table_registry.py).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from functools import cache

from scope.rankpass.spec import RankTable


class Registry:
    """Declared tables by name; checks the declarations once (unique names, known needs, no circle)."""

    def __init__(self, tables: Iterable[RankTable]) -> None:
        self.tables: dict[str, RankTable] = {}
        for table in tables:
            if table.name in self.tables:
                raise ValueError(f"per-rank table {table.name!r} is declared twice")
            self.tables[table.name] = table
        for table in self.tables.values():
            unknown = [n for n in table.needs if n not in self.tables]
            if unknown:
                raise ValueError(f"per-rank table {table.name!r} needs {unknown}, which no table declares")
        self.plan(self.tables)  # a circle of needs raises here, not in a worker

    def names(self, travelling: bool = True) -> list[str]:
        return [n for n, t in self.tables.items() if t.travels or not travelling]

    def __getitem__(self, name: str) -> RankTable:
        if name not in self.tables:
            raise KeyError(f"no per-rank table {name!r} (declared: {', '.join(sorted(self.names()))})")
        return self.tables[name]

    def plan(self, wanted: Iterable[str]) -> tuple[RankTable, ...]:
        """The wanted tables and every product they need, each after what it needs."""
        order: list[RankTable] = []
        placed: set[str] = set()

        def place(name: str, path: tuple[str, ...]) -> None:
            if name in placed:
                return
            if name in path:
                raise ValueError(f"per-rank tables need each other in a circle: {' -> '.join((*path, name))}")
            table = self[name]
            for need in table.needs:
                place(need, (*path, name))
            placed.add(name)
            order.append(table)

        for name in wanted:
            place(name, ())
        return tuple(order)


# Every table scope makes, by module (each holds a RankTable named TABLE): adding one is a line here.
TABLE_MODULES = (
    "scope.rankpass.tables.sets",
    "scope.rankpass.tables.windows",
    "scope.rankpass.tables.host",
    "scope.rankpass.tables.breakdown",
    "scope.rankpass.tables.budget",
    "scope.rankpass.tables.budget_evidence",
    "scope.rankpass.tables.comm_streams",
    "scope.rankpass.tables.trace_flops",
    "scope.rankpass.tables.op_products",
    "scope.rankpass.tables.op_stats",
    "scope.rankpass.tables.host_budget",
    "scope.rankpass.tables.pipeline_candidates",
)


@cache
def default_registry() -> Registry:
    """Every table scope makes (imported when first asked for: the table modules load numpy and pandas)."""
    return registry_of(TABLE_MODULES)


def registry_of(modules: Iterable[str]) -> Registry:
    """A registry of the tables the modules declare (their TABLE)."""
    return Registry(importlib.import_module(m).TABLE for m in modules)
