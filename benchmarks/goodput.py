"""Goodput accuracy and speed.

    .venv/bin/python benchmarks/goodput.py [--restart-runs 1] [--ranks 64 1024] [--no-demo]

1. The restart demo (the same run as tests/test_goodput_restart_demo.py): a real 4-rank gloo job that
   crashes once and resumes; attempts / steps redone / checkpoints against the workload's ground truth,
   and each time bucket's gap as a share of the wall time (target: counts exact, every gap within 2%).
2. The real logs of ../shared/data/training_logs and the written excerpts of tests/data/goodput: wall time,
   goodput and buckets, to read beside their TRUTH headers; then the real fragments of frameworks no row
   listed (tests/test_goodput_unseen_formats.py), with the span their own lines give.
3. Speed: `goodput` on N ranks' synthetic attempt/progress/checkpoint records (2 attempts, 2,000 steps),
   with the ratio to the smallest N (target: 1,024 ranks under 10 s).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if not __package__:
    sys.path.insert(0, str(ROOT))

from scope.analyzers.goodput import goodput  # noqa: E402
from scope.analyzers.goodput.truth import compare, summary_line  # noqa: E402

from benchmarks.shared_data import shared_data  # noqa: E402

LOGS = [
    *sorted((shared_data() / "training_logs").glob("*.txt")),
    *sorted((ROOT / "tests" / "data" / "goodput").glob("*.log")),
]


def restart_accuracy(runs: int) -> None:
    from tests.test_goodput_restart_demo import run_restart_demo

    for i in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            run = run_restart_demo(Path(tmp) / "run")
            truth = json.loads((run / "ground_truth.json").read_text())
            result = compare(goodput(run), truth)
            gaps = ", ".join(f"{b} {g:.2f}%" for b, g in result["bucket_gap_pct"].items())
            print(f"restart demo #{i + 1}: {summary_line(result)}")
            print(f"  wall {result['wall_s']:.2f} s (truth {result['truth_wall_s']:.2f} s); gaps: {gaps}")


def _num(value: float | None, unit: str) -> str:
    """A figure the report may not know (a log whose wall time or productive time is unknown)."""
    return "unknown" if value is None else f"{value:.1f}{unit}"


def logs() -> None:
    for path in LOGS:
        r = goodput(path)
        if not r.timed:
            print(f"{path.name}: steps {r.acc.steps_completed}, attempts {len(r.acc.attempts)}; no times")
            continue
        parts = ", ".join(f"{b} {v:.1f}" for b, v in r.acc.buckets.items() if v)
        print(
            f"{path.name}: wall {_num(r.wall_s, ' s')}, goodput {_num(r.goodput_pct, '%')}, "
            f"steps {r.acc.steps_completed}, "
            f"redone {r.acc.steps_redone}, attempts {len(r.acc.attempts)}, saves {len(r.saves())}; {parts}"
        )


def fragments() -> None:
    from tests import test_goodput_unseen_formats as t

    named = {
        "detectron2": t.DETECTRON2,
        "maskrcnn": t.MASKRCNN,
        "opennmt": t.OPENNMT,
        "deepspeed 0.7": t.DEEPSPEED_07,
        "mmdet end": t.MMDET_END,
    }
    for name, lines in named.items():
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "train.log"
            path.write_text("\n".join(lines) + "\n")
            r = goodput(path)
            ended = ", ".join(a.ended for a in r.acc.attempts)
            wall = f"{r.wall_s:.2f} s" if r.timed else "no times"
            print(f"{name}: wall {wall}, steps {r.acc.steps_completed}, attempts {len(r.acc.attempts)} ({ended})")


def speed(ranks: list[int]) -> None:
    from tests.test_goodput_records import _synthetic_run

    base: float | None = None
    for n in ranks:
        with tempfile.TemporaryDirectory() as tmp:
            _synthetic_run(Path(tmp), n, 2000)
            t = time.perf_counter()
            goodput(Path(tmp))
            took = time.perf_counter() - t
        base = base or took
        print(f"{n:5d} ranks: {took:.2f} s ({took / base:.1f}x the {ranks[0]}-rank time)")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--restart-runs", type=int, default=1)
    p.add_argument("--ranks", type=int, nargs="+", default=[64, 1024])
    p.add_argument("--no-demo", action="store_true")
    args = p.parse_args()
    if not args.no_demo:
        restart_accuracy(args.restart_runs)
    logs()
    fragments()
    speed(args.ranks)


if __name__ == "__main__":
    main()
