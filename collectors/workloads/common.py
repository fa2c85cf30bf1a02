"""What every sample workload shares: options, process-group set-up, profiling, the step loop."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from scope.collectors.workloads.faults import FAULTS, FaultSpec, ground_truth

DEFAULT_WORLD_SIZE = 4
# Profile window when the workload profiles itself (--profile-dir): small traces, 3 steps by default.
PROFILE_WAIT, PROFILE_WARMUP, PROFILE_ACTIVE = 1, 1, 3


@dataclass
class RankContext:
    rank: int
    world_size: int
    fault: FaultSpec


def base_parser(workload: str, description: str, faults: tuple[str, ...]) -> argparse.ArgumentParser:
    """Options every workload takes; each adds its own sizing options."""
    parser = argparse.ArgumentParser(prog=f"scope.collectors.workloads.{workload}", description=description)
    parser.add_argument("--steps", type=int, default=10, help="optimizer steps to run (default 10)")
    parser.add_argument("--fault", choices=faults, default="none", help="fault to inject (default none)")
    parser.add_argument("--fault-rank", type=int, default=1, help="rank the fault hits (default 1)")
    parser.add_argument("--factor", type=float, default=3.0, help="slowdown / imbalance factor (default 3)")
    parser.add_argument(
        "--fault-step", type=int, default=None, help="step of a one-shot fault (default: the middle step)"
    )
    parser.add_argument("--delay-ms", type=float, default=100.0, help="slow-link delay per all-reduce")
    parser.add_argument("--pg-timeout-s", type=float, default=30.0, help="process-group timeout (s)")
    parser.add_argument("--scenario", default=None, help="scenario name for the ground truth")
    parser.add_argument("--profile-dir", type=Path, default=None, help="profile a window of steps into this folder")
    parser.add_argument(
        "--profile-steps", type=int, default=PROFILE_ACTIVE, help=f"steps in that window (default {PROFILE_ACTIVE})"
    )
    parser.add_argument(
        "--profile-memory", action="store_true", help="record allocations in the profile (profile_memory=True)"
    )
    parser.add_argument("--seed", type=int, default=0)
    return parser


def fault_spec(args: argparse.Namespace) -> FaultSpec:
    """The fault as given; a one-shot fault without a step strikes mid-run."""
    step = args.fault_step
    if step is None and FAULTS[args.fault].one_shot:
        step = args.steps // 2
    return FaultSpec(
        name=args.fault,
        rank=args.fault_rank,
        factor=args.factor,
        step=step,
        delay_ms=args.delay_ms,
    )


def relaunch_under_torchrun(module: str, nproc: int = DEFAULT_WORLD_SIZE) -> None:
    """`python -m scope.collectors.workloads.X` outside torchrun: run the same module under torchrun."""
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        return
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}"]
    cmd += ["-m", module, *sys.argv[1:]]
    sys.stdout.flush()
    os.execv(sys.executable, cmd)


def init_distributed(args: argparse.Namespace) -> RankContext:
    """gloo process group with the requested timeout (gloo's send/recv waits use it too)."""
    # One thread per rank: several ranks share few cores, and step times stay comparable.
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout_s))
    ctx = RankContext(dist.get_rank(), dist.get_world_size(), fault_spec(args))
    if args.fault != "none" and not 0 <= args.fault_rank < ctx.world_size:
        if ctx.rank == 0:
            print(f"error: --fault-rank {args.fault_rank} outside 0..{ctx.world_size - 1}", file=sys.stderr)
        dist.destroy_process_group()
        sys.exit(2)
    if args.fault_step is not None and not 0 <= args.fault_step < args.steps:
        if ctx.rank == 0:
            print(f"error: --fault-step {args.fault_step} outside 0..{args.steps - 1}", file=sys.stderr)
        dist.destroy_process_group()
        sys.exit(2)
    window = PROFILE_WAIT + PROFILE_WARMUP + args.profile_steps
    if args.profile_dir is not None and not (args.profile_steps >= 1 and window <= args.steps):
        if ctx.rank == 0:  # the window would never close, so no trace would be written
            print(f"error: --profile-steps {args.profile_steps} needs 1..{args.steps - window + args.profile_steps}"
                  f" with --steps {args.steps}", file=sys.stderr)  # fmt: skip
        dist.destroy_process_group()
        sys.exit(2)
    return ctx


