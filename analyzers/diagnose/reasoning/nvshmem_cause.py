"""NVSHMEM's bootstrap error beside another NVSHMEM failure: the other names the cause.

A bootstrap line (src/modules/bootstrap: the UID / PMI / MPI exchange between PEs) is the cause where it is the only
NVSHMEM failure besides host/init's outer 'nvshmem initialization failed' (a root it cannot reach, the wrong
interface). A PE's bootstrap collective fails too when a peer exits on its own error (the peer's socket closes): where
the log shows another NVSHMEM failure (a transport map, a transport, the heap), the bootstrap's line is its echo, a
warning that the other outranks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scope.analyzers.diagnose.model import Anomaly

_BOOTSTRAP = "nvshmem_bootstrap_failed"
_NOT_A_CAUSE = (_BOOTSTRAP, "nvshmem_init_failed", "nvshmem_no_peermem")  # the outer line; a note of a skip


def bootstrap_beside_another_failure(anomalies: list[Anomaly]) -> None:
    """The bootstrap rows' matches: warnings where another NVSHMEM failure is in the same file."""
    if not any(a.code == _BOOTSTRAP for a in anomalies):
        return
    if any(a.code.startswith("nvshmem_") and a.code not in _NOT_A_CAUSE for a in anomalies):
        for a in anomalies:
            if a.code == _BOOTSTRAP and a.severity == "critical":
                a.severity = "warning"
