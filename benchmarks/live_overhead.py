"""What live detection costs the job (`benchmarks/live.py --overhead`): wall-clock A/B pairs and CPU accounting.

1. Interleaved pairs of the same real job (the sample DDP workload, gloo): A = `scope run --no-live`, B = `scope
   run` (the live detector on its own launcher thread), in ABBA order (AB, BA, AB, ...) so drift in the
   machine's load hits both arms alike. Per pair the ratio of the runs' median step times (rank 0's own
   timer, start-up and last step left out); reported: the median ratio and its bootstrap 95% interval.
2. CPU accounting over the same runs, which a busy machine's noise does not blur: the detector's CPU seconds
   (RUN/live/stats.json: its thread's CPU time in every look) over the job's (the ranks' CPU time, from each
   rank's end record). On a saturated host every CPU second taken from the job is at most a second of its
   wall time, so the ratio bounds the slowdown. Beside it, the hook's own work in the job, present in both
   arms (the live signals it writes): the hook thread's CPU time, and the collective timing on the job's
   threads (collectives counted x their measured cost).
"""

from __future__ import annotations

import itertools
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.overhead import bootstrap_median, clean_env, collective_cost_ns, parse_steps  # noqa: E402

WORKLOAD = ["-m", "scope.collectors.workloads.ddp"]


@dataclass
class RunCost:
    step_ms: float  # median step time, rank 0
    job_cpu_s: float  # the ranks' CPU time
    hook_cpu_s: float  # the ranks' hook threads
    collectives: int  # collectives the hook timed, all ranks
    detector_cpu_s: float  # the live detector's looks (0 with --no-live)
    tree_cpu_s: float  # launcher, torchrun and ranks


