"""The launcher's record of each worker-group attempt: how it ended, per rank, in torchrun's own terms.

torchrun's agent starts one worker group per attempt (`TORCHELASTIC_RESTART_COUNT` in the workers'
environment) and, on a failure or a membership change, stops it and starts the next. The launcher sees
every worker process torchrun starts (launch_torchrun.WorkerRegistry); when the next group starts, or the
job ends, the finished attempt is appended to RUN/hosts/<host>/attempts.jsonl (one line per attempt and
node, append-only: a requeue into the same run directory adds its own lines):

    {"host", "node", "launcher_pid", "restart_count", "start_ns", "end_ns", "world_size", "local_world_size",
     "ranks": [{"rank", "local_rank", "pid", "exit_code", "signal"}], "ended": "succeeded"|"failed"|"stopped"}

An exit code is Popen's: negative is killed by that signal (then `signal` names it). A worker group that
ended with every rank stopped by a signal and none failing on its own is `stopped` (torchrun restarted
it: a membership change, or the agent stopping the survivors of another node's failure); `failed` is a
rank that exited non-zero on its own. `scope goodput` joins these to the hook's attempt records by pid.
"""

from __future__ import annotations

import contextlib
import json
import signal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scope.rundir import launcher_attempts_path

if TYPE_CHECKING:
    from scope.collectors.launch_torchrun import WorkerRecord


def signal_name(code: int | None) -> str | None:
    if code is None or code >= 0:
        return None
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def ended(codes: list[int | None]) -> str:
    """succeeded: every rank exited 0; failed: a rank exited non-zero on its own (an exit code, not a
    signal: the agent stops the others with SIGTERM); stopped: killed by signals only."""
    known = [c for c in codes if c is not None]
    if known and len(known) == len(codes) and all(c == 0 for c in known):
        return "succeeded"
    if any(c > 0 for c in known):
        return "failed"
    if any(c < 0 for c in known):
        return "stopped"
    return "unknown"


def attempt_record(
    workers: list[WorkerRecord], host: str, node: str, launcher_pid: int, restart_count: int
) -> dict[str, Any]:
    for w in workers:
        w.poll()
    ranks = [
        {
            "rank": w.rank,
            "local_rank": w.local_rank,
            "pid": w.pid,
            "exit_code": w.returncode,
            "signal": signal_name(w.returncode),
        }
        for w in sorted(workers, key=lambda w: w.rank)
    ]
    sizes = [w.world_size for w in workers if w.world_size]
    ends = [w.end_ns for w in workers if w.end_ns]
    return {
        "host": host,
        "node": node,
        "launcher_pid": launcher_pid,
        "restart_count": restart_count,
        "start_ns": min((w.start_ns for w in workers), default=None),
        "end_ns": max(ends) if ends else None,
        "world_size": max(sizes) if sizes else None,
        "local_world_size": len(workers),
        "ranks": ranks,
        "ended": ended([w.returncode for w in workers]),
    }


def append_attempt(run_dir: Path, record: dict[str, Any]) -> None:
    """One line, appended; a full or read-only disk loses the record, never the job."""
    path = launcher_attempts_path(run_dir, str(record["host"]))
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a") as fh:
            fh.write(json.dumps(record) + "\n")
