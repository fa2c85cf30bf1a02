"""The advice for an NCCL 'internal error', chosen by what else the incident shows.

An internal error is not always NCCL's own: a remote rank that crashed surfaces as ncclInternalError
(NVIDIA/nccl#795, its maintainers: "the network should NOT be blamed"; the peer is), and NCCL 2.18 reports every
network error as an internal error (NVIDIA/nccl#1092, sjeaugey: "With NCCL 2.18, all network errors will be
erroneously reported as 'Internal Error'"; NCCL_SOCKET_IFNAME fixed one poster's). Only where nothing else in the
incident explains it is the NCCL release the first suspect (words/endings.name_the_nccl_release), and a topology
file only at communicator init (NVIDIA/nccl#379, #1726, #1240).
"""

from __future__ import annotations

import re

from scope.analyzers.diagnose.knowledge.remedies import NCCL_DEBUG_RERUN
from scope.analyzers.diagnose.reasoning.rootcause import Incident

# A lost peer or a socket / network transport in the incident's lines: the internal error is its cascade.
_NETWORK_LINE = re.compile(
    r"socket\.cc|net_socket|net_ib|\bnet\.cc|Broken pipe|Connection (?:closed|reset)|remote peer|"
    r"remote process exited|Connection refused"
)
_NETWORK_CODES = frozenset(
    ("peer_connection_lost", "nccl_peer_lost", "nccl_socket_connect", "nccl_ib_completion_error", "peer_lost")
)
_VERSION_218 = re.compile(r"NCCL version 2\.18\.")
_AT_INIT = re.compile(r"ncclCommInit|\binit\.cc|comm(?:unicator)? init", re.IGNORECASE)


def _lines(inc: Incident) -> list[tuple[str, str]]:
    found = [*inc.anomalies, *inc.cascade]
    found += [a for m in inc.merged for a in (*m.anomalies, *m.cascade)]
    return [(a.code, a.message) for a in found]


def reported_as_internal(inc: Incident) -> bool:
    """NCCL 2.18 (any line naming it) turns network errors into internal errors (NVIDIA/nccl#1092)."""
    return any(_VERSION_218.search(msg) for _, msg in _lines(inc))


def network_explains(inc: Incident) -> bool:
    """The incident holds a lost peer or socket / network lines, or runs NCCL 2.18: the network or a peer comes
    before the release."""
    lines = _lines(inc)
    if any(code in _NETWORK_CODES or _NETWORK_LINE.search(msg) for code, msg in lines):
        return True
    return reported_as_internal(inc)


def at_init(inc: Incident) -> bool:
    return any(_AT_INIT.search(msg) for _, msg in _lines(inc))


TOPOLOGY_FILE = (
    "An internal error at communicator init can come from a topology NCCL cannot use: unset "
    "NCCL_TOPO_FILE and NCCL_GRAPH_FILE where the environment, nccl.conf or the net plugin sets them (upgrade "
    "aws-ofi-nccl, which writes its own topology file)."
)

PEER_OR_NETWORK = (
    "An internal error that comes with a lost peer or socket errors is the cascade of another rank's failure or "
    "of the network, not an NCCL bug: find the rank that failed first (a segfault, an OOM kill or an exception "
    "in its own log) and fix that; if no rank failed, check the network - "
)

NCCL_218 = (
    "NCCL 2.18 reports network errors as internal errors (NVIDIA/nccl#1092), so treat this as a network error first: "
)


def internal_error_advice(inc: Incident, network_fix: str) -> str:
    """`network_fix` is the system error's advice (words/advice.FIXES), kept there."""
    if reported_as_internal(inc):
        return NCCL_218 + network_fix[0].lower() + network_fix[1:]
    if network_explains(inc):
        return PEER_OR_NETWORK + network_fix[0].lower() + network_fix[1:]
    rerun = f"{NCCL_DEBUG_RERUN},GRAPH to see the WARN that names the cause."
    return f"{TOPOLOGY_FILE} {rerun}" if at_init(inc) else rerun