def publish_ground_truth(
    ctx: RankContext,
    workload: str,
    args: argparse.Namespace,
    config: dict[str, Any],
    expected: dict[str, Any] | None = None,
    op: str | None = None,
) -> None:
    """Rank 0 writes $SCOPE_RUN_DIR/ground_truth.json (when set) and prints it on one line."""
    if ctx.rank != 0:
        return
    scenario = args.scenario or ("healthy" if ctx.fault.name == "none" else ctx.fault.name)
    truth = ground_truth(workload, scenario, ctx.fault, ctx.world_size, args.steps, config)
    truth["expected"].update(expected or {})
    if op is not None and ctx.fault.info.op is not None:  # the workload's own collective for this fault
        truth["op"] = op
    run_dir = os.environ.get("SCOPE_RUN_DIR")
    if run_dir:
        path = Path(run_dir) / "ground_truth.json"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".json.tmp")
            tmp.write_text(json.dumps(truth, indent=2) + "\n")
            tmp.replace(path)
        except OSError as exc:  # the ground truth is a label, never a reason to stop the job
            print(f"scope-workload: cannot write {path}: {exc}", file=sys.stderr)
    print("scope-workload: " + json.dumps(truth, sort_keys=True), flush=True)


@contextmanager
def maybe_profile(
    profile_dir: Path | None, rank: int, active: int = PROFILE_ACTIVE, memory: bool = False
) -> Iterator[Callable[[], None]]:
    """Yield a per-step callback: profiler.step() under --profile-dir, a no-op otherwise."""
    if profile_dir is None:
        yield lambda: None
        return
    from torch.profiler import ProfilerActivity, profile, schedule

    profile_dir.mkdir(parents=True, exist_ok=True)
    out = profile_dir / f"rank{rank}.pt.trace.json"

    def export(prof: torch.profiler.profile) -> None:
        prof.export_chrome_trace(str(out))

    window = schedule(wait=PROFILE_WAIT, warmup=PROFILE_WARMUP, active=active, repeat=1)
    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=window,
        on_trace_ready=export,
        record_shapes=True,
        profile_memory=memory,
    ) as prof:
        yield prof.step


def run_steps(
    ctx: RankContext,
    steps: int,
    profile_dir: Path | None,
    one_step: Callable[[int], None],
    profile_steps: int = PROFILE_ACTIVE,
    profile_memory: bool = False,
) -> None:
    """Run `one_step(step)` `steps` times (each ends in optimizer.step()) and report step times."""
    times_ms: list[float] = []
    ends_ns: list[int] = []  # when each step ended (wall clock): benchmarks match steps to time blocks
    with maybe_profile(profile_dir, ctx.rank, profile_steps, profile_memory) as profiler_step:
        for step in range(steps):
            start = time.perf_counter()
            one_step(step)
            times_ms.append((time.perf_counter() - start) * 1e3)
            ends_ns.append(time.time_ns())
            profiler_step()
    report = {
        "rank": ctx.rank,
        "steps": steps,
        "median_step_ms": round(statistics.median(times_ms), 2) if times_ms else None,
        "step_ms": [round(t, 2) for t in times_ms],
        "end_ns": ends_ns,
    }
    print("scope-workload-steps: " + json.dumps(report), flush=True)


def train(ctx: RankContext, args: argparse.Namespace, one_step: Callable[[int], None]) -> int:
    """The workload's steps as its common options ask (--steps, --profile-dir, --profile-steps,
    --profile-memory), then leave together; the rank's exit status."""
    run_steps(ctx, args.steps, args.profile_dir, one_step, args.profile_steps, args.profile_memory)
    finish(ctx)
    return 0


def finish(ctx: RankContext) -> None:
    """Leave together, so no rank tears the group down under a peer still in a collective."""
    dist.barrier()
    dist.destroy_process_group()
