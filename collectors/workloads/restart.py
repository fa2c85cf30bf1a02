"""Restart workload: a DDP job that checkpoints every N steps; one rank crashes once at a chosen step,
torchrun (--max-restarts) restarts the group, every rank resumes from the last checkpoint and finishes.

    torchrun --nproc-per-node 4 --max-restarts 1 -m scope.collectors.workloads.restart --steps 16

The ground truth is written by the workload itself as it runs: rank 0 (and the crashing rank) append
each phase's wall-clock span to $SCOPE_RUN_DIR/ground_truth/restart_events.jsonl (process start from
/proc, training start, each step, each blocking save, the load, the crash, the end), and the last attempt
turns them into ground_truth.json: attempts, steps redone, checkpoints, and the job's wall time by bucket
(the same buckets `scope goodput` reports).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from scope.collectors.hook.lifecycle import process_start_ns
from scope.collectors.workloads.common import relaunch_under_torchrun

MODULE = "scope.collectors.workloads.restart"
EVENTS = "restart_events.jsonl"


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=MODULE, description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=16, help="training steps in all (default 16)")
    p.add_argument("--ckpt-every", type=int, default=None, help="checkpoint every N steps (default steps // 3)")
    p.add_argument("--crash-step", type=int, default=None, help="step the crash strikes (default: mid-interval)")
    p.add_argument("--crash-rank", "--fault-rank", type=int, default=2, dest="crash_rank", help="rank that crashes")
    p.add_argument("--step-s", type=float, default=0.25, help="wall time of one step (padded; default 0.25)")
    p.add_argument("--ckpt-mb", type=float, default=32.0, help="checkpoint payload in MB (default 32)")
    p.add_argument("--scenario", default="restart")
    args = p.parse_args(argv)
    args.ckpt_every = args.ckpt_every or max(2, args.steps // 3)
    if args.crash_step is None:  # just before the third checkpoint: most of an interval is redone
        args.crash_step = min(args.steps, 3 * args.ckpt_every)
    return args


class Truth:
    """Phase events of this run, appended as they happen (a crash must not lose them)."""

    def __init__(self, run_dir: Path | None, rank: int, attempt: int) -> None:
        self.path = run_dir / "ground_truth" / EVENTS if run_dir else None
        self.rank, self.attempt = rank, attempt
        if self.path:
            self.path.parent.mkdir(parents=True, exist_ok=True)

    def event(self, kind: str, **fields: Any) -> None:
        if self.path is None:
            return
        record = {"kind": kind, "attempt": self.attempt, "rank": self.rank, **fields}
        with open(self.path, "a") as fh:
            fh.write(json.dumps(record) + "\n")
            fh.flush()


def main(argv: list[str] | None = None) -> None:
    relaunch_under_torchrun(MODULE)
    args = parse(argv)
    run_dir = Path(os.environ["SCOPE_RUN_DIR"]) if os.environ.get("SCOPE_RUN_DIR") else None
    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") or 0)
    _init_group(attempt)
    rank, world = dist.get_rank(), dist.get_world_size()
    truth = Truth(run_dir, rank, attempt) if rank in (0, args.crash_rank) else Truth(None, rank, attempt)
    if rank == 0:
        truth.event("start", t=(process_start_ns() or time.time_ns()) / 1e9)
    ckpt_dir = (run_dir or Path(".")) / "checkpoints"
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(64, 64))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    done = _resume(ckpt_dir, model, opt, truth, rank)
    dist.barrier()
    if rank == 0:
        truth.event("train_start", t=time.time(), resume_step=done)
    for step in range(done + 1, args.steps + 1):
        if attempt == 0 and step == args.crash_step and rank == args.crash_rank:
            truth.event("crash", t=time.time(), step=step, completed=step - 1)
            raise RuntimeError(f"injected crash on rank {rank} at step {step} (restart workload)")
        _train_step(model, opt, args.step_s)
        if step % args.ckpt_every == 0:
            _save(ckpt_dir, step, model, opt, args.ckpt_mb, truth, rank)
    if rank == 0:
        truth.event("end", t=time.time(), step=args.steps)
        _publish(run_dir, args, world)
    dist.destroy_process_group()


def _init_group(attempt: int) -> None:
    """gloo on a store namespaced by attempt: torch 2.13's gloo rendezvous after a torchrun restart otherwise
    reads the previous attempt's addresses from torchrun's store and fails ("connectFullMesh ... Connection
    refused")."""
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    agent = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
    timeout = timedelta(seconds=60)
    store = dist.TCPStore(
        os.environ["MASTER_ADDR"],
        int(os.environ["MASTER_PORT"]),
        world,
        is_master=not agent and rank == 0,
        timeout=timeout,
    )
    prefixed = dist.PrefixStore(f"/scope_restart/attempt_{attempt}", store)
    dist.init_process_group("gloo", store=prefixed, rank=rank, world_size=world, timeout=timeout)


def _train_step(model: torch.nn.Module, opt: torch.optim.Optimizer, step_s: float) -> None:
    """The step's padding first (standing in for compute), then the real work: the optimizer step ends it,
    as in any training loop, so the hook's step clock and this workload's agree."""
    # annotated, as a real step's compute is traced: the step budget reads it as compute, not unexplained
    with torch.profiler.record_function("compute padding"):
        time.sleep(step_s)
    loss = model(torch.randn(32, 64)).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()


def _save(ckpt_dir: Path, step: int, model: Any, opt: Any, mb: float, truth: Truth, rank: int) -> None:
    """Rank 0 writes; every rank waits at the barrier (a blocking save)."""
    t0 = time.time()
    if rank == 0:
        payload = torch.zeros(int(mb * (1 << 20) / 4))
        path = ckpt_dir / f"step{step}.pt"
        torch.save({"step": step, "model": model.state_dict(), "opt": opt.state_dict(), "pad": payload}, path)
        (ckpt_dir / "latest").write_text(path.name)
    dist.barrier()
    if rank == 0:
        truth.event("save", t0=t0, t1=time.time(), step=step)


def _resume(ckpt_dir: Path, model: Any, opt: Any, truth: Truth, rank: int) -> int:
    latest = ckpt_dir / "latest"
    if not latest.is_file():
        return 0
    t0 = time.time()
    state = torch.load(ckpt_dir / latest.read_text().strip(), weights_only=False)
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])
    if rank == 0:
        truth.event("load", t0=t0, t1=time.time(), step=state["step"])
    return int(state["step"])


