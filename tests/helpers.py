"""The one way tests build what the library's entry points build: an input's inventory and an analyzer's
Context over it (scope.analysis.run lists PATH once and hands the inventory on; so do these)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scope.analysis import Context
from scope.inputs import Inventory
from scope.store import Store


def inventory(path: Path | str | None = None) -> Inventory:
    """PATH's inventory as `scope analyze` lists it; with no PATH, an empty folder's (a test of numbers that
    reads no input file)."""
    if path is None:
        return Inventory(path=Path("."), root=Path("."), layout="folder")
    return Inventory.scan(path)


def context(path: Path | str | None = None, store: Store | None = None, **options: Any) -> Context:
    """An analyzer's Context over PATH's inventory, the store and OPTIONS."""
    return Context(inputs=inventory(path), store=store, options=dict(options))


def fuzz_settings(max_examples: int) -> Any:
    """Hypothesis settings of the fuzz tests: the same examples every run (derandomized, no example database),
    no deadline on a busy 2-core machine, and function-scoped fixtures shared by a test's examples."""
    from hypothesis import HealthCheck, settings

    return settings(
        derandomize=True,
        database=None,
        deadline=None,
        max_examples=max_examples,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
