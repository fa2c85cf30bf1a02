"""What scope costs a training job: step time of the sample ddp workload in one run, three ways.

    python benchmarks/overhead.py [--steps 40] [--nproc 4] [--repeats 2]

  none     plain torchrun, no scope
  nolive   `scope run --no-live`: the hook active, no profiler window, no live detection
  idle     `scope run` with the hook active but no profiler window (heartbeat, triggers, watchdog, and the
           live detector in the launcher: its cost to the job is idle over nolive)
  window   `scope run` with a torch.profiler window over every measured step

The modes alternate (none, idle, window, none, ...) so drift in machine load hits them alike. Step
times come from the workload's own timer (rank 0's `scope-workload-steps` line); the first steps
(start-up) and the last (it carries the window's export) are left out. Because end-to-end step
times on a shared machine vary by a few percent from run to run, the hook's own cost per step is
also measured directly: the optimizer step hook called in a loop, against the median step time.
Target: idle overhead < 1%.

  --ab     interleaved A/B pairs, many short runs: `scope run --no-live` (A) against `scope run` (B, live
           detection on) and plain torchrun (A) against `scope run` (B); the order alternates pair by pair
           (AB, BA, ...). Reported: the median of the pairs' step-time ratios B/A, its interquartile range and
           a bootstrap 95% interval. Beside it, the live hook's own code timed directly, per step: the
           optimizer step hook, the collective timing per collective (a real one-rank gloo all-reduce,
           wrapped against bare), the hook thread's progress line (twice a second) and the DataLoader timing.
           `--ab-only` runs just this part.

  loads    a one-process job (tests/jobs/load_loop.py) calling torch.save and torch.load 4,000 times
           each, alone and under the hook (its sitecustomize, as `scope run` starts ranks), alternating;
           the job's own timer of its loop. Target: within 10%. `--loads-only` runs just this part.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORKLOAD = ["-m", "scope.collectors.workloads.ddp"]
SKIP_FIRST = 3
STEPS_LINE = "scope-workload-steps: "


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("SCOPE_", "TORCH_FR", "NCCL_"))}


def parse_steps(text: str) -> list[float]:
    for line in text.splitlines():
        if line.startswith(STEPS_LINE):
            times = json.loads(line[len(STEPS_LINE) :])["step_ms"]
            return times[SKIP_FIRST:-1]
    raise RuntimeError(f"no '{STEPS_LINE}' line in the workload's output:\n{text[-2000:]}")


def run_plain(steps: int, nproc: int) -> list[float]:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}"]
    cmd += ["--local-ranks-filter=0", *WORKLOAD, "--steps", str(steps)]
    proc = subprocess.run(cmd, cwd=ROOT, env=clean_env(), capture_output=True, text=True, check=True)
    return parse_steps(proc.stdout)


def run_scope(steps: int, nproc: int, window: bool, tmp: Path, live: bool = True) -> list[float]:
    out = tmp / f"run-{time.time_ns()}"
    profile = ["--profile-start", "1", "--profile-active", str(steps)] if window else ["--profile-start", "-1"]
    cmd = [sys.executable, "-m", "scope", "run", "--out", str(out), "--quiet", "--no-sidecar"]
    cmd += [] if live else ["--no-live"]
    cmd += ["--nproc-per-node", str(nproc), *profile, "--", *WORKLOAD, "--steps", str(steps)]
    subprocess.run(cmd, cwd=ROOT, env=clean_env(), capture_output=True, text=True, check=True)
    return parse_steps((out / "ranks" / "0" / "stdout.log").read_text())


def hook_cost_ns(calls: int = 200_000) -> float:
    """Nanoseconds the idle hook adds to one optimizer step (its post-step hook, called directly)."""
    from scope.collectors.hook.config import HookConfig
    from scope.collectors.hook.core import Hook

    with tempfile.TemporaryDirectory() as tmp:
        hook = Hook(HookConfig(run_dir=Path(tmp), rank=0, profile_start=-1))
        hook._setup_outputs()
        optimizer = object()
        start = time.perf_counter_ns()
        for _ in range(calls):
            hook.on_optimizer_step(optimizer, (), {})
        return (time.perf_counter_ns() - start) / calls


def data_wait_cost_ns(batches: int = 20_000) -> tuple[float, float]:
    """(ns per batch of a plain in-memory DataLoader, ns the hook's DataLoader timing adds to each batch):
    the same loader iterated with the base iterator's __next__ as torch ships it and as the hook wraps it."""
    import torch
    import torch.utils.data.dataloader as dl
    from scope.collectors.hook.lifecycle import LifeRecorder

    class Log:
        def info(self, *_: object) -> None: ...

        def error(self, *_: object) -> None: ...

    data = torch.utils.data.TensorDataset(torch.zeros(batches, 1))
    loader = torch.utils.data.DataLoader(data, batch_size=1, collate_fn=lambda b: b)

    def per_batch() -> float:
        start = time.perf_counter_ns()
        for _ in loader:
            pass
        return (time.perf_counter_ns() - start) / batches

    original = dl._BaseDataLoaderIter.__next__
    plain = min(per_batch() for _ in range(3))
    with tempfile.TemporaryDirectory() as tmp:
        LifeRecorder(Path(tmp), Log(), lambda: 0, lambda: None)._wrap_dataloader(dl)
        try:
            timed = min(per_batch() for _ in range(3))
        finally:
            dl._BaseDataLoaderIter.__next__ = original  # type: ignore[method-assign]
    return plain, timed - plain


LOAD_JOB = ROOT / "tests" / "jobs" / "load_loop.py"


def run_load_job(calls: int, tmp: Path, hooked: bool) -> float:
    """Seconds the job's save/load loop took, alone or under the hook (no profiler window)."""
    from scope.collectors.launch_env import SITE_DIR

    env = clean_env()
    env.update(PYTHONPATH=os.pathsep.join([str(SITE_DIR), str(ROOT)]), RANK="0", SCOPE_PROFILE_START="-1")
    if hooked:
        env["SCOPE_RUN_DIR"] = str(tmp / f"run-{time.time_ns()}")
    cmd = [sys.executable, str(LOAD_JOB), "--steps", "1", "--roundtrip", str(tmp / "files"), "--calls", str(calls)]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return next(float(line.split()[1]) for line in proc.stdout.splitlines() if line.startswith("elapsed "))


def loads_cost(calls: int, repeats: int) -> None:
    times: dict[str, list[float]] = {"alone": [], "hook": []}
    with tempfile.TemporaryDirectory(prefix="scope-loads-") as tmp:
        for rep in range(repeats):
            for mode in times:
                times[mode].append(run_load_job(calls, Path(tmp), mode == "hook"))
                print(f"  repeat {rep + 1} {mode:5s} {times[mode][-1]:7.3f} s", flush=True)
    alone, hook = statistics.median(times["alone"]), statistics.median(times["hook"])
    # each pair ran back to back: their ratio is less exposed to the load of a shared machine
    paired = statistics.median(h / a for a, h in zip(times["alone"], times["hook"], strict=True))
    print(
        f"torch.save + torch.load, {calls:,} calls each (median of {repeats}): alone {alone:.3f} s, "
        f"under the hook {hook:.3f} s; x{paired:.3f} pair by pair (target < x1.10)"
    )


def collective_cost_ns(calls: int = 5000) -> float:
    """ns the collective timing adds to one collective: a one-rank gloo all-reduce of 1,000 floats, wrapped
    (collectors/hook/collectives.py) against bare, alternating blocks, min of 5."""
    from types import ModuleType

    import torch
    import torch.distributed as dist
    from scope.collectors.hook.collectives import CollectiveTimer
    from scope.collectors.hook.hooklog import HookLog

    if not dist.is_initialized():
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    module = ModuleType("timed")
    module.all_reduce = dist.all_reduce  # type: ignore[attr-defined]
    CollectiveTimer(HookLog()).wrap(module)
    t = torch.ones(1000)

    def per_call(fn: object) -> float:
        start = time.perf_counter_ns()
        for _ in range(calls):
            fn(t)  # type: ignore[operator]
        return (time.perf_counter_ns() - start) / calls

    bare, timed = [], []
    for _ in range(5):
        bare.append(per_call(dist.all_reduce))
        timed.append(per_call(module.all_reduce))  # type: ignore[attr-defined]
    return max(0.0, min(timed) - min(bare))


def tick_cost_ns(ticks: int = 2000) -> float:
    """ns of the hook thread's work per progress line (schedstat read, collective counters, one line appended)."""
    from scope.collectors.hook.config import HookConfig
    from scope.collectors.hook.core import Hook

    with tempfile.TemporaryDirectory() as tmp:
        hook = Hook(HookConfig(run_dir=Path(tmp), rank=0, profile_start=-1))
        hook._setup_outputs()
        hook.life.collectives.totals[("0", "all_reduce")] = [0, 0, 0]
        spent = 0
        for i in range(ticks):
            hook.step, hook.last_step_ns = i + 1, time.time_ns()
            hook.life.collectives.totals[("0", "all_reduce")][0] += 3  # three collectives a step
            start = time.perf_counter_ns()
            hook.life.tick()
            spent += time.perf_counter_ns() - start
        return spent / ticks


def bootstrap_median(xs: list[float], rounds: int = 2000) -> tuple[float, float]:
    import random

    rng = random.Random(0)
    meds = sorted(statistics.median(rng.choices(xs, k=len(xs))) for _ in range(rounds))
    return meds[int(0.025 * rounds)], meds[int(0.975 * rounds) - 1]


def ab_pairs(label: str, run_a: object, run_b: object, pairs: int) -> list[float]:
    """Ratios B/A of median step times, one per pair, the order alternating."""
    ratios: list[float] = []
    for i in range(pairs):
        order = (("A", run_a), ("B", run_b)) if i % 2 == 0 else (("B", run_b), ("A", run_a))
        med = {name: statistics.median(fn()) for name, fn in order}  # type: ignore[operator]
        ratios.append(med["B"] / med["A"])
        print(f"  {label} pair {i + 1}: A {med['A']:.2f} ms  B {med['B']:.2f} ms  x{ratios[-1]:.3f}", flush=True)
    return ratios


def say_ratios(label: str, ratios: list[float]) -> None:
    q = statistics.quantiles(ratios, n=4) if len(ratios) >= 2 else [ratios[0]] * 3
    lo, hi = bootstrap_median(ratios)
    print(
        f"{label}: median x{statistics.median(ratios):.4f} over {len(ratios)} pairs, IQR x{q[0]:.4f}..x{q[2]:.4f}, "
        f"bootstrap 95% x{lo:.4f}..x{hi:.4f}"
    )


def ab(steps: int, nproc: int, pairs: int) -> None:
    with tempfile.TemporaryDirectory(prefix="scope-ab-") as tmp:
        nolive = ab_pairs(
            "nolive/live",
            lambda: run_scope(steps, nproc, False, Path(tmp), live=False),
            lambda: run_scope(steps, nproc, False, Path(tmp), live=True),
            pairs,
        )
        plain = ab_pairs(
            "plain/scope",
            lambda: run_plain(steps, nproc),
            lambda: run_scope(steps, nproc, False, Path(tmp), live=True),
            pairs,
        )
        step_ms = statistics.median(run_plain(steps, nproc))
    print(f"\nddp, {nproc} ranks, {steps} steps a run, median step {step_ms:.1f} ms")
    say_ratios("live detection (scope run over scope run --no-live)", nolive)
    say_ratios("scope run over plain torchrun", plain)
    direct_cost(step_ms)


def direct_cost(step_ms: float, collectives_per_step: int = 3, lines_per_s: float = 2.0) -> None:
    """The live hook's own code per step, timed directly: a bound that holds where wall-time noise is larger."""
    opt_ns = hook_cost_ns()
    coll_ns = collective_cost_ns()
    line_ns = tick_cost_ns()
    _, data_ns = data_wait_cost_ns()
    line_per_step = line_ns * lines_per_s * step_ms / 1e3  # the hook thread's lines fall within the steps
    total = opt_ns + collectives_per_step * coll_ns + line_per_step + data_ns
    print(
        f"live hook's own code per step: optimizer hook {opt_ns / 1e3:.2f} us, {collectives_per_step} collectives "
        f"x {coll_ns / 1e3:.2f} us, progress line {line_ns / 1e3:.1f} us x {lines_per_s:g}/s "
        f"({line_per_step / 1e3:.2f} us a step), DataLoader {data_ns / 1e3:.2f} us: {total / 1e3:.1f} us per "
        f"{step_ms:.1f} ms step = {total / (step_ms * 1e6) * 100:.3f}% (target <= 0.5%)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--nproc", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--loads-only", action="store_true", help="only the torch.save/load job")
    parser.add_argument("--calls", type=int, default=4000, help="torch.save and torch.load calls of that job")
    parser.add_argument("--ab-only", action="store_true", help="only the interleaved A/B pairs and direct costs")
    parser.add_argument("--pairs", type=int, default=12, help="A/B pairs per comparison (--ab-only)")
    parser.add_argument("--ab-steps", type=int, default=25, help="steps per A/B run")
    args = parser.parse_args()
    if args.ab_only:
        ab(args.ab_steps, args.nproc, args.pairs)
        return 0
    if args.loads_only:
        loads_cost(args.calls, max(args.repeats, 3))
        return 0
    samples: dict[str, list[float]] = {"none": [], "nolive": [], "idle": [], "window": []}
    with tempfile.TemporaryDirectory(prefix="scope-overhead-") as tmp:
        for rep in range(args.repeats):
            for mode in samples:
                if mode == "none":
                    times = run_plain(args.steps, args.nproc)
                else:
                    times = run_scope(args.steps, args.nproc, mode == "window", Path(tmp), live=mode != "nolive")
                samples[mode] += times
                print(f"  repeat {rep + 1} {mode:6s} median {statistics.median(times):8.2f} ms", flush=True)
    base = statistics.median(samples["none"])
    print(f"\nddp, {args.nproc} ranks, {args.steps} steps x {args.repeats} repeats (median step time, rank 0)")
    for mode, times in samples.items():
        median = statistics.median(times)
        print(f"  {mode:6s} {median:8.2f} ms   x{median / base:.3f}   ({len(times)} steps)")
    live = statistics.median(samples["idle"]) / statistics.median(samples["nolive"])
    print(f"  live detection (idle over nolive): x{live:.3f}")
    cost = hook_cost_ns()
    print(f"\nidle hook, measured directly: {cost:.0f} ns per step = {cost / (base * 1e6) * 100:.4f}% of a step")
    plain, added = data_wait_cost_ns()
    print(
        f"DataLoader wait timing: +{added:.0f} ns per batch on a {plain:.0f} ns in-memory batch "
        f"(x{(plain + added) / plain:.3f}); {added / (base * 1e6) * 100:.4f}% of a step"
    )
    loads_cost(args.calls, max(args.repeats, 3))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
