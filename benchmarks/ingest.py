"""Ingest throughput and memory: scope against HTA's TraceAnalysis load, and the JSON-library ceiling.

Run by hand:  .venv/bin/python benchmarks/ingest.py [--hta-python PATH] [--repeat N]

HTA (HolisticTraceAnalysis 0.5.0) pulls jupyterlab, so it is not a dependency of scope: install it
in a separate environment and point --hta-python at that interpreter (default: ../hta-venv). Every
case runs in a fresh subprocess; peak memory is the largest sum of RSS over the whole process tree
(sampled every 20 ms), CPU time is user+sys of the tree. Best of --repeat runs (the VM is noisy).
"net" rates subtract each tool's fixed start-up cost (interpreter, imports, worker start), measured
on a one-event trace: on traces of a few MB that cost dominates, on GB-sized traces it vanishes.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
if not __package__:
    sys.path.insert(0, str(ROOT))

from benchmarks.shared_data import shared_data  # noqa: E402

DATA = shared_data() / "hta"

SCOPE_CODE = """
import sys
from scope.ingest import ingest
r = ingest(sys.argv[1], sys.argv[2], force=True)
print(sum(m["n_events"] for m in r.store.meta["ranks"].values()))  # complete events stored
"""
HTA_CODE = """
import sys, logging
logging.disable(logging.CRITICAL)
from hta.trace_analysis import TraceAnalysis
ta = TraceAnalysis(trace_dir=sys.argv[1])
print(sum(len(ta.t.get_trace(r)) for r in ta.t.get_all_traces()))
"""
PYTHON_PATH = {**os.environ, "SCOPE_NATIVE": "0"}
CEILING_CODE = """
import sys, gzip, msgspec
n = 0
for p in sys.argv[1:]:
    data = gzip.open(p).read() if p.endswith('.gz') else open(p, 'rb').read()
    n += len(msgspec.json.decode(data)["traceEvents"])
