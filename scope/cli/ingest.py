"""`scope ingest PATH`: parse the traces of a run into its store."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from scope.errors import EXIT_OK, EXIT_PARTIAL

if TYPE_CHECKING:
    from scope.ingest import IngestReport

NAME = "ingest"
HELP = "parse the traces of a run directory, a folder of traces or one trace file into a columnar store"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from scope.cli.common import add_run_arguments

    parser.add_argument("path", type=Path, help="run directory, folder of Kineto traces, or one trace file")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    add_run_arguments(parser)


def run_ingest(args: argparse.Namespace) -> IngestReport:
    from scope.cli.common import option_values, print_warnings, progress_bar
    from scope.ingest import ingest
    from scope.ingest.comm_rules import load_rules
    from scope.inputs import Inventory
    from scope.options import RUN_OPTIONS

    opts = {o.name: o.default for o in RUN_OPTIONS} | option_values(args, RUN_OPTIONS)
    inputs = Inventory.scan(args.path, opts["store"])  # PATH listed once: the rules' config file and the traces
    rules = load_rules(inputs, opts["comm_kernel"])
    with progress_bar("ingesting ranks", enabled=not args.quiet) as progress:
        report = ingest(
            inputs,
            opts["store"],
            engine=opts["engine"],
            workers=opts["workers"],
            scheduler=opts["scheduler"],
            force=bool(opts["force"]),
            progress=progress,
            rules=rules,
        )
    _print_notes(report.notes)
    print_warnings(report.warnings, report.errors)
    _print_rule_counts(report.store.meta.get("run", {}).get("comm_kernels", {}))
    return report


def _print_notes(notes: list[str]) -> None:
    from scope.cli.common import stderr

    for note in notes:
        stderr.print(f"note: {note}")


def _print_rule_counts(counts: dict[str, int]) -> None:
    """How many kernel launches each user rule made communication (a rule matching 0 is likely a typo)."""
    from scope.cli.common import stderr

    for label, n in counts.items():
        if label.startswith("user:"):
            stderr.print(f"comm-kernel rule {label[5:]!r}: {n:,} kernel launch(es)")


def run(args: argparse.Namespace) -> int:
    from scope.cli.common import stdout

    report = run_ingest(args)
    store = report.store
    n_events = sum(m["n_events"] for m in store.meta["ranks"].values())
    stdout.print(
        f"store: {store.root}  ranks: {len(store.ranks)}  events: {n_events:,}  "
        f"parsed: {len(report.parsed)}  reused: {len(report.reused)}"
    )
    return EXIT_PARTIAL if report.partial else EXIT_OK
