"""`scope run`: launch a training job through torchrun with collection on."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from scope.cli.watch import add_live_arguments
from scope.errors import EXIT_USAGE, ScopeError
from scope.options import bounded

NAME = "run"
HELP = "launch a job through torchrun with collection on (traces, logs, Flight Recorder, hang watchdog)"

USAGE_TAIL = """
examples:
  scope run --out runs/r1 --nproc-per-node 4 -- train.py --epochs 1
  scope run --out runs/r2 --nproc-per-node 4 --hang-timeout 60 --kill-on-hang -- -m mypkg.train
  srun -N 2 --ntasks-per-node 1 scope run --out /shared/runs/r3 --nproc-per-node 8 \\
      --rdzv-backend c10d --rdzv-endpoint $HEAD:29500 -- train.py
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = USAGE_TAIL
    parser.add_argument("--out", required=True, type=Path, metavar="RUN", help="run directory to write")
    add_launch_arguments(parser)
    parser.add_argument(
        "command",
        nargs=argparse.REMAINDER,
        metavar="-- SCRIPT ARGS",
        help="the training script and its arguments (or -m MODULE ARGS), after --",
    )


def add_launch_arguments(parser: argparse.ArgumentParser) -> None:
    """torchrun's options and scope's collection options."""
    dist = parser.add_argument_group("torchrun")
    dist.add_argument("--nproc-per-node", default="1", help="processes per node (default 1)")
    dist.add_argument("--nnodes", default=None, help="nodes, or MIN:MAX (default: from Slurm/MPI, else 1)")
    dist.add_argument(
        "--node-rank", type=bounded(int, 0), default=None, help="this node's rank (default: from Slurm/MPI)"
    )
    dist.add_argument("--rdzv-endpoint", default=None, help="rendezvous HOST:PORT")
    dist.add_argument("--rdzv-backend", default=None, help="rendezvous backend (c10d, static, ...)")
    dist.add_argument("--rdzv-id", default=None, help="rendezvous id (also the run id)")
    dist.add_argument("--rdzv-conf", default=None, help="rendezvous config KEY=VALUE,...")
    dist.add_argument("--master-addr", default=None, help="master address (static rendezvous)")
    dist.add_argument(
        "--master-port", type=bounded(int, 1, 65535), default=None, help="master port (static rendezvous)"
    )
    dist.add_argument(
        "--max-restarts", type=bounded(int, 0), default=0, help="torchrun restarts on failure (default 0)"
    )
    dist.add_argument(
        "--torchrun-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="pass ARG to torchrun (repeatable; --torchrun-arg=--flag for a flag)",
    )
    collect = parser.add_argument_group("collection")
    collect.add_argument(
        "--hang-timeout",
        type=bounded(float, 0),
        default=None,
        metavar="S",
        help="dump stacks and Flight Recorder when no rank steps for S seconds (default: the job's rhythm, "
        "10 typical steps and at least 30 s; 300 with --no-live; 0: off); keep it below the job's "
        "process-group timeout",
    )
    collect.add_argument("--kill-on-hang", action="store_true", help="end the job once a hang is recorded")
    collect.add_argument(
        "--profile-start",
        type=bounded(int, -1),
        default=2,
        metavar="STEP",
        help="first profiled step (default 2; -1: none)",
    )
    collect.add_argument(
        "--profile-every",
        type=bounded(int, 0),
        default=0,
        metavar="N",
        help="a profiler window starting every N steps (default 0: once; a window profiles at most N-1 steps)",
    )
    collect.add_argument(
        "--profile-active", type=bounded(int, 1), default=3, metavar="K", help="steps per window (default 3)"
    )
    collect.add_argument("--profile-flops", action="store_true", help="estimate FLOPs in the traces")
    collect.add_argument(
        "--profile-memory", action="store_true", help="record allocations in the traces (profile_memory=True)"
    )
    collect.add_argument(
        "--memory-snapshot-on-oom",
        type=bounded(int, 1),
        nargs="?",
        const=100_000,
        default=0,
        metavar="N",
        help="record the CUDA allocator's last N events (default 100000) and write a memory snapshot on OOM, "
        "exception or termination (off by default)",
    )
    collect.add_argument(
        "--time-ddp",
        action="store_true",
        help="time a gloo DDP reducer's gradient all-reduces through a comm hook, so live detection sees a slow "
        "link under plain DDP (off by default: one more pass over the gradients, up to 0.9%% of a small CPU step)",
    )
    collect.add_argument("--no-sidecar", action="store_true", help="do not sample host/GPU/network counters")
    collect.add_argument(
        "--sidecar-hz", type=bounded(float, 0.01, 10), default=1.0, help="counter samples per second (default 1)"
    )
    collect.add_argument("--quiet", action="store_true", help="do not echo the ranks' output to the terminal")
    collect.add_argument("--force", action="store_true", help="write into a run directory that holds a run")
    collect.add_argument("--no-live", action="store_true", help="no live detection (stragglers, hangs) while it runs")
    add_live_arguments(parser)


