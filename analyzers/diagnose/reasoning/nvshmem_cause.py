"""NVSHMEM's bootstrap error after another NVSHMEM failure of the same process: the other names the cause.

A bootstrap line (src/modules/bootstrap: the UID / PMI / MPI exchange between PEs) is the cause where it is the first
NVSHMEM failure its process printed besides host/init's outer 'nvshmem initialization failed' (a root it cannot reach,
the wrong interface). NVSHMEM's error macros print the innermost line first, so a transport or topology line after the
bootstrap's is its consequence, never its cause. A PE's bootstrap collective fails too when its transport setup failed
first (the exchange after it): where an earlier line of the same process shows another NVSHMEM failure (a transport
map, a transport, the heap), the bootstrap's line is its echo, a warning that the other outranks. So is a
bootstrap whose socket the peer closed (a broken pipe, a short read, a reset: the PE at the other end exited) where
another NVSHMEM failure is in the file: the bootstrap network worked, and the failure that made the peer exit names
the cause.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from scope.analyzers.diagnose.reasoning.survived_loading import Process, process

if TYPE_CHECKING:
    from scope.analyzers.diagnose.model import Anomaly

_BOOTSTRAP = "nvshmem_bootstrap_failed"
_NOT_A_CAUSE = (_BOOTSTRAP, "nvshmem_init_failed", "nvshmem_no_peermem")  # the outer line; a note of a skip
# The bootstrap's socket layer (src/modules/bootstrap/uid/ncclSocket, bootstrap_uid.cpp's receive) saying the peer went
# away mid-exchange: EPIPE on a send, a receive shorter than the message, a reset.
_PEER_LEFT = re.compile(
    r"src/modules/bootstrap/[^\n]{0,300}?(?:Broken pipe|Message truncated|Connection reset by peer|"
    r"received \d+ bytes instead of \d+)"
)


def bootstrap_beside_another_failure(anomalies: list[Anomaly], text: str) -> None:
    """The bootstrap rows' matches: warnings where another NVSHMEM failure of the same process came before them, or
    where the peer closed the bootstrap's socket and another NVSHMEM failure is in the file."""
    boots = [a for a in anomalies if a.code == _BOOTSTRAP and a.severity == "critical"]
    if not boots:
        return
    lines = text.split("\n")

    def proc(a: Anomaly) -> Process:
        return process(lines[a.line - 1]) if 0 < a.line <= len(lines) else None

    others = [(o.line, proc(o)) for o in anomalies if o.code.startswith("nvshmem_") and o.code not in _NOT_A_CAUSE]
    left = [process(line) for line in lines if _PEER_LEFT.search(line)] if others else []
    for a in boots:
        own = proc(a)
        same = [line for line, other in others if own is None or other is None or other == own]
        if any(line < a.line for line in same) or any(own is None or p is None or p == own for p in left):
            a.severity = "warning"
