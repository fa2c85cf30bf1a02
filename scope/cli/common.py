"""Pieces the subcommands share: progress bar, warnings, JSON output."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

stderr = Console(stderr=True, highlight=False)
stdout = Console(highlight=False, soft_wrap=True)


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
    parser.add_argument("--workers", type=int, default=None, help="parallel workers (default: CPU count)")
    parser.add_argument("--force", action="store_true", help="re-parse every rank even if the store is current")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    parser.add_argument(
        "--comm-kernel",
        action="append",
        default=[],
        metavar="REGEX[=OP]",
        help="GPU kernels whose name matches REGEX are communication (op OP, e.g. all_reduce); repeatable; "
        "also `comm_kernels = [...]` in scope.toml or [tool.scope] of pyproject.toml",
    )


@contextmanager
def progress_bar(label: str, enabled: bool = True) -> Iterator[Any]:
    """Yields a callback (done, total) -> None that drives a rich progress bar on stderr."""
    if not enabled or not stderr.is_terminal:
        yield None
        return
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


def print_warnings(warnings: list[str], errors: list[str], limit: int = 20) -> None:
    for line in errors[:limit]:
        stderr.print(f"[red]error:[/red] {line}")
    for line in warnings[:limit]:
        stderr.print(f"[yellow]warning:[/yellow] {line}")
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
