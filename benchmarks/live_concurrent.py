"""What live detection costs the job, A and B side by side at the same time (`benchmarks/live.py --overhead
--concurrent`): two copies of the sample DDP job run together on the same machine, A under `scope run
--no-live`, B under `scope run` (the detector on B's launcher), so both see the same load from moment to
moment; ABBA pairs over time (or the ABBA blocks of live_overhead.py) see a load that drifts between them.

Per pair, the overlap of the two runs is cut into bins of `bin_s` seconds by each step's wall-clock end; per bin
the ratio of B's median step time over A's (rank 0's own timer, the first steps left out). Reported: the median
bin ratio over all pairs with a bootstrap 95% interval (its width is the resolution reached), beside the same
for an A/A control (both arms --no-live; `--control`), which shows the set-up's own bias and noise; the
launch order alternates between pairs. Beside it, the CPU-share bound: B's detector CPU seconds
(RUN/live/stats.json) over B's ranks' CPU seconds (their end records).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.overhead import bootstrap_median, clean_env  # noqa: E402

WORKLOAD = ["-m", "scope.collectors.workloads.ddp"]
SKIP = 5  # start-up steps left out
MIN_STEPS_IN_BIN = 3


def start(out: Path, live: bool, steps: int, nproc: int) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "scope", "run", "--out", str(out), "--quiet", "--no-sidecar", "--profile-start", "-1"]
    cmd += [] if live else ["--no-live"]
    cmd += ["--nproc-per-node", str(nproc), "--", *WORKLOAD, "--steps", str(steps)]
    return subprocess.Popen(
        cmd, cwd=ROOT, env=clean_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )


def steps_of(run: Path) -> list[tuple[float, float]]:
    """Rank 0's steps: (wall-clock end in s, ms), the start-up steps left out."""
    for line in (run / "ranks" / "0" / "stdout.log").read_text().splitlines():
        if line.startswith("scope-workload-steps: "):
            report = json.loads(line.split(": ", 1)[1])
            return [(end / 1e9, ms) for end, ms in zip(report["end_ns"], report["step_ms"], strict=True)][SKIP:]
    raise RuntimeError(f"{run}: no scope-workload-steps line")


def bin_ratios(a: list[tuple[float, float]], b: list[tuple[float, float]], bin_s: float) -> list[float]:
    """Per bin of the two runs' overlap, B's median step over A's."""
    lo, hi = max(a[0][0], b[0][0]), min(a[-1][0], b[-1][0])
    nbins = int((hi - lo) // bin_s)
    per: dict[str, list[list[float]]] = {"a": [[] for _ in range(nbins)], "b": [[] for _ in range(nbins)]}
    for name, run in (("a", a), ("b", b)):
        for end, ms in run:
            k = int((end - lo) // bin_s)
            if 0 <= k < nbins:
                per[name][k].append(ms)
    return [
        statistics.median(xb) / statistics.median(xa)
        for xa, xb in zip(per["a"], per["b"], strict=True)
        if len(xa) >= MIN_STEPS_IN_BIN and len(xb) >= MIN_STEPS_IN_BIN
    ]


def cpu_share(run: Path, nproc: int) -> tuple[float, float]:
    """(the detector's CPU-s, the ranks' CPU-s) of one run."""
    job = 0.0
    for rank in range(nproc):
        lines = (run / "ranks" / str(rank) / "attempts.jsonl").read_text().splitlines()
        job += [r for r in map(json.loads, lines) if r["event"] == "end"][-1]["cpu_ns"] / 1e9
    stats = run / "live" / "stats.json"
    return (json.loads(stats.read_text())["cpu_s"] if stats.is_file() else 0.0), job


def one_pair(tmp: Path, i: int, steps: int, nproc: int, live_b: bool) -> tuple[float, float]:
    """A and B started together (the order alternating), both waited for; the CPU share of B."""
    runs = {"A": tmp / f"pair{i}-A", "B": tmp / f"pair{i}-B"}
    order = ("A", "B") if i % 2 == 0 else ("B", "A")
    procs = {arm: start(runs[arm], live=live_b and arm == "B", steps=steps, nproc=nproc) for arm in order}
    for arm, proc in procs.items():
        if proc.wait(timeout=1800) != 0:
            raise RuntimeError(f"{arm} ({runs[arm]}) ended with {proc.returncode}")
    return cpu_share(runs["B"], nproc)


def concurrent(pairs: int, steps: int, nproc: int, bin_s: float, control: bool) -> None:
    print(f"load average at start: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores", flush=True)
    arms = {"live": True, "control": False} if control else {"live": True}
    ratios: dict[str, list[float]] = {name: [] for name in arms}
    cpu: list[tuple[float, float]] = []
    with tempfile.TemporaryDirectory(prefix="scope-live-concurrent-") as tmp:
        for i in range(pairs):
            for name, live_b in arms.items():
                base = Path(tmp) / f"{name}{i}"
                base.mkdir()
                share = one_pair(base, i, steps, nproc, live_b)
                got = bin_ratios(steps_of(base / f"pair{i}-A"), steps_of(base / f"pair{i}-B"), bin_s)
                ratios[name] += got
                if live_b:
                    cpu.append(share)
                med = statistics.median(got) if got else float("nan")
                print(f"  pair {i + 1} {name}: {len(got)} bins, median B/A x{med:.4f}; load {os.getloadavg()[0]:.1f}",
                      flush=True)  # fmt: skip
    print(f"\nddp, two jobs of {nproc} ranks at once, {steps} steps each, {pairs} pairs, bins of {bin_s:g} s")
    for name, xs in ratios.items():
        if not xs:
            continue
        lo, hi = bootstrap_median(xs)
        what = "scope run over scope run --no-live" if name == "live" else "A/A control (both --no-live)"
        print(f"{what}: median x{statistics.median(xs):.4f} over {len(xs)} bins, bootstrap 95% x{lo:.4f}..x{hi:.4f} "
              f"(width {100 * (hi - lo):.2f}%)")  # fmt: skip
    det, job = sum(c[0] for c in cpu), sum(c[1] for c in cpu)
    print(f"CPU bound: the detector {det:.3f} CPU-s over the live job's ranks {job:.1f} CPU-s = "
          f"{100 * det / max(job, 1e-9):.3f}% (target <= 0.5%)")  # fmt: skip
    print(f"load average at end: {os.getloadavg()[0]:.2f}; {time.strftime('%H:%M:%S')}")
