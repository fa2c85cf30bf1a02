"""One analysis option, as data: each analyzer's record declares its own (scope.analyzer_spec), and RUN_OPTIONS
below are the run's.

Its own small module: the CLI builds its flags from the options without loading the analysis code.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scope.errors import EXIT_USAGE, ScopeError


@dataclass(frozen=True)
class Option:
    """One analysis option. `name` is the mapping key; the CLI flag is --name-with-dashes."""

    name: str
    type: type
    default: Any = None
    help: str = ""
    metavar: str | None = None
    choices: tuple[str, ...] = ()
    group: str = ""
    # The valid range of a number (None: unbounded on that side); said in the message when outside it.
    low: float | None = None
    high: float | None = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def parse(self, value: Any) -> Any:
        """The value in this option's type (from a flag, a mapping or a form); None stays unset."""
        if value is None:
            return None
        try:
            if self.type is bool:
                parsed: Any = value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes", "on")
            elif self.type is list:  # a repeatable option: one value or several
                parsed = [value] if isinstance(value, str) else list(value)
            else:
                parsed = self.type(value)
        except (TypeError, ValueError):
            raise ScopeError(f"option {self.name}: {value!r} is not a {self.type.__name__}", EXIT_USAGE) from None
        if self.choices and parsed not in self.choices:
            raise ScopeError(f"option {self.name}: {parsed!r} is not one of {', '.join(self.choices)}", EXIT_USAGE)
        problem = out_of_range(parsed, self.low, self.high)
        if problem:
            raise ScopeError(f"option {self.name}: {problem}", EXIT_USAGE)
        return parsed


# How and where ingest runs: options of the run, not of one analyzer (`scope analyze` and `scope ingest` flags).
RUN_OPTIONS: tuple[Option, ...] = (
    Option("store", Path, None, "store folder (default: PATH/store for a run directory, PATH/scope_store otherwise)"),
    Option("engine", str, "local", "where per-rank work runs: a local process pool or Dask", choices=("local", "dask")),
    Option("scheduler", str, None, "Dask scheduler address (with --engine dask)"),
    Option("workers", int, None, "parallel workers (default: CPU count)", low=1),
    Option("force", bool, False, "re-parse every rank even if the store is current"),
    Option(
        "comm_kernel",
        list,
        None,
        "GPU kernels whose name matches REGEX are communication (op OP, e.g. all_reduce); repeatable; "
        "also `comm_kernels = [...]` in scope.toml or [tool.scope] of pyproject.toml",
        metavar="REGEX[=OP]",
    ),
)


def out_of_range(value: Any, low: float | None, high: float | None) -> str | None:
    """Why a number is outside [low, high] (the range in the words), or None when it is inside."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    if (low is None or value >= low) and (high is None or value <= high):
        return None
    return f"{value:g} is outside the valid range: {range_words(low, high)}"


def range_words(low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f"[{low:g}, {high:g}]" + (" (a fraction)" if (low, high) == (0, 1) else "")
    if low is not None:
        return f">= {low:g}"
    return f"<= {high:g}"


def bounded(kind: type, low: float | None = None, high: float | None = None) -> Any:
    """An argparse `type` that converts to `kind` and rejects values outside [low, high], naming the range."""
    import argparse

    def convert(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a{'n' if kind is int else ''} {kind.__name__}") from None
        problem = out_of_range(value, low, high)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return value

    convert.__name__ = kind.__name__  # argparse names the type in its own messages
    return convert
