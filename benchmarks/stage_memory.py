"""Where the coordinator's memory grows with the ranks: peak RSS and wall time of each stage of one analysis,
for two or more run directories of different sizes, and each stage's growth per 1,000 ranks between them.

Run by hand:  .venv/bin/python benchmarks/stage_memory.py RUN_1024 RUN_2048 [--workers 2] [--critical-path-max-events 1]
              (runs made by benchmarks/synth.py, e.g. --ranks 1024 --from ../shared/data/hta/nccl_parser_config)

Each run is analyzed in a fresh process (ingest forced, the store in a temporary folder), as `scope analyze
--json` does it: the stages are ingest, the matching of the collectives, the per-rank pass, each analyzer,
the save and the JSON. Each stage's `own CPU` is this process's alone (the coordinator's serial work; a
worker pool's CPU is not in it). A sampler thread reads the process's RSS every 20 ms; a stage's line is its peak
(`peak`) and what the process holds when it ends (`after`). The stage whose `peak` grows fastest per 1,000
ranks is the one that sets the largest process at scale (benchmarks/scale.py reports that process whole).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


class Sampler:
    """This process's RSS peak since the last mark, and each stage's peak, RSS after and wall time."""

    def __init__(self) -> None:
        import psutil

        self.process = psutil.Process()
        self.peak = 0
        self.since = time.perf_counter()
        self.cpu = time.process_time()
        self.stages: list[dict[str, Any]] = []
        threading.Thread(target=self._sample, daemon=True).start()

    def _sample(self) -> None:
        while True:
            self.peak = max(self.peak, self.process.memory_info().rss)
            time.sleep(0.02)

    def mark(self, stage: str) -> None:
        now, cpu, rss = time.perf_counter(), time.process_time(), self.process.memory_info().rss
        peak = max(self.peak, rss)
        self.stages.append(
            {
                "stage": stage,
                "peak_mb": peak / 2**20,
                "after_mb": rss / 2**20,
                "wall_s": now - self.since,
                "cpu_s": cpu - self.cpu,
            }
        )
        self.peak, self.since, self.cpu = 0, now, cpu


def _marked(sampler: Sampler, owner: Any, name: str, stage: str) -> None:
    """owner.name, wrapped to mark the end of its stage each time it returns."""
    inner = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        out = inner(*args, **kwargs)
        sampler.mark(stage)
        return out

    setattr(owner, name, wrapper)


def profile_one(run: str, store: str, options: dict[str, Any], out: str) -> None:
    """In the child process: one analysis of RUN with its stages marked; the stages as JSON to OUT."""
    from scope.engine import use_system_allocator

    use_system_allocator()  # as the `scope` command does, before pyarrow is imported
    sampler = Sampler()
    import scope.analysis as analysis
    import scope.rankpass.match as match
    import scope.rankpass.run as rankpass
    from scope.result import Analysis

    sampler.mark("imports")
    _marked(sampler, analysis, "_ingest", "ingest")
    _marked(sampler, match, "matched_of", "matching")
    _marked(sampler, rankpass, "make_tables", "per-rank pass")
    _marked(sampler, Analysis, "save_to", "save")
    isolated = analysis._run_isolated

    def each(spec: Any, ctx: Any) -> Any:
        result = isolated(spec, ctx)
        sampler.mark(f"analyzer {spec.name}")
        return result

    analysis._run_isolated = each
    result = analysis.run(run, {**options, "store": store, "force": True})
    from scope.cli.common import write_json_text
    from scope.render.json import jsonable

    write_json_text(str(Path(store) / "out.json"), result.iter_json(indent=2, default=jsonable, allow_nan=False))
    sampler.mark("json")
    Path(out).write_text(json.dumps(sampler.stages))


def measure(run: Path, options: dict[str, Any]) -> tuple[int, list[dict[str, Any]], float]:
    """The stages of one analysis of RUN (in a fresh process), its rank count and the load beside it."""
    ranks = sum(1 for p in (run / "ranks").iterdir() if p.is_dir()) if (run / "ranks").is_dir() else 0
    with tempfile.TemporaryDirectory(prefix="scope-stage-memory-") as tmp:
        out = Path(tmp) / "stages.json"
        cmd = [sys.executable, __file__, "--child", str(run), str(Path(tmp) / "store"), json.dumps(options), str(out)]
        subprocess.run(cmd, check=True)
        return ranks, json.loads(out.read_text()), os.getloadavg()[0]


def _merged(stages: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Stages by name; a stage marked twice (the diagnosis' own build) keeps its larger peak, summed wall."""
    out: dict[str, dict[str, float]] = {}
    for s in stages:
        seen = out.setdefault(s["stage"], {"peak_mb": 0.0, "after_mb": 0.0, "wall_s": 0.0, "cpu_s": 0.0})
        seen["peak_mb"] = max(seen["peak_mb"], s["peak_mb"])
        seen["after_mb"] = s["after_mb"]
        seen["wall_s"] += s["wall_s"]
        seen["cpu_s"] += s["cpu_s"]
    return out


def report(results: list[tuple[int, list[dict[str, Any]], float]]) -> None:
    results = sorted(results, key=lambda r: r[0])
    merged = [_merged(stages) for _, stages, _ in results]
    header = "".join(f"  {n:>6} ranks: peak / after MB, wall s, own CPU s" for n, _, _ in results)
    print(f"{'stage':<24}{header}  peak growth per 1,000 ranks")
    for name in merged[0]:
        cells = "".join(
            f"  {m[name]['peak_mb']:>12.1f} / {m[name]['after_mb']:>6.1f}, {m[name]['wall_s']:>7.1f}, "
            f"{m[name]['cpu_s']:>9.1f}"
            if name in m
            else " " * 45
            for m in merged
        )
        growth = ""
        first, last = merged[0].get(name), merged[-1].get(name)
        if first and last and results[-1][0] > results[0][0]:
            per = (last["peak_mb"] - first["peak_mb"]) / (results[-1][0] - results[0][0]) * 1000
            growth = f"  {per:+.1f} MB"
        print(f"{name:<24}{cells}{growth}")
    for n, stages, load in results:
        print(f"{n} ranks: largest RSS {max(s['peak_mb'] for s in stages):.1f} MB, load {load:.1f}")


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        profile_one(sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), sys.argv[5])
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", type=Path, help="run directories of different sizes (benchmarks/synth.py)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--critical-path-max-events",
        type=int,
        help="1 leaves the cross-rank critical path out (below its default 5M events it is built, and its graph "
        "is then most of the memory: benchmarks/scale.py takes the same option)",
    )
    args = parser.parse_args()
    options: dict[str, Any] = {"workers": args.workers}
    if args.critical_path_max_events is not None:
        options["critical_path_max_events"] = args.critical_path_max_events
    report([measure(run, options) for run in args.runs])
    return 0


if __name__ == "__main__":
    sys.exit(main())
