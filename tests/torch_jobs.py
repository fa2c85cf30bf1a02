"""Running the plain torch jobs the tests profile (torchrun, gloo, torch.profiler)."""

from __future__ import annotations

import subprocess
from typing import Any

# What torch's C++ runtime prints when a rank aborts (SIGABRT) as its profiler stops (profiler_stop): seen in
# clean-clone CI on 2026-12-05 in jobs with no scope code in them (tests/jobs/profiled_ddp.py, the ddp
# workload under plain torchrun). It is torch's failure, not the job's fault under test.
TORCH_PROFILER_ABORT = "terminate called without an active exception"


def run_profiled_job(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """Run a profiled torch job (capture_output and text are set); once more if torch aborted in its profiler."""
    proc = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if proc.returncode != 0 and TORCH_PROFILER_ABORT in proc.stderr:
        proc = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    return proc
