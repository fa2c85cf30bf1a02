"""A stuck NCCL watchdog after the program said it was exiting without destroying its process groups.

torch >= 2.4 warns at exit when a process group is still alive ('WARNING: destroy_process_group() was not called
before program exit, which can leak resources', torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp, ~ProcessGroupNCCL).
Python then tears the groups down in garbage-collection order, each rank its own, and with many groups (expert,
tensor, pipeline parallel) one rank's teardown can wait on a peer's: the watchdog's heartbeat monitor reports the
hang minutes later (modelscope/ms-swift#7992, fixed by calling destroy_process_group at the end of training).
The training itself had finished.
"""

from __future__ import annotations

import re

from scope.analyzers.diagnose.model import FileScan

EXIT_WITHOUT_DESTROY = re.compile(r"destroy_process_group\(\) was not called before program exit")
HANG_CODES = ("c10d_heartbeat_monitor",)
REMEDY = (
    "The hang is in the teardown at exit, after the program's end (its process groups were never destroyed): call "
    "torch.distributed.destroy_process_group() at the end of the training entry point, on every rank, before "
    "the process exits (or use a framework release that does); the results written before it are complete."
)


def mark_hang_at_exit(result: FileScan, text: str) -> None:
    """Give the watchdog hangs that follow the exit warning the teardown's reading and remedy."""
    m = EXIT_WITHOUT_DESTROY.search(text)
    if m is None:
        return
    warned_at = text.count("\n", 0, m.start()) + 1
    for a in result.anomalies:
        if a.code in HANG_CODES and a.line > warned_at:
            a.details["remedy"] = REMEDY
            a.details["after_exit_warning"] = warned_at
