"""`scope demo`: run a sample workload with an injected fault under `scope run`, analyze it, show it.

The demo succeeds when the scenario ran as designed: a crash scenario that crashed is a success.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scope.errors import EXIT_JOB_FAILED, EXIT_OK, EXIT_USAGE, ScopeError
from scope.options import bounded

NAME = "demo"
HELP = "run a 4-rank sample job with an injected fault under scope, analyze it and open the dashboard"

# scenario -> (workload module, fault)
if TYPE_CHECKING:
    from scope.finding import Finding

SCENARIOS: dict[str, tuple[str, str]] = {
    "healthy": ("ddp", "none"),
    "straggler": ("ddp", "straggler"),
    "slow-link": ("ddp", "slow-link"),
    "comm-bound": ("ddp", "comm-bound"),
    "hang": ("ddp", "hang"),
    "crash": ("ddp", "crash"),
    "desync": ("ddp", "desync"),
    "pipeline": ("pipeline", "none"),
    "pipeline-imbalance": ("pipeline", "pipeline-imbalance"),
    "fsdp": ("fsdp", "none"),
    # a rank crashes once; torchrun restarts the group, which resumes from the last checkpoint
    "restart": ("restart", "none"),
}
RESTART_MAX_RESTARTS = 1
# One step of the restart demo, in seconds: the 2 steps it redoes must stand well above the 1% of the job
# that makes work redone a finding, also when start-up on a busy 2-core host doubles the job's wall time.
RESTART_STEP_S = 1.0
# The hang scenario: the watchdog must fire well before the workload's process-group timeout.
HANG_TIMEOUT_S, HANG_PG_TIMEOUT_S = 8.0, 90.0
# Any other scenario should never stall; if it does, the demo records it and moves on.
SAFETY_HANG_TIMEOUT_S = 60.0
DEMO_PROFILED_STEPS, DEFAULT_PROFILED_STEPS = 5, 3
# `make demo` takes no options: where to serve, and for how long, can come from the environment.
PORT_ENV, SERVE_SECONDS_ENV = "SCOPE_DASHBOARD_PORT", "SCOPE_DEMO_SERVE_S"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scenario", default="straggler", choices=sorted(SCENARIOS), help="default: straggler")
    parser.add_argument("--fault-rank", type=bounded(int, 0), default=2, help="rank the fault hits (default 2)")
    parser.add_argument("--steps", type=bounded(int, 1), default=10, help="training steps (default 10)")
    parser.add_argument("--nproc-per-node", type=bounded(int, 1), default=4, help="ranks (default 4)")
    parser.add_argument("--out", type=Path, default=None, help="run directory (default runs/demo-SCENARIO-TIME)")
    parser.add_argument("--no-serve", action="store_true", help="do not start the dashboard (for scripts)")
    parser.add_argument("--host", default="127.0.0.1", help="dashboard host (default 127.0.0.1)")
    parser.add_argument(
        "--port",
        type=bounded(int, 0, 65535),
        default=os.environ.get(PORT_ENV, "8050"),  # a string default goes through type=int
        help=f"dashboard port (default ${PORT_ENV}, else 8050; 0 picks a free one)",
    )
    parser.add_argument("--verbose", action="store_true", help="echo the ranks' output")


def demo_launch_config(args: argparse.Namespace, out: Path) -> Any:
    from scope.collectors.launcher import LaunchConfig

    workload, fault = SCENARIOS[args.scenario]
    command = [
        "-m",
        f"scope.collectors.workloads.{workload}",
        "--steps",
        str(args.steps),
        "--scenario",
        args.scenario,
    ]
    if fault != "none":
        command += ["--fault", fault, "--fault-rank", str(args.fault_rank)]
    restart = args.scenario == "restart"
    if restart:
        command += ["--crash-rank", str(args.fault_rank), "--step-s", str(RESTART_STEP_S)]
    hang = args.scenario == "hang"
    if hang:
        command += ["--pg-timeout-s", str(HANG_PG_TIMEOUT_S)]
    return LaunchConfig(
        run_dir=out,
        command=command,
        nproc_per_node=str(args.nproc_per_node),
        profile_active=_profiled_steps(fault),
        hang_timeout_s=HANG_TIMEOUT_S if hang else SAFETY_HANG_TIMEOUT_S,
        # Start-up (torch import, gloo rendezvous) on a busy shared host can outlast 3x the hang timeout:
        # the injected hang strikes mid-run, so before the first step the watchdog waits as long as elsewhere.
        hang_startup_timeout_s=3 * SAFETY_HANG_TIMEOUT_S,
        kill_on_hang=True,
        max_restarts=RESTART_MAX_RESTARTS if restart else 0,
        tee=args.verbose,
        argv=["scope", "demo", *sys.argv[2:]],
    )


def _profiled_steps(fault: str) -> int:
    """Five steps for faults that last the whole run: medians that one descheduled step on a shared
    host cannot move. One-shot faults strike mid-run, so they keep the default window, which closes
    (and writes its traces) before they strike."""
    from scope.collectors.workloads.faults import FAULTS

    one_shot = fault in FAULTS and FAULTS[fault].one_shot
    return DEFAULT_PROFILED_STEPS if one_shot else DEMO_PROFILED_STEPS


def run(args: argparse.Namespace) -> int:
    from scope.collectors.launcher import launch

    if not 0 <= args.fault_rank < args.nproc_per_node:
        raise ScopeError(f"--fault-rank {args.fault_rank}: not a rank of {args.nproc_per_node}", EXIT_USAGE)
    _check_workload(SCENARIOS[args.scenario][0])
    out = args.out or Path("runs") / f"demo-{args.scenario}-{time.strftime('%Y%m%d-%H%M%S')}"
    port = args.port if args.no_serve else demo_port(args.host, args.port)
    expected = expected_status(SCENARIOS[args.scenario][1])
    print(f"scope demo: {args.scenario} on {args.nproc_per_node} ranks -> {out} (expected: {expected})", flush=True)
    result = launch(demo_launch_config(args, out))
    as_designed = result.status == expected
    print(f"scope demo: run {result.status} ({'as designed' if as_designed else f'expected {expected}'})")
    if result.manifest.ground_truth:
        print(f"scope demo: ground truth {result.manifest.ground_truth}")
    _analyze(result.run_dir)
    if not args.no_serve:
        _serve(result.run_dir, args.host, port)
    return EXIT_OK if as_designed else EXIT_JOB_FAILED


def expected_status(fault: str) -> str:
    """How a run with this fault ends (the workloads' own table says so)."""
    from scope.collectors.workloads.faults import FAULTS

    return FAULTS[fault].status if fault in FAULTS else "completed"


def _check_workload(workload: str) -> None:
    import importlib.util

    if importlib.util.find_spec(f"scope.collectors.workloads.{workload}") is None:
        raise ScopeError(f"the sample workload scope.collectors.workloads.{workload} is not available", EXIT_USAGE)


def _analyze(run_dir: Path) -> None:
    """Analyze the run and print its findings; a failure here does not undo the demo."""
    from scope.analysis import run as run_analysis
    from scope.render import terminal_width
    from scope.render.text import findings_lines

    print(f"scope demo: analyzing {run_dir}", flush=True)
    try:
        analysis = run_analysis(run_dir)
    except ScopeError as exc:
        print(f"scope demo: analysis not possible: {exc.message}", file=sys.stderr)
        return
    print("\n".join(findings_lines(analysis, width=terminal_width())))
    # Flushed: the dashboard is served next, for as long as the user wants; what was found is shown first.
    print(compare_with_ground_truth(run_dir, analysis.findings), flush=True)
    if (run_dir / "ground_truth.json").is_file() and analysis.table("goodput_summary") is not None:
        print(compare_goodput(run_dir), flush=True)


def compare_goodput(run_dir: Path) -> str:
    """Attempts, steps redone and checkpoints against what the workload wrote, and the largest bucket gap."""
    import json

    from scope.analyzers.goodput import goodput
    from scope.analyzers.goodput.truth import compare, summary_line

    truth = json.loads((run_dir / "ground_truth.json").read_text())
    if "buckets" not in truth:
        return ""
    return "scope demo: " + summary_line(compare(goodput(run_dir), truth))


def compare_with_ground_truth(run_dir: Path, findings: list[Finding]) -> str:
    """One line: did the analysis name the fault that was injected, on the rank it hit?"""
    import json

    try:
        truth = json.loads((run_dir / "ground_truth.json").read_text())
    except (OSError, ValueError):
        return "scope demo: no ground truth to compare"
    kinds = set(truth.get("expected", {}).get("kinds", []))
    if not kinds:
        names = sorted({f.kind for f in findings if f.severity != "info"})
        return f"scope demo: healthy run; findings of kind {names or 'none'}"
    rank = truth.get("fault_rank")
    hits = [f for f in findings if f.kind in kinds and (rank is None or rank in f.ranks)]
    what = f"{truth.get('fault')} on rank {rank}"
    if hits:
        return f"scope demo: the analysis found the injected {what} ({', '.join(sorted({h.kind for h in hits}))})"
    return f"scope demo: the analysis did not name the injected {what} (expected kinds {sorted(kinds)})"


def demo_port(host: str, port: int) -> int:
    """The port to serve on, chosen before the run rather than after it: `port` when free, else 0 (a free
    one, which the dashboard prints when it starts). `make demo` passes no --port, so a taken port must
    not end the demo after minutes of running the job."""
    from scope.ports import port_taken

    if not port_taken(host, port):
        return port
    print(
        f"scope demo: port {port} is in use by another program; the dashboard will be served on a free "
        f"port, printed when it starts (${PORT_ENV}=N chooses one)",
        flush=True,
    )
    return 0


def _serve(run_dir: Path, host: str, port: int) -> None:
    """Serve the run's dashboard until Ctrl-C (or, with $SCOPE_DEMO_SERVE_S, for that many seconds: for
    scripts and the test that runs `make demo` as a user does). The dashboard is part of scope: an import
    error here is a broken installation and fails loudly."""
    from scope.app.server import serve

    # The port was free before the run; a program that took it meanwhile gives way to a free port too.
    serve(run_dir, host, port, stop_after_s=_serve_seconds(), free_port_if_taken=True)


def _serve_seconds() -> float | None:
    value = os.environ.get(SERVE_SECONDS_ENV, "").strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        raise ScopeError(f"${SERVE_SECONDS_ENV}={value!r}: not a number of seconds", EXIT_USAGE) from None
    if seconds <= 0:
        raise ScopeError(f"${SERVE_SECONDS_ENV}={value!r}: must be > 0 seconds", EXIT_USAGE)
    return seconds
