"""`scope attach`: reach into a job that is already running.

scope attach RUN --profile-steps K      every rank of a `scope run` job profiles its next K steps
scope attach RUN --dump                 every rank dumps its stacks and Flight Recorder now
scope attach RUN --memory-snapshot      every rank writes its CUDA memory snapshot now
scope attach --pid PID... --out RUN     a job started without scope: counters and stacks from outside
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any

from scope.collectors.hook.windows import MAX_WINDOW_STEPS
from scope.errors import EXIT_INPUT, EXIT_OK, EXIT_PARTIAL, EXIT_USAGE, ScopeError
from scope.options import bounded

NAME = "attach"
HELP = "profile the next K steps of a running scope job, dump its stacks, or watch any job by PID"

# How long a rank's hook may take to notice a request (it polls control/ about once a second).
NOTICE_S = 2.0
MIN_LEAD_STEPS = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", nargs="?", type=Path, metavar="RUN", help="run directory of a `scope run` job")
    parser.add_argument(
        "--profile-steps",
        type=bounded(int, 1, MAX_WINDOW_STEPS),
        metavar="K",
        help=f"profile the next K steps on every rank (1 to {MAX_WINDOW_STEPS}: a window is held in memory)",
    )
    parser.add_argument(
        "--at-step",
        type=bounded(int, 0),
        default=None,
        metavar="N",
        help="start the window at step N (default: soon, same on all ranks)",
    )
    parser.add_argument("--dump", action="store_true", help="dump stacks and Flight Recorder on every rank now")
    parser.add_argument(
        "--memory-snapshot",
        action="store_true",
        help="write every rank's CUDA memory snapshot now (ranks/*/memory/; with history under "
        "scope run --memory-snapshot-on-oom)",
    )
    parser.add_argument(
        "--wait", type=bounded(float, 0), default=0.0, metavar="S", help="wait up to S seconds for the results"
    )
    parser.add_argument(
        "--pid", type=bounded(int, 1), nargs="+", metavar="PID", help="processes of a job started without scope"
    )
    parser.add_argument("--out", type=Path, metavar="RUN", help="with --pid: where to write")
    parser.add_argument("--seconds", type=bounded(float, 0), default=None, help="with --pid: stop after S seconds")
    parser.add_argument(
        "--hz", type=bounded(float, 0.01, 10), default=1.0, help="with --pid: counter samples per second"
    )
    parser.add_argument(
        "--no-stacks", action="store_true", help="with --pid: counters only, no py-spy stack dumps (py-spy not needed)"
    )


def run(args: argparse.Namespace) -> int:
    if args.pid:
        return _attach_pids(args)
    if args.run_dir is None:
        raise ScopeError("give a run directory (scope attach RUN --profile-steps K) or --pid PID --out RUN", EXIT_USAGE)
    if not args.profile_steps and not args.dump and not args.memory_snapshot:
        raise ScopeError("nothing to do: give --profile-steps K, --dump and/or --memory-snapshot", EXIT_USAGE)
    if args.profile_steps is not None and args.profile_steps < 1:
        raise ScopeError("--profile-steps must be at least 1", EXIT_USAGE)
    run_dir = _running_run_dir(args.run_dir)
    code = EXIT_OK
    if args.profile_steps:
        code = max(code, _request_profile(run_dir, args.profile_steps, args.at_step, args.wait))
    if args.dump:
        code = max(code, _request_dump(run_dir, args.wait))
    if args.memory_snapshot:
        from scope.collectors.hook.control import write_request

        path = write_request(run_dir, "memory_snapshot")
        print(f"scope attach: memory snapshot requested ({path.name}); see ranks/*/memory/")
    return code


def _attach_pids(args: argparse.Namespace) -> int:
    if args.out is None:
        raise ScopeError("--pid needs --out RUN (where to write)", EXIT_USAGE)
    from scope.collectors.sidecar.attach import attach_pids

    if not args.no_stacks:
        require_py_spy()
    return int(attach_pids(args.pid, args.out, seconds=args.seconds, hz=args.hz, stacks=not args.no_stacks) or 0)


def require_py_spy() -> None:
    """Stacks are what attach by PID is for on a hung job: without py-spy say so before attaching."""
    from scope.collectors.sidecar.attach import find_py_spy

    if find_py_spy() is None:
        raise ScopeError(
            "attach --pid dumps Python stacks with py-spy, which is not installed: "
            "pip install 'scope-profiler[attach]' (or give --no-stacks for counters only)",
            EXIT_USAGE,
        )


def _running_run_dir(run_dir: Path) -> Path:
    from scope.rundir import is_run_dir

    if not run_dir.is_dir():
        raise ScopeError(f"{run_dir}: no such run directory", EXIT_INPUT)
    if not is_run_dir(run_dir):
        raise ScopeError(f"{run_dir}: no run.json (was the job started with `scope run`?)", EXIT_INPUT)
    if not _live_heartbeats(run_dir):
        raise ScopeError(f"{run_dir}: no rank is running (no live heartbeat under ranks/*/heartbeat.json)", EXIT_INPUT)
    return run_dir


def _live_heartbeats(run_dir: Path) -> dict[int, dict[str, Any]]:
    from scope.collectors.watchdog import read_heartbeats

    return {r: b for r, b in read_heartbeats(run_dir).items() if b.get("state") == "running"}


def choose_start_step(beats: dict[int, dict[str, Any]]) -> int:
    """A step no rank has reached yet by the time every rank has seen the request.

    Ranks of a synchronous job are within a step of each other; starting every window at the same
    step keeps the windows comparable across ranks.
    """
    now = time.time_ns()
    rates = [float(b["steps_per_s"]) for b in beats.values() if b.get("steps_per_s")]
    newest = max(int(b.get("step") or 0) for b in beats.values())
    rate = max(rates) if rates else 1.0
    # Steps made since the oldest heartbeat was written, and while the hooks notice the request.
    lag_s = max(0.0, (now - min(b.get("written_ns") or now for b in beats.values())) / 1e9)
    return newest + MIN_LEAD_STEPS + math.ceil(rate * (NOTICE_S + lag_s))


def _request_profile(run_dir: Path, steps: int, at_step: int | None, wait_s: float) -> int:
    from scope.collectors.hook.control import write_request

    beats = _live_heartbeats(run_dir)
    first = at_step if at_step is not None else choose_start_step(beats)
    before = _trace_files(run_dir)
    path = write_request(run_dir, "profile", steps=steps, at_step=first)
    last = first + steps - 1
    print(f"scope attach: {len(beats)} running rank(s) will profile steps {first}-{last} ({path.name})")
    if wait_s <= 0:
        return EXIT_OK
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        new = _trace_files(run_dir) - before
        if {_rank_of(p) for p in new} >= set(beats):
            for p in sorted(new):
                print(f"  {p.relative_to(run_dir)}")
            return EXIT_OK
        time.sleep(0.5)
    got = sorted({_rank_of(p) for p in _trace_files(run_dir) - before})
    print(
        f"scope attach: after {wait_s:.0f} s, new windows from ranks {got} of {sorted(beats)}",
        file=sys.stderr,
    )
    return EXIT_PARTIAL


def _request_dump(run_dir: Path, wait_s: float) -> int:
    from scope.collectors.hook.control import write_request

    path = write_request(run_dir, "dump", reason="attach")
    print(f"scope attach: dump requested ({path.name}); see ranks/*/stacks/ and ranks/*/fr/")
    if wait_s > 0:
        time.sleep(min(wait_s, NOTICE_S + 1))
    return EXIT_OK


def _trace_files(run_dir: Path) -> set[Path]:
    return {p for p in (run_dir / "ranks").glob("*/traces/*.pt.trace.json.gz")}


def _rank_of(path: Path) -> int:
    return int(path.parent.parent.name)