print(n)
"""


@dataclass
class Measure:
    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    events: int


def run_measured(cmd: list[str], env: dict[str, str] | None = None) -> Measure:
    start = time.perf_counter()
    before = os.times()
    proc = psutil.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    peak = 0
    while proc.poll() is None:
        try:
            procs = [proc, *proc.children(recursive=True)]
            peak = max(peak, sum(p.memory_info().rss for p in procs if p.is_running()))
        except psutil.Error:
            pass
        time.sleep(0.02)
    out, err = proc.communicate()
    wall = time.perf_counter() - start
    after = os.times()
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[:3]} failed: {err[-2000:]}")
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    events = int(out.strip().splitlines()[-1])
    return Measure(wall, cpu, peak / 2**20, events)


def best(cmd: list[str], repeat: int, env: dict[str, str] | None = None) -> Measure:
    runs = [run_measured(cmd, env) for _ in range(repeat)]
    return min(runs, key=lambda m: m.wall_s)


def make_eight_rank_set(target: Path) -> Path:
    """8 ranks made from copies of nccl_parser_config (its rank rewritten in distributedInfo)."""
    source = DATA / "nccl_parser_config" / "nccl_data.json.gz"
    with gzip.open(source, "rt") as fh:
        text = fh.read()
    target.mkdir(parents=True, exist_ok=True)
    for rank in range(8):
        data = re.sub(r'("distributedInfo": \{[^}]*?"rank": )\d+', rf"\g<1>{rank}", text, count=1)
        data = data.replace('"world_size": 2', '"world_size": 8', 1)
        with gzip.open(target / f"rank-{rank}.json.gz", "wt", compresslevel=1) as fh:
            fh.write(data)
    return target


def make_tiny_set(target: Path) -> Path:
    """A one-event trace: what each tool costs before it reads anything."""
    target.mkdir(parents=True)
    trace = {
        "schemaVersion": 1,
        "distributedInfo": {"rank": 0, "world_size": 1},
        "traceEvents": [
            {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 1, "args": {"stream": 7}}
        ],
    }
    (target / "rank-0.json").write_text(json.dumps(trace))
    return target


def make_malformed_set(clean: Path, target: Path, share: float = 0.01) -> tuple[Path, int]:
    """The clean set with `share` of its events made malformed (a stray `@` after the event's `{`: not
    repairable, so each is skipped and parsing resumes at the next event). Returns (folder, events damaged)."""
    target.mkdir(parents=True, exist_ok=True)
    damaged = 0
    for path in sorted(clean.glob("*.json.gz")):
        with gzip.open(path, "rt") as fh:
            text = fh.read()
        starts = [m.end() for m in re.finditer(r"\},\s*\{", text)]
        every = max(1, round(1 / share))
        picked = set(starts[every // 2 :: every])
        damaged += len(picked)
        pieces, last = [], 0
        for at in sorted(picked):
            pieces += [text[last:at], "@"]
            last = at
        pieces.append(text[last:])
        with gzip.open(target / path.name, "wt", compresslevel=1) as fh:
            fh.write("".join(pieces))
    return target, damaged


def malformed_rows(clean: Path, tmp: Path, repeat: int, fixed: Measure) -> list[tuple[str, Measure, Measure]]:
    """Clean against 1%-malformed throughput, native core and Python path."""
    bad, _ = make_malformed_set(clean, tmp / "malformed")
    out = []
    for label, env in (("native", None), ("python path", PYTHON_PATH)):
        runs = []
        for folder in (clean, bad):
            cmd = [sys.executable, "-c", SCOPE_CODE, str(folder), str(tmp / "store-malformed")]
            runs.append(best(cmd, repeat, env))
            shutil.rmtree(tmp / "store-malformed", ignore_errors=True)
        out.append((label, runs[0], runs[1]))
    return out


def print_malformed(rows: list[tuple[str, Measure, Measure]], mb: float, fixed: Measure) -> None:
    print(f"\n1% malformed events (skipped, parsing resumes at the next event) against the clean set, {mb:.0f} MB:")
    for label, clean, bad in rows:
        rate_clean = mb / max(clean.cpu_s - fixed.cpu_s, 1e-3)
        rate_bad = mb / max(bad.cpu_s - fixed.cpu_s, 1e-3)
        print(
            f"{label:<12} clean {rate_clean:>6.1f} MB/s/core ({clean.events:,} events)"
            f" | malformed {rate_bad:>6.1f} MB/s/core ({bad.events:,} events)"
            f" | {rate_bad / rate_clean:.1%} of clean (net of start-up)"
        )


def trace_sets(tmp: Path, eight: Path) -> dict[str, Path]:
    sets = {name: DATA / name for name in ("df_index_resolver", "nccl_parser_config", "trace_filter")}
    sets["8 ranks (copies)"] = eight
    return sets


def raw_mb(folder: Path) -> float:
    total = 0
    for p in folder.glob("*.json*"):
        if p.name.endswith(".gz"):
            with gzip.open(p) as fh:
                total += len(fh.read())
        else:
            total += p.stat().st_size
    return total / 2**20


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hta-python", default=str(ROOT.parent / "hta-venv" / "bin" / "python"))
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--malformed-only", action="store_true", help="only the 1%%-malformed against clean line")
    args = parser.parse_args()
    if not DATA.exists():
        print(f"benchmark data not found at {DATA}", file=sys.stderr)
        return 2
    have_hta = Path(args.hta_python).exists()
    tmp = Path(tempfile.mkdtemp(prefix="scope-bench-"))
    rows: list = []
    rows_python: list = []
    try:
        tiny = make_tiny_set(tmp / "tiny")
        fixed = {
            "scope": best([sys.executable, "-c", SCOPE_CODE, str(tiny), str(tmp / "tiny-store")], args.repeat),
            "ceiling": best([sys.executable, "-c", CEILING_CODE, *map(str, tiny.glob("*"))], args.repeat),
            "hta": best([args.hta_python, "-c", HTA_CODE, str(tiny)], args.repeat) if have_hta else None,
        }
        eight = make_eight_rank_set(tmp / "eight")
        malformed = malformed_rows(eight, tmp, args.repeat, fixed["scope"])
        if args.malformed_only:
            print_malformed(malformed, raw_mb(eight), fixed["scope"])
            return 0
        for name, folder in trace_sets(tmp, eight).items():
            files = sorted(str(p) for p in folder.glob("*.json*"))
            store = tmp / f"store-{len(rows)}"
            ours = best([sys.executable, "-c", SCOPE_CODE, str(folder), str(store)], args.repeat)
            # scope's pure-Python path (msgspec + pyarrow): what runs where the native core is not built
            python_path = best([sys.executable, "-c", SCOPE_CODE, str(folder), str(store)], args.repeat, PYTHON_PATH)
            rows_python.append((name, python_path))
            ceiling = best([sys.executable, "-c", CEILING_CODE, *files], args.repeat)
            hta = best([args.hta_python, "-c", HTA_CODE, str(folder)], args.repeat) if have_hta else None
            # every tool is credited with the same work: all events of the files
            ours.events = ceiling.events
            if hta:
                hta.events = ceiling.events
            rows.append((name, raw_mb(folder), ours, ceiling, hta))
            shutil.rmtree(store, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print_table(rows, os.cpu_count() or 1, fixed)
    print_python_path(rows, rows_python)
    print_malformed(malformed, rows[-1][1], fixed["scope"])
    return 0


def print_python_path(rows: list, rows_python: list) -> None:
    print("\nnative core against scope's pure-Python path (SCOPE_NATIVE=0), same runs:")
    for (name, _mb, ours, ceiling, _hta), (_, py) in zip(rows, rows_python, strict=True):
        py_rate = ceiling.events / max(py.cpu_s, 1e-9)
        ours_rate = ceiling.events / max(ours.cpu_s, 1e-9)
        print(
            f"{name:<18} python path {py.wall_s:>5.2f} s {py_rate:>9,.0f} ev/s/core {py.peak_rss_mb:>5.0f} MB"
            f" | native x{ours_rate / py_rate:.1f} throughput, {ours.peak_rss_mb / py.peak_rss_mb:.2f} of its memory"
        )


def net_rate(m: Measure, fixed: Measure | None) -> float:
    cpu = m.cpu_s - (fixed.cpu_s if fixed else 0.0)
    return m.events / max(cpu, 1e-3)


def print_table(rows: list, cores: int, fixed: dict[str, Measure | None]) -> None:
    print(
        f"machine: {cores} cores; best of runs; ev/s/core = events / CPU s of the process tree; net = after "
        "subtracting each tool's start-up CPU ("
        + ", ".join(f"{k} {v.cpu_s:.2f} s" for k, v in fixed.items() if v)
        + ")"
    )
    head = (
        f"{'trace set':<18} {'raw MB':>6} | {'scope s':>7} {'ev/s/core':>9} {'net':>9} {'peak MB':>7} | "
        f"{'HTA s':>6} {'ev/s/core':>9} {'net':>9} {'peak MB':>7} | {'ceil net':>9} | "
        f"{'x HTA':>5} {'net x':>5} {'mem/HTA':>7} {'net %ceil':>9}"
    )
    print(head)
    print("-" * len(head))
    for name, mb, ours, ceiling, hta in rows:
        ours_rate, ours_net = ours.events / max(ours.cpu_s, 1e-9), net_rate(ours, fixed["scope"])
        ceil_net = net_rate(ceiling, fixed["ceiling"])
        hta_cols, ratio, net_ratio, mem = f"{'-':>6} {'-':>9} {'-':>9} {'-':>7}", "-", "-", "-"
        if hta:
            hta_rate, hta_net = hta.events / max(hta.cpu_s, 1e-9), net_rate(hta, fixed["hta"])
            hta_cols = f"{hta.wall_s:>6.2f} {hta_rate:>9,.0f} {hta_net:>9,.0f} {hta.peak_rss_mb:>7.0f}"
            ratio, net_ratio = f"{ours_rate / hta_rate:.1f}", f"{ours_net / hta_net:.1f}"
            mem = f"{ours.peak_rss_mb / hta.peak_rss_mb:.2f}"
        print(
            f"{name:<18} {mb:>6.1f} | {ours.wall_s:>7.2f} {ours_rate:>9,.0f} {ours_net:>9,.0f} "
            f"{ours.peak_rss_mb:>7.0f} | {hta_cols} | {ceil_net:>9,.0f} | {ratio:>5} {net_ratio:>5} {mem:>7} "
            f"{100 * ours_net / ceil_net:>8.0f}%"
        )
    print("events counted: every event of the files (all phases), the same count for each tool")


if __name__ == "__main__":
    sys.exit(main())
