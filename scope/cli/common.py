"""Pieces the subcommands share: progress bar, warnings, JSON output."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scope.options import bounded

if TYPE_CHECKING:
    from rich.console import Console

    from scope.options import Option

_consoles: dict[str, Console] = {}


def console(name: str) -> Console:
    """The rich console on stdout or stderr, made on first use: `scope --help` never loads rich."""
    if name not in _consoles:
        from rich.console import Console

        # soft_wrap: the terminal wraps long lines, rich inserts no newlines, so a warning's file path
        # stays one word a user can copy (a hard wrap split `rank0.json.gz: corrupt` at the space).
        _consoles[name] = Console(stderr=name == "stderr", highlight=False, soft_wrap=True)
    return _consoles[name]


def __getattr__(name: str) -> Any:  # `from scope.cli.common import stdout` keeps working, lazily
    if name in ("stdout", "stderr"):
        return console(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def add_engine_arguments(parser: Any) -> None:
    parser.add_argument(
        "--store",
        type=Path,
        default=None,
        help="store folder (default: PATH/store for a run directory, PATH/scope_store otherwise)",
    )
    parser.add_argument(
        "--engine",
        choices=("local", "dask"),
        default="local",
        help="where per-rank work runs (default: local process pool)",
    )
    parser.add_argument("--scheduler", default=None, help="Dask scheduler address (with --engine dask)")
    parser.add_argument("--workers", type=bounded(int, 1), default=None, help="parallel workers (default: CPU count)")
    parser.add_argument("--force", action="store_true", help="re-parse every rank even if the store is current")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    parser.add_argument(
        "--comm-kernel",
        action="append",
        default=None,
        metavar="REGEX[=OP]",
        help="GPU kernels whose name matches REGEX are communication (op OP, e.g. all_reduce); repeatable; "
        "also `comm_kernels = [...]` in scope.toml or [tool.scope] of pyproject.toml",
    )


def add_option_arguments(parser: argparse.ArgumentParser) -> None:
    """One flag per analyzer option (analyzers/options.py): the options are data, the flags follow."""
    from scope.analyzers.options import OPTIONS

    groups: dict[str, Any] = {}
    for options in OPTIONS.values():
        for option in options:
            target = parser
            if option.group:
                target = groups.setdefault(option.group, parser.add_argument_group(option.group))
            add_option_flag(target, option)


def add_option_flag(parser: Any, option: Option) -> None:
    shown = "" if option.default in (None, False) else f" (default {option.default})"
    if option.type is bool:
        parser.add_argument(option.flag, dest=option.name, action="store_true", default=None, help=option.help)
        return
    parser.add_argument(
        option.flag,
        dest=option.name,
        type=bounded(option.type, option.low, option.high) if option.type in (int, float) else option.type,
        default=None,  # unset: the analyzer applies the declared default
        metavar=option.metavar,
        choices=option.choices or None,
        help=option.help + shown,
    )


@contextmanager
def progress_bar(label: str, enabled: bool = True) -> Iterator[Any]:
    """Yields a callback (done, total) -> None that drives a rich progress bar on stderr."""
    stderr = console("stderr")
    if not enabled or not stderr.is_terminal:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=stderr,
        transient=True,
    ) as bar:
        task = bar.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update


def print_warnings(warnings: Sequence[object], errors: Sequence[str], limit: int = 20) -> None:
    """Errors, then warnings (strings, or scope.warnings records rendered as their sentence)."""
    from rich.markup import escape

    from scope.escapes import strip_escapes

    stderr = console("stderr")
    # A message quotes file names and log text: its brackets are not markup, its escapes never reach the terminal.
    for line in errors[:limit]:
        stderr.print(f"[red]error:[/red] {escape(strip_escapes(line))}")
    for warning in warnings[:limit]:
        stderr.print(f"[yellow]warning:[/yellow] {escape(strip_escapes(str(warning)))}")
    hidden = max(0, len(errors) - limit) + max(0, len(warnings) - limit)
    if hidden:
        stderr.print(f"... and {hidden} more (all of them are in the store's meta.json)")


def write_json(target: str, data: Any) -> None:
    """--json FILE, or '-' for stdout."""
    text = json.dumps(data, indent=2, default=_jsonable, allow_nan=False)
    if target == "-":
        sys.stdout.write(text + "\n")
    else:
        Path(target).write_text(text + "\n")


def _jsonable(value: Any) -> Any:
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)
