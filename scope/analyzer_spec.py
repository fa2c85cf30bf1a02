"""What an analyzer declares about itself: one record per analyzer, listed in the registry (scope.analyzers).

The record says everything the rest of scope needs to know about an analyzer without running it: its name,
the options it reads (the CLI makes one flag of each, the library validates them), the tables it writes, the
finding kinds it emits (a test runs every analyzer and checks), the link rules that hang other findings under
its own (scope.causality applies them), whether it reads operation-level timelines, and the dashboard pages
that show its results.

A record is light: `scope analyze --help` imports every record to build its flags and must not load pandas.
So the analysis code is named, "package.module:function", and imported when the analyzer runs; the record
lives in a module of its own beside that code (analyzers/<name>_spec.py), importing nothing heavy.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scope.causality import Rule
from scope.options import Option

if TYPE_CHECKING:
    from scope.analysis import Context, Result


@dataclass(frozen=True)
class AnalyzerSpec:
    name: str
    # "scope.analyzers.<module>:<function>": `function(ctx: Context) -> Result`, pure (no printing, no plots).
    analyze: str
    options: tuple[Option, ...] = ()
    # Names of the tables its Result may hold (store/tables/<name>.parquet, the JSON's <name>).
    tables: tuple[str, ...] = ()
    # The per-rank tables it reads (Context.table; declared in scope/rankpass/registry.py): the analysis
    # makes every table its analyzers read in one pass over the ranks.
    reads: tuple[str, ...] = ()
    # Finding kinds its Result may hold.
    kinds: tuple[str, ...] = ()
    # Rules linking findings to the findings of this analyzer that explain them (scope.causality);
    # applied in registry order, after the rules of the analyzers listed before this one.
    link_rules: tuple[Rule, ...] = ()
    # It also reads operation-level timelines (store layout "optrace"); the others need kernel-level traces
    # (matched collectives, kernels, CPU ops) and would misread coarse operations.
    reads_optrace: bool = False
    # Dashboard pages (app/pages/<panel>.py) that show its findings or tables.
    panels: tuple[str, ...] = ()

    def load(self) -> Callable[[Context], Result]:
        """The analyze function (imports the analysis code, pandas included)."""
        module, _, function = self.analyze.partition(":")
        analyze: Callable[[Context], Result] = getattr(importlib.import_module(module), function)
        return analyze
