"""Scale benchmark: ingest + analyze synthesized runs of 64, 256 and 1,024 ranks with each engine.

Run by hand:  .venv/bin/python benchmarks/scale.py [--ranks 64,256,1024] [--engines local,dask,dask-cli]
              [--from PATH] [--hta-python PATH] [--cluster-workers N]
              .venv/bin/python benchmarks/scale.py --ranks 1024,4096,16384 --engines local
              .venv/bin/python benchmarks/scale.py --ranks 512,2048 --engines local,dask-cli \
                  --from ../shared/data/hta/trace_filter --critical-path-max-events 1   # docs/dask.md

Engines: local (process pool), dask (a LocalCluster the command starts), dask-cli (a cluster started
here with Dask's CLI, `dask scheduler` + `dask worker --nworkers N --nthreads 1`, joined with
--scheduler; its start is not timed). Per run also the CPU spent per rank: by the coordinator (the
`scope analyze` process; with local, its pool too) and by the cluster's workers and scheduler.

Per run: wall time, peak RSS of the whole process tree and of the largest single process (the driver
or a worker), events/s and the load average beside it (the machine may be shared). Between sizes: the
memory slope of the largest process, MB per 1,000 ranks (flat is ~0; the driver must hold no per-rank
state beyond a small bound). HTA's TraceAnalysis load runs on the same traces where it can (<= 64
ranks), in the same run. Findings must be identical across engines, and name the injected straggler;
the script says so. Targets here (2 cores, 24 GiB): time linear in ranks, the largest process under
500 MB from 1,024 to 16,384 ranks (~27k events each), 16,384 ranks in under 10 minutes. Each
synthesized rank is a file of ~1 MB (16 GB at 16,384 ranks), removed after its size is measured.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script: benchmarks.* importable
from benchmarks.dask_cli import CliCluster, cli_cluster

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


def measured(cmd: list[str], cluster: CliCluster | None = None) -> dict[str, float]:
    """Run cmd; sample RSS and CPU time of its process tree every 50 ms (and the cluster's RSS)."""
    start = time.perf_counter()
    before = _cluster_cpu(cluster)
    proc = psutil.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peak_total = peak_single = peak_cluster = 0
    cpu = 0.0
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.extend(proc.stdout or []), daemon=True)
    reader.start()
    while proc.poll() is None:
        try:
            tree = [proc, *proc.children(recursive=True)]
            rss = [p.memory_info().rss for p in tree]
            peak_total, peak_single = max(peak_total, sum(rss)), max(peak_single, max(rss))
            cpu = max(cpu, _tree_cpu(proc, tree[1:]))
            if cluster is not None:
                peak_cluster = max(peak_cluster, max(p.memory_info().rss for p in cluster.processes()))
        except (psutil.Error, ValueError):
            pass
        time.sleep(0.05)
    reader.join(timeout=10)
    if proc.returncode not in (0, 4):
        raise RuntimeError(f"{' '.join(cmd[:4])} failed ({proc.returncode}): {''.join(out)[-1500:]}")
    after = _cluster_cpu(cluster)
    return {
        "wall_s": time.perf_counter() - start,
        "peak_mb": peak_total / 2**20,
        "worker_mb": peak_single / 2**20,
        "cluster_mb": peak_cluster / 2**20,
        "coordinator_cpu_s": cpu,
        "cluster_cpu_s": after - before,
    }


def _tree_cpu(proc: psutil.Process, children: list[psutil.Process]) -> float:
    """CPU seconds of proc, of its children that ended (reaped) and of those alive."""
    t = proc.cpu_times()
    alive = 0.0
    for child in children:
        with contextlib.suppress(psutil.Error):
            c = child.cpu_times()
            alive += c.user + c.system
    return t.user + t.system + t.children_user + t.children_system + alive


def _cluster_cpu(cluster: CliCluster | None) -> float:
    """CPU seconds so far of the cluster's scheduler, nannies and workers (alive now)."""
    total = 0.0
    for p in cluster.processes() if cluster else []:
        with contextlib.suppress(psutil.Error):
            c = p.cpu_times()
            total += c.user + c.system
    return total


def synth(ranks: int, source: Path, out: Path) -> None:
    free = shutil.disk_usage(out.parent).free
    need = ranks * (source_bytes(source) + (64 << 10))
    if need > free * 0.8:
        raise SystemExit(f"{ranks} ranks need ~{need / 2**30:.1f} GiB on {out.parent}; {free / 2**30:.1f} GiB free")
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


def source_bytes(source: Path) -> int:
    """What one synthesized rank weighs on disk, about: the largest source trace."""
    files = [source] if source.is_file() else [p for p in source.rglob("*.json*") if p.is_file()]
    return max((p.stat().st_size for p in files), default=1 << 20)


