"""Running the plain torch jobs the tests profile (torchrun, gloo, torch.profiler)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

# What torch's C++ runtime prints when a rank aborts (SIGABRT) as its profiler stops (profiler_stop) or as
# the interpreter exits after DDP on gloo: seen in clean-clone CI on 2026-12-05 in jobs with no scope code in
# them (tests/jobs/profiled_ddp.py, the ddp workload under plain torchrun), and in 3 of 45 runs of plain DDP
# on gloo ending with barrier + destroy_process_group on a loaded 2-core VM (tests/jobs/ddp_reducer_job.py).
# It is torch's failure, not the job's fault under test.
TORCH_PROFILER_ABORT = "terminate called without an active exception"


def torch_aborted(returncode: int, output: str, logs: Path | None = None) -> bool:
    """Whether a failed job is torch's own abort: its message in the output, or in a rank's log under `logs`
    (torchrun's --log-dir with --redirects, where the ranks' stderr goes instead)."""
    if returncode == 0:
        return False
    if TORCH_PROFILER_ABORT in output:
        return True
    logs_text = (p.read_text(errors="replace") for p in logs.glob("**/stderr.log")) if logs is not None else ()
    return any(TORCH_PROFILER_ABORT in text for text in logs_text)


def torch_aborted_in_a_rank(run: Path, completed: bool) -> bool:
    """Whether a `scope run` directory that did not complete saw torch's own abort in a rank
    (RUN/ranks/<rank>/stderr.log)."""
    return torch_aborted(int(not completed), "", run / "ranks")


def rerun_once_if_torch_aborted(run: Callable[[], Any], aborted: Callable[[Any], bool]) -> Any:
    """run(), and once more if `aborted` reads its result as torch's own abort; the last result."""
    result = run()
    return run() if aborted(result) else result


def run_profiled_job(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """Run a profiled torch job (capture_output and text are set); once more if torch aborted in its profiler."""
    return rerun_once_if_torch_aborted(
        lambda: subprocess.run(cmd, capture_output=True, text=True, **kwargs),
        lambda proc: torch_aborted(proc.returncode, proc.stderr),
    )
