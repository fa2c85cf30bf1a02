"""NCCL asked for InfiniBand / RoCE and fell back to TCP sockets on a job that spans nodes
(knowledge/transport_fallback.py holds the lines and the remedy). A single-node job never uses the network,
whatever the environment exports, so it stays healthy.
"""

from __future__ import annotations

from scope.analyzers.diagnose.knowledge import transport_fallback as tf
from scope.analyzers.diagnose.model import APPLICATION, Anomaly


def ib_requested_socket_used(text: str, display: str) -> Anomaly | None:
    """The job asked NCCL for IB/RoCE and NCCL fell back to sockets (knowledge/transport_fallback.py)."""
    missing = tf.IB_NOT_FOUND.search(text)
    if missing is None or tf.SOCKET_CHOSEN.search(text) is None:
        return None
    asked = [(what, m) for what, pattern in tf.IB_REQUESTED if (m := pattern.search(text))]
    if not asked:
        return None  # no IB asked for: a machine without IB using sockets is healthy
    if _one_node(text):
        return None  # one node: NCCL never used the network, whatever the environment exported
    first = asked[0][1]
    iface = tf.SOCKET_INTERFACE.search(text)
    on = f" on {iface.group(1)}" if iface else ""
    setting = first.group(0)
    return Anomaly(
        code="nccl_ib_requested_socket_used",
        kind="network_fault",
        level=APPLICATION,
        message=(
            f"NCCL was asked for InfiniBand ({setting}) but found no IB device and uses TCP sockets{on}: "
            "inter-node collectives run an order of magnitude slower"
        ),
        file=display,
        line=text.count("\n", 0, missing.start()) + 1,
        severity="critical",
        details={
            "confidence": "medium",
            "asked": [w for w, _ in asked],
            "remedy": tf.REMEDY.format(asked=setting, iface=on),
            "reference": "NVIDIA/nccl src/transport/net_ib.cc (NET/IB : No device found), src/init.cc",
        },
    )


def _one_node(text: str) -> bool:
    """NCCL's lines show a single-node job (tf.ONE_NODE, or channels set up with no network transport)."""
    if tf.ONE_NODE.search(text):
        return True
    vias = {m.group(1) for m in tf.CHANNEL_VIA.finditer(text)}
    return bool(vias) and "NET" not in vias and "CollNet" not in vias