def analyze(
    run: Path, engine: str, tmp: Path, cluster: CliCluster | None = None, extra: tuple[str, ...] = ()
) -> tuple[dict[str, float], dict]:
    store, out = tmp / f"store-{engine}", tmp / f"{engine}.json"
    where = ["--engine", "dask", "--scheduler", cluster.address] if cluster else ["--engine", engine]
    where += extra
    cmd = [
        sys.executable,
        "-m",
        "scope",
        "analyze",
        str(run),
        "--store",
        str(store),
        *where,
        "--force",
        "-q",
        "--no-tables",
        "--json",
        str(out),
    ]
    result = measured(cmd, cluster)
    result["load"] = os.getloadavg()[0]
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
    parser.add_argument("--cluster-workers", type=int, default=2, help="dask-cli: worker processes (1 thread each)")
    parser.add_argument(
        "--critical-path-max-events",
        type=int,
        help="passed to scope analyze: 1 leaves the critical path out at every size, so that small runs "
        "(below its default 5M events) measure the per-rank cost, not the cross-rank graph's",
    )
    args = parser.parse_args()
    extra = (
        ()
        if args.critical_path_max_events is None
        else ("--critical-path-max-events", str(args.critical_path_max_events))
    )
    rows = []
    for n in [int(x) for x in args.ranks.split(",")]:
        tmp = Path(tempfile.mkdtemp(prefix=f"scope-scale-{n}-"))
        try:
            run = tmp / "run"
            synth(n, args.source, run)
            print(f"{n:>6} ranks: {du(run) / n / 1024:.0f} KB a rank on disk", flush=True)
            reports = {}
            for engine in args.engines.split(","):
                result, reports[engine] = run_engine(run, engine, tmp, args.cluster_workers, extra)
                rows.append((n, engine, result))
                print_row(n, engine, result)
            if n <= 64 and Path(args.hta_python).exists():
                hta = hta_load(run, args.hta_python, tmp)
                rows.append((n, "HTA load+breakdown", hta))
                print_row(n, "HTA load+breakdown", hta)
            print_equal(n, reports)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print_scaling(rows)
    print_ratios(rows)
    return 0


def run_engine(
    run: Path, engine: str, tmp: Path, workers: int, extra: tuple[str, ...] = ()
) -> tuple[dict[str, float], dict]:
    if engine != "dask-cli":
        return analyze(run, engine, tmp, extra=extra)
    with cli_cluster(workers, tmp / "dask-logs") as cluster:
        return analyze(run, engine, tmp, cluster, extra)


def du(path: Path) -> int:
    return sum(f.stat().st_blocks * 512 for f in path.rglob("*") if f.is_file())


def print_equal(n: int, reports: dict[str, dict]) -> None:
    keys = {e: findings_key(r) for e, r in reports.items()}
    same = len({json.dumps(k) for k in keys.values()}) == 1
    whole = len({json.dumps(r, sort_keys=True) for r in reports.values()}) == 1
    stragglers = [f[1] for f in next(iter(keys.values())) if f[0] == "straggler"]
    print(
        f"  {n} ranks: findings identical across engines: {same}; whole JSON (findings and tables) identical: "
        f"{whole}; straggler findings name {stragglers} (injected: {n // 3})",
        flush=True,
    )


def print_ratios(rows: list) -> None:
    """Each engine against local at the same size: time, and CPU per rank where it was spent."""
    local = {n: r for n, engine, r in rows if engine == "local"}
    for n, engine, r in rows:
        base = local.get(n)
        if engine == "local" or base is None or "events" not in r:
            continue
        print(
            f"{n:>6} ranks  {engine} vs local: time x{r['wall_s'] / base['wall_s']:.2f}, CPU per rank "
            f"{cpu_per_rank(r, n):.1f} vs {cpu_per_rank(base, n):.1f} ms"
        )


def cpu_per_rank(r: dict[str, float], n: int) -> float:
    return (r["coordinator_cpu_s"] + r["cluster_cpu_s"]) * 1e3 / n


def print_row(n: int, engine: str, r: dict[str, float]) -> None:
    rate = f"{r['events'] / r['wall_s']:>10,.0f} ev/s ({r['events'] / n:,.0f} a rank)" if "events" in r else ""
    load = f"  load {r['load']:.1f}" if "load" in r else ""
    cpu = f"  CPU/rank: coordinator {r['coordinator_cpu_s'] * 1e3 / n:.1f} ms" if "coordinator_cpu_s" in r else ""
    if r.get("cluster_cpu_s"):
        cpu += f", cluster {r['cluster_cpu_s'] * 1e3 / n:.1f} ms (its largest process {r['cluster_mb']:.0f} MB)"
    print(
        f"{n:>6} ranks  {engine:<20} wall {r['wall_s']:>7.1f} s  peak tree {r['peak_mb']:>7.0f} MB  "
        f"largest process {r['worker_mb']:>6.0f} MB  {rate}{load}{cpu}",
        flush=True,
    )


def print_scaling(rows: list) -> None:
    by_engine: dict[str, list] = {}
    for n, engine, r in rows:
        by_engine.setdefault(engine, []).append((n, r))
    for engine, runs in by_engine.items():
        if len(runs) < 2:
            continue
        for (n0, r0), (n1, r1) in itertools.pairwise(runs):
            largest, tree = slope(n0, r0["worker_mb"], n1, r1["worker_mb"]), slope(n0, r0["peak_mb"], n1, r1["peak_mb"])
            print(
                f"{engine}: {n0} -> {n1} ranks: largest process {largest:+.1f} MB per 1,000 ranks, "
                f"whole tree {tree:+.1f} MB per 1,000 ranks, time x{r1['wall_s'] / r0['wall_s']:.2f}"
            )
        (n0, r0), (n1, r1) = runs[0], runs[-1]
        print(
            f"{engine}: {n1 / n0:.0f}x ranks -> {r1['wall_s'] / r0['wall_s']:.1f}x time, "
            f"{r1['worker_mb'] / r0['worker_mb']:.2f}x largest-process memory"
        )


def slope(n0: int, mb0: float, n1: int, mb1: float) -> float:
    """MB per 1,000 ranks between two sizes: how much the largest process grows with the rank count."""
    return (mb1 - mb0) / (n1 - n0) * 1000


if __name__ == "__main__":
    sys.exit(main())
