"""The analyzer protocol: a Context in, a Result out. Analyzers are pure: no plotting, no printing."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from scope.finding import Finding

if TYPE_CHECKING:
    import pandas as pd

    from scope.store import Store


@dataclass
class Context:
    """What an analyzer may read: the input path, the store (None when there are no traces) and options."""

    path: Path
    store: Store | None
    options: dict[str, Any] = field(default_factory=dict)

    def option(self, name: str, default: Any = None) -> Any:
        value = self.options.get(name)
        return default if value is None else value


@dataclass
class Result:
    findings: list[Finding] = field(default_factory=list)
    # Each table is stored as store/tables/<name>.parquet and emitted in the JSON under <name>.
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    # Inputs the analyzer could not read (named, with why): the report lists them, the CLI exits 4.
    warnings: list[str] = field(default_factory=list)
    partial: bool = False


class Analyzer(Protocol):
    NAME: str

    def analyze(self, ctx: Context) -> Result: ...