def launch_config(args: argparse.Namespace, out: Path, command: list[str], argv: list[str]):  # type: ignore[no-untyped-def]
    from scope.collectors.launcher import LaunchConfig

    if args.profile_active < 1:
        raise ScopeError("--profile-active must be at least 1", EXIT_USAGE)
    if args.hang_timeout is not None and args.hang_timeout < 0:
        raise ScopeError("--hang-timeout must be >= 0", EXIT_USAGE)
    every, active = _profile_schedule(args.profile_every, args.profile_active)
    return LaunchConfig(
        run_dir=out,
        command=command,
        nproc_per_node=str(args.nproc_per_node),
        nnodes=args.nnodes,
        node_rank=args.node_rank,
        rdzv_endpoint=args.rdzv_endpoint,
        rdzv_backend=args.rdzv_backend,
        rdzv_id=args.rdzv_id,
        rdzv_conf=args.rdzv_conf,
        master_addr=args.master_addr,
        master_port=args.master_port,
        max_restarts=args.max_restarts,
        torchrun_args=list(args.torchrun_arg),
        hang_timeout_s=args.hang_timeout,
        live=not getattr(args, "no_live", False),
        metrics_port=getattr(args, "metrics_port", None),
        alert_cmd=getattr(args, "alert_cmd", None),
        alert_url=getattr(args, "alert_url", None),
        hang_floor_s=getattr(args, "hang_floor", None),
        kill_on_hang=args.kill_on_hang,
        profile_start=args.profile_start,
        profile_every=every,
        profile_active=active,
        profile_flops=args.profile_flops,
        profile_memory=args.profile_memory,
        memory_snapshot_entries=args.memory_snapshot_on_oom,
        time_ddp=args.time_ddp,
        tee=not args.quiet,
        sidecar=not args.no_sidecar,
        sidecar_hz=args.sidecar_hz,
        force=args.force,
        argv=argv,
    )


def _profile_schedule(every: int, active: int) -> tuple[int, int]:
    """The window schedule the ranks will follow, said when it differs from the one asked for."""
    from scope.collectors.hook.config import window_schedule

    runs = window_schedule(every, active)
    if runs != (every, active):
        print(
            f"scope run: a profiler window every {runs[0]} steps, {runs[1]} step{'s' if runs[1] > 1 else ''} "
            f"each (asked: every {every}, {active} each): a window is warmed up during the step before it",
            file=sys.stderr,
        )
    return runs


def split_command(raw: list[str]) -> list[str]:
    command = list(raw)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        raise ScopeError("no command to run: scope run --out RUN -- SCRIPT ARGS...", EXIT_USAGE)
    return command


def run(args: argparse.Namespace) -> int:
    import sys

    from scope.collectors.launcher import launch
    from scope.deps import require_nvml_for_gpus

    if not args.no_sidecar:
        require_nvml_for_gpus("the sidecar's GPU counters", "give --no-sidecar")
    cfg = launch_config(args, args.out, split_command(args.command), ["scope", *sys.argv[1:]])
    result = launch(cfg)
    print(f"scope: run {result.status}: {result.run_dir}", file=sys.stderr)
    return result.exit_code
