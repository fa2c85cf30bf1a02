"""NVSHMEM's bootstrap error after another NVSHMEM failure of the same process: the other names the cause.

A bootstrap line (src/modules/bootstrap: the UID / PMI / MPI exchange between PEs) is the cause where it is the first
NVSHMEM failure its process printed besides host/init's outer 'nvshmem initialization failed' (a root it cannot reach,
the wrong interface). NVSHMEM's error macros print the innermost line first, so a transport or topology line after the
bootstrap's is its consequence, never its cause. A PE's bootstrap collective fails too when its transport setup failed
first (the exchange after it): where an earlier line of the same process shows another NVSHMEM failure (a transport
map, a transport, the heap), the bootstrap's line is its echo, a warning that the other outranks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scope.analyzers.diagnose.reasoning.survived_loading import Process, process

if TYPE_CHECKING:
    from scope.analyzers.diagnose.model import Anomaly

_BOOTSTRAP = "nvshmem_bootstrap_failed"
_NOT_A_CAUSE = (_BOOTSTRAP, "nvshmem_init_failed", "nvshmem_no_peermem")  # the outer line; a note of a skip


def bootstrap_beside_another_failure(anomalies: list[Anomaly], text: str) -> None:
    """The bootstrap rows' matches: warnings where another NVSHMEM failure of the same process came before them."""
    boots = [a for a in anomalies if a.code == _BOOTSTRAP and a.severity == "critical"]
    if not boots:
        return
    lines = text.split("\n")

    def proc(a: Anomaly) -> Process:
        return process(lines[a.line - 1]) if 0 < a.line <= len(lines) else None

    others = [(o.line, proc(o)) for o in anomalies if o.code.startswith("nvshmem_") and o.code not in _NOT_A_CAUSE]
    for a in boots:
        own = proc(a)
        if any(line < a.line and (own is None or other is None or other == own) for line, other in others):
            a.severity = "warning"
