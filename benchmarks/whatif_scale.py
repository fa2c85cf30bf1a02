"""What-if scale benchmark: a 1,024-worker, 50-step synthetic timeline grown from ByteDance's ST trace.

Run by hand:  .venv/bin/python benchmarks/whatif_scale.py [--dp-factor 128] [--steps 50] [--cause sequence_length]

ST is DP2 x PP4; repeating its DP ranks 128 times gives DP256 x PP4 = 1,024 workers. The schedule of
its first step is replayed with new durations for 50 steps (benchmarks/whatif_synth.py), then the whole
what-if analysis runs on it: dependency graph, T_nodelay, T_ideal, S by op type, DP rank, stage,
each worker and each step, M_W and M_S. Prints the time of each part (wall and CPU: on a shared
host the wall time says more about the neighbours). Target: well under a minute.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scope.analyzers.whatif.findings import whatif_findings  # noqa: E402
from scope.analyzers.whatif.model import analyze_ops  # noqa: E402

from benchmarks.whatif_synth import CAUSES, synthesize, tile_dp  # noqa: E402

SOURCE = ROOT.parent / "shared" / "data" / "straggler_analysis" / "trace-ST.parquet"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=SOURCE)
    parser.add_argument("--dp-factor", type=int, default=128)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--cause", choices=CAUSES, default="sequence_length")
    args = parser.parse_args()
    if not args.source.exists():
        print(f"{args.source}: not found (the benchmark grows its timeline from this trace)", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    ops = synthesize(tile_dp(pd.read_parquet(args.source), args.dp_factor), args.steps, pp=4, cause=args.cause)
    t1, c1 = time.perf_counter(), time.process_time()
    result = analyze_ops(ops, pp=4)
    t2, c2 = time.perf_counter(), time.process_time()
    findings = whatif_findings(result)
    workers = len(result.workers)
    print(f"timeline: {workers} workers, {len(result.steps)} steps, {len(ops):,} ops (cause {args.cause})")
    print(f"synthesize: {t1 - t0:.1f} s")
    print(
        f"what-if analysis: {t2 - t1:.1f} s wall, {c2 - c1:.1f} s CPU "
        f"(S = {result.slowdown:.3f}, waste {100 * result.waste:.1f}%, "
        f"M_W = {result.fix_workers['explained_by_removal']:.2f}, "
        f"M_S = {result.fix_last_stage['explained_by_removal']:.2f})"
    )
    print("findings:", ", ".join(f.kind for f in findings) or "none")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
