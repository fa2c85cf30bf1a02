"""`scope analyze PATH`: the CLI face of `scope.analysis.run`; flags in, a rendered report out."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from scope.render import FORMATS

NAME = "analyze"
HELP = "analyze a run: findings (stragglers, comm-bound steps, failures, ...) and per-rank, per-step tables"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from scope.cli.common import add_analyzer_arguments, add_run_arguments

    parser.add_argument("path", type=Path, help="run directory, folder of traces (and logs), or one trace file")
    parser.add_argument("--json", metavar="FILE", default=None, help="write the result as JSON ('-' for stdout)")
    parser.add_argument("--format", choices=FORMATS, default="text", help="what to print (default: text)")
    parser.add_argument("--tables", action="store_true", help="also print every analyzer table in full")
    parser.add_argument(
        "--table", action="append", default=[], metavar="NAME", help="also print this table in full (repeatable)"
    )
    parser.add_argument("--no-tables", action="store_true", help="findings only (no per-rank summary)")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    add_run_arguments(parser)
    add_analyzer_arguments(parser)


def analysis_options(args: argparse.Namespace) -> dict[str, Any]:
    """The flags that are analysis options (scope.analysis.options_of), as the library's mapping."""
    from scope.analysis import options_of
    from scope.cli.common import option_values

    return option_values(args, options_of())


def run(args: argparse.Namespace) -> int:
    from scope.analysis import run as run_analysis
    from scope.cli.common import print_warnings, progress_bar, write_json_text
    from scope.escapes import strip_escapes
    from scope.render import render
    from scope.render.json import jsonable

    with progress_bar("ingesting ranks", enabled=not args.quiet) as progress:
        analysis = run_analysis(args.path, analysis_options(args), progress=progress)
    print_warnings(analysis.warnings, [])
    if args.json:
        write_json_text(args.json, analysis.iter_json(indent=2, default=jsonable, allow_nan=False))
    if args.json != "-":
        tables: list[str] | bool = True if args.tables else list(args.table)
        text = render(analysis, args.format, tables=tables, summary=not args.no_tables)
        print(strip_escapes(text), end="")  # nothing a log or trace holds reaches the terminal raw
    return analysis.exit_code
