"""A c10d rendezvous store that no node hosts, said once: the elastic agent's exception lines after TCPStore's
client line (DistNetworkError, RendezvousConnectionError) are the same failure told again.

knowledge/rendezvous_host.py's rows are warnings: a client's timeout is also the echo of node 0's launcher that died
before it hosted the store (a traceback in node 0's log outranks it). The generic rows (store_connect_failed,
store_unreachable) read the agent's exception lines that follow; beside one of those rows they are its echo, a
warning too, so a critical error elsewhere (node 0's) still ranks first and the specific reading leads where there is
none.
An endpoint typed as an IP address is never 'no node hosts the store' (that reading is about a name no node takes
for its own): its failing connect is told by store_endpoint_ip_renamed or by the generic rows.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from scope.analyzers.diagnose.knowledge.rendezvous_host import IP_ENDPOINT

if TYPE_CHECKING:
    from scope.analyzers.diagnose.model import Anomaly

_SPECIFIC = ("c10d_rendezvous_store_unhosted", "store_endpoint_ip_renamed")
_UNHOSTED = "c10d_rendezvous_store_unhosted"
_TYPED_IP = re.compile(IP_ENDPOINT)
_GENERIC = ("store_connect_failed", "store_unreachable")  # the generic rows (TCPStore's, the agent's)


def echo_of_unhosted_store(anomalies: list[Anomaly], text: str) -> None:
    """The generic store rows' lines after a specific c10d store reading of the same file: warnings, as it is.
    Where the endpoint was typed as an IP address, the unhosted reading is dropped."""
    if any(a.code == _UNHOSTED for a in anomalies) and _TYPED_IP.search(text):
        anomalies[:] = [a for a in anomalies if a.code != _UNHOSTED]
    first = min((a.line for a in anomalies if a.code in _SPECIFIC and a.severity == "warning"), default=0)
    if not first:
        return
    for a in anomalies:
        if a.code in _GENERIC and a.line > first and a.severity == "critical":
            a.severity = "warning"
