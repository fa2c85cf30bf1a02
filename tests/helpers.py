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
