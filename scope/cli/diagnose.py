"""`scope diagnose PATH [--json FILE]`: the root cause of a failed or hung run, its rank, host and evidence."""

from __future__ import annotations

import argparse
from pathlib import Path

from scope.errors import EXIT_OK, EXIT_PARTIAL

NAME = "diagnose"
HELP = "name the root cause of a failed or hung run (logs, Flight Recorder dumps, kernel messages)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path", type=Path, help="run directory, or any folder (or file) of logs, dmesg captures and FR dumps"
    )
    parser.add_argument("--json", metavar="FILE", default=None, help="write the diagnosis as JSON ('-' for stdout)")
    parser.add_argument("--workers", type=int, default=None, help="parallel readers (default: CPU count)")


def run(args: argparse.Namespace) -> int:
    from analyzers.diagnose import diagnose
    from scope.cli.common import write_json

    report = diagnose(args.path, workers=args.workers)
    if args.json:
        write_json(args.json, report.to_json())
    if args.json != "-":
        print(report.render_text(), end="")
    # Exit 4 when some file could not be read: the diagnosis stands on the others.
    return EXIT_PARTIAL if report.inputs.get("unreadable") else EXIT_OK
