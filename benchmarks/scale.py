"""Scale benchmark: ingest + analyze synthesized runs of 64, 256 and 1,024 ranks with each engine.

Run by hand:  .venv/bin/python benchmarks/scale.py [--ranks 64,256,1024] [--engines local,dask]
              [--from PATH] [--hta-python PATH]

Per run: wall time, peak RSS of the whole process tree and of the largest single process (a worker),
events/s. HTA's TraceAnalysis load runs on the same traces where it can (<= 64 ranks), in the same run.
Findings must be identical across engines; the script says so. Targets here (2 cores, 24 GiB): time
linear in ranks, per-worker memory flat, 1,024 ranks of ~50k events each in under 10 minutes and 4 GiB.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SOURCE = ROOT.parent / "shared" / "data" / "hta" / "nccl_parser_config"
HTA_CODE = """
import sys, logging
logging.disable(logging.CRITICAL)
from hta.trace_analysis import TraceAnalysis
ta = TraceAnalysis(trace_dir=sys.argv[1])
ta.get_temporal_breakdown(visualize=False)
print(sum(len(ta.t.get_trace(r)) for r in ta.t.get_all_traces()))
"""


def measured(cmd: list[str]) -> dict[str, float]:
    """Run cmd; sample RSS of its process tree every 50 ms."""
    start = time.perf_counter()
    proc = psutil.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak_total = peak_single = 0
    while proc.poll() is None:
        try:
            rss = [p.memory_info().rss for p in [proc, *proc.children(recursive=True)]]
            peak_total, peak_single = max(peak_total, sum(rss)), max(peak_single, max(rss))
        except psutil.Error:
            pass
        time.sleep(0.05)
    _, err = proc.communicate()
    if proc.returncode not in (0, 4):
        raise RuntimeError(f"{' '.join(cmd[:4])} failed ({proc.returncode}): {err[-1500:]}")
    return {"wall_s": time.perf_counter() - start, "peak_mb": peak_total / 2**20, "worker_mb": peak_single / 2**20}


def synth(ranks: int, source: Path, out: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "synth.py"),
            "--ranks",
            str(ranks),
            "--from",
            str(source),
            "--out",
            str(out),
            "--straggler",
            str(ranks // 3),
        ],
        check=True,
        capture_output=True,
    )


def analyze(run: Path, engine: str, tmp: Path) -> tuple[dict[str, float], dict]:
    store, out = tmp / f"store-{engine}", tmp / f"{engine}.json"
    cmd = [
        sys.executable,
        "-m",
        "scope",
        "analyze",
        str(run),
        "--store",
        str(store),
        "--engine",
        engine,
        "--force",
        "-q",
        "--no-tables",
        "--json",
        str(out),
    ]
    result = measured(cmd)
    report = json.loads(out.read_text())
    meta = json.loads((store / "meta.json").read_text())
    result["events"] = sum(m["n_events"] for m in meta["ranks"].values())
    shutil.rmtree(store, ignore_errors=True)
    return result, report


def hta_load(run: Path, hta_python: str, tmp: Path) -> dict[str, float]:
    flat = tmp / "hta-flat"
    flat.mkdir()
    for trace in run.glob("ranks/*/traces/*.json.gz"):
        (flat / f"rank-{trace.parent.parent.name}.json.gz").symlink_to(trace)
    try:
        return measured([hta_python, "-c", HTA_CODE, str(flat)])
    finally:
        shutil.rmtree(flat, ignore_errors=True)


def findings_key(report: dict) -> list:
    return sorted((f["kind"], tuple(f["ranks"]), tuple(f["steps"])) for f in report["findings"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", default="64,256,1024")
    parser.add_argument("--engines", default="local,dask")
    parser.add_argument("--from", dest="source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--hta-python", default=str(ROOT.parent / "hta-venv" / "bin" / "python"))
    args = parser.parse_args()
    rows = []
    for n in [int(x) for x in args.ranks.split(",")]:
        tmp = Path(tempfile.mkdtemp(prefix=f"scope-scale-{n}-"))
        try:
            run = tmp / "run"
            synth(n, args.source, run)
            reports = {}
            for engine in args.engines.split(","):
                result, reports[engine] = analyze(run, engine, tmp)
                rows.append((n, engine, result))
                print_row(n, engine, result)
            if n <= 64 and Path(args.hta_python).exists():
                hta = hta_load(run, args.hta_python, tmp)
                rows.append((n, "HTA load+breakdown", hta))
                print_row(n, "HTA load+breakdown", hta)
            keys = {e: findings_key(r) for e, r in reports.items()}
            same = len({json.dumps(k) for k in keys.values()}) == 1
            stragglers = [f[1] for f in next(iter(keys.values())) if f[0] == "straggler"]
            print(
                f"  {n} ranks: findings identical across engines: {same}; straggler findings name {stragglers} "
                f"(injected: {n // 3})"
            )
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print_scaling(rows)
    return 0


def print_row(n: int, engine: str, r: dict[str, float]) -> None:
    rate = f"{r['events'] / r['wall_s']:>10,.0f} ev/s" if "events" in r else ""
    print(
        f"{n:>5} ranks  {engine:<20} wall {r['wall_s']:>7.1f} s  peak tree {r['peak_mb']:>7.0f} MB  "
        f"largest process {r['worker_mb']:>6.0f} MB  {rate}",
        flush=True,
    )


def print_scaling(rows: list) -> None:
    by_engine: dict[str, list] = {}
    for n, engine, r in rows:
        by_engine.setdefault(engine, []).append((n, r))
    for engine, runs in by_engine.items():
        if len(runs) < 2:
            continue
        (n0, r0), (n1, r1) = runs[0], runs[-1]
        print(
            f"{engine}: {n1 / n0:.0f}x ranks -> {r1['wall_s'] / r0['wall_s']:.1f}x time, "
            f"{r1['worker_mb'] / r0['worker_mb']:.2f}x largest-process memory"
        )


if __name__ == "__main__":
    sys.exit(main())
