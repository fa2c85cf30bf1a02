"""Pieces the subcommands share: progress bar, warnings, JSON output."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scope.options import bounded
from scope.render.json import jsonable

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


def add_run_arguments(parser: Any, only: tuple[str, ...] = ()) -> None:
    """One flag per run option (scope.options.RUN_OPTIONS: store, engine, workers, ...), or only those named."""
    from scope.options import RUN_OPTIONS

    for option in RUN_OPTIONS:
        if not only or option.name in only:
            add_option_flag(parser, option)


def add_analyzer_arguments(parser: argparse.ArgumentParser) -> None:
    """One flag per analyzer option, as each analyzer's record declares it (scope.analyzers): the options are
    data, the flags follow; options with a group share a section of --help."""
    from scope.analyzers import all_options

    groups: dict[str, Any] = {}
    for option in all_options():
        target = parser
        if option.group:
            target = groups.setdefault(option.group, parser.add_argument_group(option.group))
        add_option_flag(target, option)


def add_option_flag(parser: Any, option: Option) -> None:
    """The option's flag (--name-with-dashes). Unset, it stays None: the library applies the declared default."""
    if option.type is bool:
        parser.add_argument(option.flag, dest=option.name, action="store_true", default=None, help=option.help)
        return
    if option.type is list:  # repeatable: each use adds one value
        parser.add_argument(
            option.flag, dest=option.name, action="append", default=None, metavar=option.metavar, help=option.help
        )
        return
    shown = "" if option.default is None else f" (default {option.default})"
    parser.add_argument(
        option.flag,
        dest=option.name,
        type=bounded(option.type, option.low, option.high) if option.type in (int, float) else option.type,
        default=None,
        metavar=option.metavar,
        choices=option.choices or None,
        help=option.help + shown,
    )


def option_values(args: argparse.Namespace, options: list[Option] | tuple[Option, ...]) -> dict[str, Any]:
    """The options given as flags (unset ones left out), as the library's mapping."""
    return {o.name: getattr(args, o.name) for o in options if getattr(args, o.name, None) is not None}


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
    text = json.dumps(data, indent=2, default=jsonable, allow_nan=False)
    if target == "-":
        sys.stdout.write(text + "\n")
    else:
        Path(target).write_text(text + "\n")


def write_json_text(target: str, chunks: Iterable[str]) -> None:
    """--json FILE, or '-' for stdout, from JSON text made piece by piece (Analysis.iter_json): the
    analysis of thousands of ranks is never one string."""
    if target == "-":
        sys.stdout.writelines(chunks)
        sys.stdout.write("\n")
        return
    with open(target, "w") as fh:
        fh.writelines(chunks)
        fh.write("\n")
