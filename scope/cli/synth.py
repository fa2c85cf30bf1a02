"""`scope synth --ranks N --from PATH --out DIR`: an N-rank run directory built from real traces."""

from __future__ import annotations

import argparse
from pathlib import Path

from scope.errors import EXIT_OK
from scope.options import bounded

NAME = "synth"
HELP = "synthesize an N-rank run (jitter, per-host clock offsets, injected stragglers) from real traces"


def _rank_list(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--ranks", type=bounded(int, 1, 16384), required=True, help="number of ranks to make (1..16384)"
    )
    parser.add_argument(
        "--from",
        dest="source",
        type=Path,
        required=True,
        help="real traces: a run directory, a folder of traces (e.g. sample_traces/...) or a file",
    )
    parser.add_argument("--out", type=Path, required=True, help="run directory to write")
    parser.add_argument("--ranks-per-host", type=bounded(int, 1), default=8)
    parser.add_argument(
        "--jitter", type=bounded(float, 0, 1), default=0.02, help="per-rank step-time jitter (fraction)"
    )
    parser.add_argument("--straggler", type=_rank_list, default=[], metavar="R[,R...]", help="ranks to slow down")
    parser.add_argument("--straggler-factor", type=bounded(float, 1), default=1.6)
    parser.add_argument("--clock-offset-us", type=float, default=2000.0, help="largest per-host clock offset")
    parser.add_argument("--seed", type=int, default=0)


def run(args: argparse.Namespace) -> int:
    from scope.cli.common import stdout
    from scope.synth import SynthSpec, synthesize

    spec = SynthSpec(
        ranks=args.ranks,
        source=args.source,
        out=args.out,
        ranks_per_host=args.ranks_per_host,
        jitter=args.jitter,
        stragglers=args.straggler,
        straggler_factor=args.straggler_factor,
        max_clock_offset_us=args.clock_offset_us,
        seed=args.seed,
    )
    manifest = synthesize(spec)
    stdout.print(
        f"wrote {manifest.world_size} ranks on {len(manifest.hosts)} hosts to {args.out}"
        + (f" (stragglers: {args.straggler})" if args.straggler else "")
    )
    return EXIT_OK
