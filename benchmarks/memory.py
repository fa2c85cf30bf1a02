"""Memory snapshot analysis speed and memory: synthetic snapshots in torch's current format.

    .venv/bin/python benchmarks/memory.py [--entries 20000 200000 1000000] [--baseline-max 200000]

The synthetic snapshot is shaped like torch's own (torch/csrc/cuda/Module.cpp builds it): every distinct
frame is one dict shared by all the stacks that hold it (the pickle writes it once, then refers to it),
each trace entry has a fresh list of 20-40 frames (a model's depth: train loop, modules, autograd, ops),
drawn from 2,000 call paths over 600 distinct frames, as a training loop repeats its call sites.

For each size, each reader runs in a fresh process (so its peak RSS is its own) on the same file:
  - native: scope's reader (the native core runs the pickle's opcodes itself, trace entries streamed into
    columns, stacks interned), then the whole analysis of `scope analyze` (replay, peak sites, flame
    graph, reserve: analyzers/memory/snapshots.py's snapshot_rows);
  - python: the same analysis from the refusing unpickler's whole objects (SCOPE_NATIVE=0: what scope
    did before the native reader, and does without the native core), up to --baseline-max entries;
  - bare pickle.load of the file (no safety, no analysis), as a yardstick.
Targets: 20k entries under 0.5 s; 1M entries under 10 s at <= 1 GB RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MIB = 2**20
SIZES = (512, 4096, 65536, MIB, 2 * MIB, 20 * MIB)


def call_paths(
    rng: random.Random, n_paths: int = 2000, n_frames: int = 600, depth: tuple[int, int] = (12, 32)
) -> list[list[dict[str, Any]]]:
    """Stacks of 8 + DEPTH frames (20-40), innermost first, sharing frame dicts as torch's snapshots do."""
    pool = [
        {"filename": f"/src/model/{kind}{i % 17}.py", "line": 10 + i, "name": f"{kind}_{i}"}
        for i, kind in ((i, ("op", "module", "autograd", "train")[i % 4]) for i in range(n_frames))
    ]
    base = pool[:8]  # the train loop's own frames, under every stack
    return [rng.sample(pool[8:], rng.randint(*depth)) + base for _ in range(n_paths)]


def synthetic_snapshot(entries: int, seed: int = 0, depth: tuple[int, int] = (12, 32)) -> dict[str, Any]:
    """N alloc / free_requested / free_completed entries, each with a fresh list of shared frames
    (shallower stacks, DEPTH, make a large snapshot quick to build where its stacks do not matter)."""
    rng = random.Random(seed)
    paths = call_paths(rng, depth=depth)
    trace: list[dict[str, Any]] = []
    live: list[tuple[int, int, int]] = []
    t = 1_700_000_000_000_000
    while len(trace) < entries:
        t += rng.randint(1, 50)
        if live and (rng.random() < 0.5 or len(live) > 5000):
            addr, size, path = live.pop(rng.randrange(len(live)))
            for action in ("free_requested", "free_completed"):
                trace.append({"action": action, "addr": addr, "size": size, "stream": 0, "time_us": t,
                              "frames": list(paths[path])})  # fmt: skip
        else:
            addr, size, path = rng.randrange(1 << 40, 1 << 47) & ~511, rng.choice(SIZES), rng.randrange(len(paths))
            live.append((addr, size, path))
            trace.append({"action": "alloc", "addr": addr, "size": size, "stream": 0, "time_us": t,
                          "frames": list(paths[path])})  # fmt: skip
    blocks = [
        {"address": a, "size": s, "requested_size": s, "state": "active_allocated", "frames": list(paths[p])}
        for a, s, p in live
    ]
    segment = {"device": 0, "address": 0, "total_size": sum(s for _, s, _ in live), "stream": 0,
               "segment_type": "large", "segment_pool_id": (0, 0), "is_expandable": False,
               "blocks": blocks}  # fmt: skip
    return {"segments": [segment], "device_traces": [trace[:entries]]}


def measure(path: str, reader: str) -> dict[str, float]:
    """In this process: one reader's load and the analysis; times and this process's peak RSS (imports
    before the clock: they are the same for every size)."""
    from scope.analyzers.memory.snapshots import snapshot_rows

    from scope.memory_snapshot import load_snapshot

    start = time.perf_counter()
    if reader == "bare":
        with open(path, "rb") as fh:
            pickle.load(fh)
        loaded = time.perf_counter() - start
    else:
        snap = load_snapshot(path)
        loaded = time.perf_counter() - start
        snapshot_rows(snap, 0)  # what `scope analyze` does per snapshot: replay, sites, flame, reserve
    total = time.perf_counter() - start
    return {"load_s": loaded, "total_s": total, "rss_mb": peak_rss_mb()}


def peak_rss_mb() -> float:
    """This process's peak RSS. Linux's VmHWM, not ru_maxrss: ru_maxrss survives exec, so a child would
    report its parent's peak (the parent built the synthetic snapshot: hundreds of MB)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_reader(path: Path, reader: str) -> dict[str, float]:
    code = f"import json, sys; sys.path.insert(0, {str(ROOT)!r}); from benchmarks.memory import measure; "
    code += f"print(json.dumps(measure({str(path)!r}, {reader!r})))"
    env = {**os.environ, "SCOPE_NATIVE": "0" if reader == "python" else "1"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_size(entries: int, baseline_max: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "snapshot.pickle"
        with open(path, "wb") as fh:
            pickle.dump(synthetic_snapshot(entries), fh)  # torch's _dump_snapshot: pickle.dump, default protocol
        size_mb = path.stat().st_size / MIB
        readers = ["native", "bare"] + (["python"] if entries <= baseline_max else [])
        got = {r: run_reader(path, r) for r in readers}
        line = f"{entries:>9,} entries ({size_mb:.0f} MB pickle): "
        for r in readers:
            m = got[r]
            line += f"{r} {m['total_s']:.2f} s / {m['rss_mb']:.0f} MB; "
        n = got["native"]
        line += f"native {entries / n['total_s']:,.0f} entries/s"
        if "python" in got:
            p = got["python"]
            line += (
                f", {p['total_s'] / n['total_s']:.1f}x faster and {p['rss_mb'] / n['rss_mb']:.1f}x less RSS than python"
            )
        print(line, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, nargs="+", default=[20_000, 200_000, 1_000_000])
    parser.add_argument("--baseline-max", type=int, default=1_000_000, help="largest size the python reader runs")
    args = parser.parse_args(argv)
    for n in args.entries:
        run_size(n, args.baseline_max)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
