"""Compare benchmark: two synthesized N-rank runs (default 1,024), compared from their stores.

Run by hand:  .venv/bin/python benchmarks/compare.py [--ranks 1024] [--from PATH] [--keep DIR]
(--keep DIR again reuses the runs built there and times the compare alone.)

Builds run A (healthy: per-rank jitter only) and run B (the same, with three stragglers 1.6x slower)
with benchmarks/synth.py from real traces (sample_traces/healthy by default), analyzes each once (timed apart:
that is `scope analyze`'s cost), then times `scope compare A/store B/store` in a fresh process and
samples the peak RSS of its process tree. Target: under 10 s and 2 GiB at 1,024 ranks (issue #34).
Prints the compare's wall time and memory, and its ratio to the two analyses it reads.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SOURCE = ROOT / "sample_traces" / "healthy"
STRAGGLERS = (7, 300, 901)
TARGET_S, TARGET_MB = 10.0, 2048.0


def measured(cmd: list[str]) -> dict[str, float]:
    """Run cmd; sample the RSS of its process tree every 20 ms."""
    start = time.perf_counter()
    proc = psutil.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = 0
    while proc.poll() is None:
        with contextlib.suppress(psutil.Error):  # a child may end between listing and reading it
            peak = max(peak, sum(p.memory_info().rss for p in [proc, *proc.children(recursive=True)]))
        time.sleep(0.02)
    out, err = proc.communicate()
    if proc.returncode not in (0, 4):
        raise RuntimeError(f"{' '.join(cmd[3:6])} failed ({proc.returncode}): {err[-2000:]}")
    return {"wall_s": time.perf_counter() - start, "peak_mb": peak / 2**20, "stdout": out}  # type: ignore[dict-item]


SYNTH = Path(__file__).resolve().parent / "synth.py"


def scope(*args: str) -> list[str]:
    return [sys.executable, "-m", "scope", *args]


def build(root: Path, ranks: int, source: Path) -> tuple[Path, Path, dict[str, float]]:
    """Synthesize and analyze A and B; returns their stores and the analyses' wall times."""
    times = {}
    stores = []
    for name, extra in (("A", []), ("B", ["--straggler", ",".join(str(r % ranks) for r in STRAGGLERS)])):
        run = root / name
        subprocess.run(
            [
                sys.executable,
                str(SYNTH),
                "--ranks",
                str(ranks),
                "--from",
                str(source),
                "--out",
                str(run),
                "--seed=1",
                *extra,
            ],
            check=True,
            capture_output=True,
        )
        times[name] = measured(scope("analyze", str(run), "-q", "--no-tables"))["wall_s"]
        stores.append(run / "store")
    return stores[0], stores[1], times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=1024)
    parser.add_argument("--from", dest="source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--keep", type=Path, default=None, help="build the runs here and keep them")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="scope-compare-bench-"))
    try:
        if all((root / n / "store" / "analysis.json").is_file() for n in "AB"):  # --keep DIR of an earlier run
            a, b, analyze_s = root / "A" / "store", root / "B" / "store", {"A": 0.0, "B": 0.0}
        else:
            a, b, analyze_s = build(root, args.ranks, args.source)
        out = root / "compare.json"
        result = measured(scope("compare", str(a), str(b), "-q", "--json", str(out)))
        data = json.loads(out.read_text())
        report = {
            "ranks": args.ranks,
            "source": str(args.source),
            "analyze_a_s": round(analyze_s["A"], 1),
            "analyze_b_s": round(analyze_s["B"], 1),
            "compare_s": round(result["wall_s"], 2),
            "compare_peak_mb": round(result["peak_mb"]),
            "compare_vs_analyze": round(result["wall_s"] / (analyze_s["A"] + analyze_s["B"]), 3)
            if analyze_s["A"]
            else None,
            "became_stragglers": data["ranks"]["became_stragglers"],
            "step_change_ms": round(data["step"]["delta_mean_step_us"] / 1e3, 2),
            "within_target": result["wall_s"] < TARGET_S and result["peak_mb"] < TARGET_MB,
        }
        print(json.dumps(report, indent=1))
        return 0 if report["within_target"] else 1
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