def run_once(steps: int, nproc: int, tmp: Path, live: bool) -> RunCost:
    out = tmp / f"run-{time.time_ns()}"
    cmd = [sys.executable, "-m", "scope", "run", "--out", str(out), "--quiet", "--no-sidecar", "--profile-start", "-1"]
    cmd += [] if live else ["--no-live"]
    cmd += ["--nproc-per-node", str(nproc), "--", *WORKLOAD, "--steps", str(steps)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, cwd=ROOT, env=clean_env(), capture_output=True, text=True, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    tree = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    job, hook, colls = 0.0, 0.0, 0
    for rank in range(nproc):
        rdir = out / "ranks" / str(rank)
        end = [r for r in map(json.loads, (rdir / "attempts.jsonl").read_text().splitlines()) if r["event"] == "end"]
        job += end[-1]["cpu_ns"] / 1e9
        hook += end[-1]["hook_cpu_ns"] / 1e9
        for line in (rdir / "progress.jsonl").read_text().splitlines():
            colls += sum(row[2] for row in json.loads(line).get("coll", []))
    stats = out / "live" / "stats.json"
    detector = json.loads(stats.read_text())["cpu_s"] if live else 0.0
    step_ms = statistics.median(parse_steps((out / "ranks" / "0" / "stdout.log").read_text()))
    return RunCost(step_ms, job, hook, colls, detector, tree)


def overhead(pairs: int, steps: int, nproc: int) -> None:
    print(f"load average at start: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores", flush=True)
    runs: dict[str, list[RunCost]] = {"A": [], "B": []}
    ratios: list[float] = []
    with tempfile.TemporaryDirectory(prefix="scope-live-ab-") as tmp:
        for i in range(pairs):
            order = "AB" if i % 2 == 0 else "BA"
            got = {arm: run_once(steps, nproc, Path(tmp), live=arm == "B") for arm in order}
            for arm, cost in got.items():
                runs[arm].append(cost)
            ratios.append(got["B"].step_ms / got["A"].step_ms)
            print(
                f"  pair {i + 1} ({order}): --no-live {got['A'].step_ms:.1f} ms, live {got['B'].step_ms:.1f} ms, "
                f"x{ratios[-1]:.4f}; load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
    say(runs, ratios, steps, nproc)


def say(runs: dict[str, list[RunCost]], ratios: list[float], steps: int, nproc: int) -> None:
    lo, hi = bootstrap_median(ratios)
    med = statistics.median(ratios)
    step_ms = statistics.median(r.step_ms for r in runs["A"])
    print(f"\nddp, {nproc} ranks, {steps} steps a run, {len(ratios)} ABBA pairs, median step {step_ms:.1f} ms")
    verdict = "resolves" if hi - lo <= 0.01 else "does NOT resolve"
    print(
        f"wall clock, scope run over scope run --no-live: median x{med:.4f}, bootstrap 95% x{lo:.4f}..x{hi:.4f} "
        f"(width {100 * (hi - lo):.2f}%: {verdict} a 0.5% effect)"
    )
    live = runs["B"]
    det = [r.detector_cpu_s / r.job_cpu_s for r in live]
    print(
        f"CPU bound, the live detector over the job: median {100 * statistics.median(det):.4f}%, max "
        f"{100 * max(det):.4f}% ({statistics.median(r.detector_cpu_s for r in live):.4f} CPU-s of "
        f"{statistics.median(r.job_cpu_s for r in live):.1f} job CPU-s a run; target <= 0.5%)"
    )
    both = runs["A"] + runs["B"]
    hook = [r.hook_cpu_s / r.job_cpu_s for r in both]
    coll_ns = collective_cost_ns()
    coll = [r.collectives * coll_ns / 1e9 / r.job_cpu_s for r in both]
    total = [h + c + d for h, c, d in zip(hook, coll, [0.0] * len(runs["A"]) + det, strict=True)]
    print(
        f"the hook's live signals in the job (both arms): hook thread {100 * statistics.median(hook):.3f}%, "
        f"collective timing {statistics.median(r.collectives for r in both) / (nproc * steps):.1f} a rank-step x "
        f"{coll_ns / 1e3:.1f} us = {100 * statistics.median(coll):.4f}% of the job's CPU; with the detector "
        f"{100 * statistics.median(total[len(runs['A']) :]):.3f}% (max {100 * max(total):.3f}%)"
    )
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


def blocks(steps: int, nproc: int, block_s: float, watchers: int = 1) -> None:
    """One long `scope run --no-live` job, and beside it `scope watch RUN` (the same detector, in its own
    process) switched on and off in blocks of `block_s` seconds, ABBA (off on | on off | ...): per pair of
    blocks the ratio of the job's median step time with the detector running over without.

    With `watchers` 0, nothing runs in the "on" blocks: the control, which shows the set-up's own bias.
    With `watchers` N > 1, N detectors run (and stop) together: the dose is N times one detector's cost, so
    a per-detector slowdown N times below the wall clock's resolution shows, as (ratio - 1) / N. Contention
    grows at least linearly with the CPU taken (on a host with idle cores a small dose costs nothing at
    all), so the per-detector figure from N of them bounds one detector's cost from above."""
    import signal

    print(f"load average at start: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores", flush=True)
    with tempfile.TemporaryDirectory(prefix="scope-live-blocks-") as tmp:
        out = Path(tmp) / "run"
        cmd = [sys.executable, "-m", "scope", "run", "--out", str(out), "--quiet", "--no-sidecar", "--no-live"]
        cmd += ["--profile-start", "-1", "--nproc-per-node", str(nproc), "--", *WORKLOAD, "--steps", str(steps)]
        job = subprocess.Popen(cmd, cwd=ROOT, env=clean_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while job.poll() is None and not (out / "ranks" / "0" / "progress.jsonl").exists():
            time.sleep(0.2)
        watch_cmd = [sys.executable, "-m", "scope", "watch", str(out)]
        watches = [
            subprocess.Popen(watch_cmd, cwd=ROOT, env=clean_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(watchers)
        ]
        marks: list[tuple[int, bool]] = []  # (start ns, detector on)
        cpu: list[tuple[float, float] | None] = []  # at each mark: (the detector's CPU-s, the ranks')
        try:
            pids = _rank_pids(out, nproc)
            time.sleep(3.0 + 0.5 * watchers)  # the watches' start-up (imports, a first look) left out
            k = 0
            while job.poll() is None:
                on = k % 4 in (1, 2)  # ABBA: off on on off
                for watch in watches:
                    os.kill(watch.pid, signal.SIGCONT if on else signal.SIGSTOP)
                marks.append((time.time_ns(), on))
                cpu.append(_cpu_pair([w.pid for w in watches], pids))
                k += 1
                time.sleep(block_s)
            marks.append((time.time_ns(), False))
            cpu.append(None)
        finally:  # never leave a stopped watch or the job behind
            for watch in watches:
                os.kill(watch.pid, signal.SIGCONT)
                watch.terminate()
                watch.wait(timeout=30)
            if job.poll() is None:
                job.terminate()
                job.wait(timeout=60)
        report = _steps_report(out / "ranks" / "0" / "stdout.log")
    ratios = _block_ratios(report, marks)
    lo, hi = bootstrap_median(ratios)
    det_cpu = job_cpu = 0.0
    for (_, on), a, b in zip(marks, cpu, cpu[1:], strict=False):
        if on and a is not None and b is not None:
            det_cpu, job_cpu = det_cpu + b[0] - a[0], job_cpu + b[1] - a[1]
    med = statistics.median(ratios)
    dose = {0: "no detector (the control: the same blocks)", 1: "the detector"}.get(watchers, f"{watchers} detectors")
    print(
        f"\none run, {nproc} ranks, {steps} steps, {len(ratios)} ABBA block pairs of {block_s:g} s: step time with "
        f"{dose} on over off: median x{med:.4f}, bootstrap 95% x{lo:.4f}..x{hi:.4f} (width {100 * (hi - lo):.2f}%)"
    )
    if watchers > 1:
        print(
            f"per detector ((ratio - 1) / {watchers}, an upper bound on one's cost): "
            f"{100 * (med - 1) / watchers:+.3f}%, 95% {100 * (lo - 1) / watchers:+.3f}%.."
            f"{100 * (hi - 1) / watchers:+.3f}% (target <= 0.5%)"
        )
    if watchers:
        print(
            f"CPU while {dose} ran: {det_cpu:.3f} CPU-s, the job's ranks {job_cpu:.1f} CPU-s: "
            f"{100 * det_cpu / max(job_cpu, 1e-9):.4f}%, {100 * det_cpu / watchers / max(job_cpu, 1e-9):.4f}% a "
            f"detector (target <= 0.5%)"
        )
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rank_pids(out: Path, nproc: int) -> list[int]:
    pids: dict[int, int] = {}
    deadline = time.monotonic() + 120
    while len(pids) < nproc and time.monotonic() < deadline:
        for rank in range(nproc):
            try:
                pids[rank] = int(json.loads((out / "ranks" / str(rank) / "heartbeat.json").read_text())["pid"])
            except (OSError, ValueError, KeyError):
                time.sleep(0.1)
    if len(pids) < nproc:  # fewer ranks' CPU would shrink the job's side and inflate the ratio
        raise SystemExit(f"only {len(pids)} of {nproc} ranks wrote a heartbeat within 120 s")
    return list(pids.values())


def _cpu_pair(watches: list[int], ranks: list[int]) -> tuple[float, float] | None:
    try:
        return sum(_cpu_s(pid) for pid in watches), sum(_cpu_s(pid) for pid in ranks)
    except (OSError, ValueError, IndexError):
        return None  # a rank ended


def _steps_report(path: Path) -> dict:
    for line in path.read_text().splitlines():
        if line.startswith("scope-workload-steps: "):
            return dict(json.loads(line.split(": ", 1)[1]))
    raise RuntimeError(f"{path}: no scope-workload-steps line")


def _block_ratios(report: dict, marks: list[tuple[int, bool]]) -> list[float]:
    """Steps wholly inside a block, by their wall-clock end; per pair of blocks (one on, one off) the ratio of
    their median step times."""
    per_block: list[list[float]] = [[] for _ in marks[:-1]]
    for ms, end in zip(report["step_ms"][3:], report["end_ns"][3:], strict=True):
        start = end - ms * 1e6
        for i, (a, b) in enumerate(itertools.pairwise(marks)):
            if a[0] <= start and end <= b[0]:
                per_block[i].append(ms)
                break
    ratios = []
    for i in range(0, len(per_block) - 1, 2):
        first, second = per_block[i], per_block[i + 1]
        if len(first) >= 3 and len(second) >= 3:
            on, off = (first, second) if marks[i][1] else (second, first)
            ratios.append(statistics.median(on) / statistics.median(off))
    return ratios