def _publish(run_dir: Path | None, args: argparse.Namespace, world: int) -> None:
    if run_dir is None:
        return
    events = [json.loads(line) for line in (run_dir / "ground_truth" / EVENTS).read_text().splitlines() if line]
    truth = ground_truth(events, args, world)
    path = run_dir / "ground_truth.json"
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(truth, indent=2) + "\n")
    tmp.replace(path)
    print(
        "scope-workload: ground truth " + json.dumps({k: truth[k] for k in ("attempts", "steps_redone", "checkpoints")})
    )
    sys.stdout.flush()


def ground_truth(events: list[dict[str, Any]], args: argparse.Namespace, world: int) -> dict[str, Any]:
    """The job's wall time by bucket, from the phase events (see the module docstring)."""
    by = lambda kind: [e for e in events if e["kind"] == kind]  # noqa: E731
    starts, trains, saves, loads = by("start"), by("train_start"), by("save"), by("load")
    crash, end = by("crash"), by("end")[-1]
    attempts = sorted({e["attempt"] for e in starts})
    wall0, wall1 = min(e["t"] for e in starts), end["t"]
    save_s = sum(e["t1"] - e["t0"] for e in saves)
    load_s = sum(e["t1"] - e["t0"] for e in loads)
    init_s = sum(t["t"] - s["t"] for s, t in zip(starts, trains, strict=False)) - load_s
    redone_s = f2r_s = 0.0
    redone_steps = 0
    if crash:
        c = crash[0]
        kept = max((e["step"] for e in saves if e["attempt"] == 0 and e["step"] < c["step"]), default=0)
        last_save_end = max((e["t1"] for e in saves if e["attempt"] == 0 and e["step"] == kept), default=None)
        train0 = next(t["t"] for t in trains if t["attempt"] == 0)
        redone_s = c["t"] - (last_save_end or train0)
        redone_steps = c["completed"] - kept
        f2r_s = min(s["t"] for s in starts if s["attempt"] > 0) - c["t"]
    productive_s = (wall1 - wall0) - init_s - load_s - save_s - redone_s - f2r_s
    buckets = {
        "productive": productive_s,
        "initialization": init_s,
        "checkpoint_save": save_s,
        "checkpoint_load": load_s,
        "redone": redone_s,
        "failure_to_restart": f2r_s,
    }
    return {
        "workload": "restart",
        "scenario": args.scenario,
        "fault": "crash",
        "fault_rank": args.crash_rank,
        "world_size": world,
        "steps": args.steps,
        "config": {"ckpt_every": args.ckpt_every, "crash_step": args.crash_step, "step_s": args.step_s},
        "attempts": len(attempts),
        "steps_redone": redone_steps,
        "checkpoints": len(saves),
        "loads": len(loads),
        "wall_s": wall1 - wall0,
        "start": wall0,
        "end": wall1,
        "buckets": buckets,
        "expected": {
            "status": "completed",
            "kinds": ["crash", "rollback_loss"],
            "ranks": [args.crash_rank],
            "steps": [args.crash_step],
        },
    }


if __name__ == "__main__":
    main()
