"""`scope compare A B`: what changed between two runs (step budget, ranks, ops, collectives, findings).

A and B are run directories, trace folders or stores; each is analyzed as `scope analyze` would,
unless its store already holds an analysis newer than its inputs. `--fail-if-slower 5%` makes it a CI
gate: exit 6 when B's median step is more than 5% slower than A's, with the top causes printed.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from scope.errors import EXIT_OK, EXIT_SLOWER, ScopeError
from scope.render import FORMATS

if TYPE_CHECKING:
    from scope.compare.runs import Side

NAME = "compare"
HELP = "compare two runs: step-time change by cause, per rank, per op and kernel, per collective, findings"


def threshold(text: str) -> float:
    """'5%' or '5' -> 0.05; '0.05' alone is read as 0.05% (a percentage is always meant)."""
    value = text.strip().rstrip("%").strip()
    try:
        pct = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage (e.g. 5%)") from None
    if not math.isfinite(pct) or pct < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: the threshold must be a percentage >= 0")
    return pct / 100.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from scope.cli.common import add_analyzer_arguments, add_run_arguments

    parser.add_argument("a", type=Path, help="the baseline run: run directory, folder of traces or store")
    parser.add_argument("b", type=Path, help="the run to compare with it (same kinds of path)")
    parser.add_argument("--json", metavar="FILE", default=None, help="write the comparison as JSON ('-' for stdout)")
    parser.add_argument("--format", choices=FORMATS, default="text", help="what to print (default: text)")
    parser.add_argument(
        "--fail-if-slower",
        type=threshold,
        default=None,
        metavar="PCT",
        help=f"exit {EXIT_SLOWER} when B's median step time is more than PCT (e.g. 5%%) slower than A's",
    )
    parser.add_argument(
        "--reanalyze", action="store_true", help="analyze both runs again even when their stores hold an analysis"
    )
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress messages")
    add_run_arguments(parser, only=("workers",))
    add_analyzer_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from scope.analysis import options_of
    from scope.cli.common import option_values, write_json
    from scope.compare import compare_paths, slower_by
    from scope.render import render, wrap_text
    from scope.render.compare import top_causes

    options = option_values(args, options_of())
    comparison = compare_paths(args.a, args.b, options, reanalyze=args.reanalyze)
    result = comparison.result()  # the typed result: one JSON contract, the one renderer table
    data = result.to_dict()
    if args.json:
        write_json(args.json, data)
    if args.json != "-":
        text = render(result, args.format)
        sys.stdout.write(wrap_text(text) if args.format == "text" else text)
    if args.fail_if_slower is None:
        return EXIT_OK
    slower = slower_by(comparison)
    limit = args.fail_if_slower
    if math.isnan(slower):
        # A run that failed before its profiled steps (what a CI gate most needs to catch) has no step
        # time: the gate cannot pass it, and says which run and why (exit 3, not "slower").
        missing = [f"{s.label} ({s.path})" for s in (comparison.a, comparison.b) if not _has_steps(s)]
        raise ScopeError(
            f"--fail-if-slower: {' and '.join(missing) or 'a run'} has no profiled steps, so there is no step "
            "time to compare (did the job fail before the profiled window?)"
        )
    med = data["step"]
    what = (
        f"median step {med['a_median_step_us'] / 1e3:,.1f} -> {med['b_median_step_us'] / 1e3:,.1f} ms "
        f"({100 * slower:+.1f}%, threshold +{100 * limit:g}%)"
    )
    out = sys.stderr if args.json == "-" else sys.stdout
    if slower > limit:
        causes = "; ".join(top_causes(data)) or "no budget to explain it"
        print(f"FAIL: B is slower than A: {what}. Top causes: {causes}", file=out)
        return EXIT_SLOWER
    print(f"OK: B is not slower than A beyond the threshold: {what}", file=out)
    return EXIT_OK


def _has_steps(side: Side) -> bool:
    from scope.compare.budget import budget_of

    return not math.isnan(budget_of(side.analysis).median_step_us())
