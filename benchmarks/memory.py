"""Memory snapshot analysis speed and memory: synthetic snapshots in torch's current format.

    .venv/bin/python benchmarks/memory.py [--entries 20000 1000000] [--frames 8]

For each size, in a fresh process (so its peak RSS is its own): write a snapshot of N trace entries
(allocs and frees, each with a stack of --frames frames from a pool of 200 stacks, as a training loop
repeats its call sites), then time the bare `pickle.load` of it (the baseline: no safety, no analysis)
against scope's whole analysis (refusing unpickler, bomb check, model, replay, peak sites, reserve).
Targets: 20k entries under 0.5 s; 1M entries under 10 s at <= 1 GB RSS.
"""

from __future__ import annotations

import argparse
import json
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


def synthetic_snapshot(entries: int, frames: int, seed: int = 0) -> dict[str, Any]:
    """N entries in torch's current format (a stack per entry, the stacks repeating)."""
    rng = random.Random(seed)
    stacks = [
        [{"filename": f"/src/model/layer{s % 13}.py", "line": 10 + i + s, "name": f"fn{s}_{i}"} for i in range(frames)]
        for s in range(200)
    ]
    trace, live, t = [], [], 1_700_000_000_000_000
    for _ in range(entries):
        t += rng.randint(1, 50)
        if live and (rng.random() < 0.5 or len(live) > 5000):
            addr, size = live.pop(rng.randrange(len(live)))
            trace.append({"action": "free_completed", "addr": addr, "size": size, "stream": 0, "time_us": t,
                          "frames": [dict(f) for f in rng.choice(stacks)]})  # fmt: skip
        else:
            addr, size = rng.randrange(1 << 40, 1 << 47) & ~511, rng.choice((512, 4096, MIB, 2 * MIB, 20 * MIB))
            live.append((addr, size))
            trace.append({"action": "alloc", "addr": addr, "size": size, "stream": 0, "time_us": t,
                          "frames": [dict(f) for f in rng.choice(stacks)]})  # fmt: skip
    blocks = [
        {"address": a, "size": s, "requested_size": s, "state": "active_allocated", "frames": []} for a, s in live
    ]
    segment = {"device": 0, "address": 0, "total_size": sum(s for _, s in live), "stream": 0,
               "segment_type": "large", "is_expandable": False, "blocks": blocks}  # fmt: skip
    return {"segments": [segment], "device_traces": [trace]}


def measure(path: str) -> dict[str, float]:
    """In this process: the bare load, then scope's analysis; times and this process's peak RSS."""
    from scope.analyzers.memory.snapshot import peak_sites, replay, reserve

    from scope.memory_snapshot import load_snapshot

    start = time.perf_counter()
    with open(path, "rb") as fh:
        pickle.load(fh)
    bare = time.perf_counter() - start
    start = time.perf_counter()
    snap = load_snapshot(path)
    loaded = time.perf_counter() - start
    rep = replay(snap, 0)
    peak_sites(snap, rep)
    reserve(snap, 0)
    total = time.perf_counter() - start
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"bare_s": bare, "load_s": loaded, "total_s": total, "rss_mb": rss_mb}


def run_size(entries: int, frames: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "snapshot.pickle"
        path.write_bytes(pickle.dumps(synthetic_snapshot(entries, frames), protocol=4))
        size_mb = path.stat().st_size / MIB
        code = f"import json, sys; sys.path.insert(0, {str(ROOT)!r}); from benchmarks.memory import measure; "
        code += f"print(json.dumps(measure({str(path)!r})))"
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        m = json.loads(proc.stdout.strip().splitlines()[-1])
        print(
            f"{entries:>9,} entries ({size_mb:.0f} MB pickle): scope {m['total_s']:.2f} s "
            f"(load {m['load_s']:.2f} s), bare pickle.load {m['bare_s']:.2f} s, "
            f"ratio {m['total_s'] / m['bare_s']:.1f}x, "
            f"peak RSS {m['rss_mb']:.0f} MB, {entries / m['total_s']:,.0f} entries/s"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, nargs="+", default=[20_000, 1_000_000])
    parser.add_argument("--frames", type=int, default=8)
    args = parser.parse_args(argv)
    for n in args.entries:
        run_size(n, args.frames)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
