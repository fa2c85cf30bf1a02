"""`scope goodput PATH`: where a job's wall time went across failures and restarts, from scope's records
or from the logs the job already writes; checkpoint cost and cadence."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import TYPE_CHECKING

from scope.errors import EXIT_INPUT, EXIT_OK, EXIT_PARTIAL, ScopeError
from scope.render import FORMATS

if TYPE_CHECKING:
    from scope.inputs import Inventory

NAME = "goodput"
HELP = "split a job's wall time into productive steps, initialization, checkpoints, redone work, restarts, hangs"


def positive_hours(text: str) -> float:
    """--mtbf: a finite number of hours above 0 (argparse turns the error into a usage message, exit 2)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of hours") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: the mean time between failures must be a number of hours above 0")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", type=Path, help="run directory, a training log, or a folder of logs")
    parser.add_argument("--json", metavar="FILE", default=None, help="write the report as JSON ('-' for stdout)")
    parser.add_argument("--format", choices=FORMATS, default="text", help="what to print (default: text)")
    parser.add_argument(
        "--mtbf",
        type=positive_hours,
        default=None,
        metavar="HOURS",
        help="mean time between failures to use for the checkpoint cadence (default: observed in this job)",
    )
    parser.add_argument("--no-diagnose", action="store_true", help="do not link failures to their diagnosis")


def run(args: argparse.Namespace) -> int:
    from scope.analyzers.goodput import found_anything, goodput
    from scope.analyzers.goodput.states import FAILED_ENDS
    from scope.cli.common import write_json
    from scope.inputs import Inventory
    from scope.render import render, wrap_text

    if not args.path.exists():
        raise ScopeError(f"{args.path}: no such file or directory", EXIT_INPUT)
    inputs = Inventory.scan(args.path)  # PATH listed once: goodput and the diagnosis of its failures
    report = goodput(inputs, mtbf_s=args.mtbf * 3600 if args.mtbf else None)
    if not found_anything(report):
        raise ScopeError(
            f"{args.path}: no training progress found: no step line of a known format (scope goodput --help; "
            "formats in scope/analyzers/goodput/formats/), no 3 or more lines with an increasing step counter "
            "and a per-step time with its unit or a timestamp (docs/goodput-logs.md), and no scope run records",
            EXIT_INPUT,
        )
    if not args.no_diagnose and any(a.ended in FAILED_ENDS for a in report.acc.attempts):
        _link(report, inputs)
    result = report.result()  # the typed result `scope analyze` keeps too: one JSON contract, one renderer
    if args.json:
        write_json(args.json, result.to_dict())
    if args.json != "-":
        text = render(result, args.format)
        print(wrap_text(text) if args.format == "text" else text, end="")
    return EXIT_PARTIAL if report.warnings else EXIT_OK


def _link(report: object, inputs: Inventory) -> None:
    from scope.analyzers.diagnose import diagnose
    from scope.analyzers.goodput import link_diagnosis
    from scope.analyzers.goodput_spec import ANALYZER
    from scope.causality import link_findings

    try:
        diag = diagnose(inputs)
    except ScopeError:
        return
    failures = diag.findings
    linked = link_findings([*failures, *report.findings], ANALYZER.link_rules)  # type: ignore[attr-defined]
    link_diagnosis(report, [f for f in linked if f not in report.findings])  # type: ignore[arg-type, attr-defined]
