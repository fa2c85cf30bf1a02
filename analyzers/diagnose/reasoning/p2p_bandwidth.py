"""A measurement that is itself the failure: numbers a test printed that no healthy machine gives.

CUDA samples' p2pBandwidthLatencyTest prints the GPU-to-GPU bandwidth matrices with peer-to-peer off
(copies staged through host memory) and on. Direct P2P is never slower than staging through the host on
healthy hardware; P2P well below the staged copy means the peer traffic is redirected on the way
(PCIe ACS sending it up to the root complex, or the IOMMU translating it), the class of fault that also
makes NCCL hang or crawl on that node.
"""

from __future__ import annotations

import re
import statistics

from scope.analyzers.diagnose.knowledge import fabric_rates
from scope.analyzers.diagnose.knowledge import transport_fallback as tf
from scope.analyzers.diagnose.model import APPLICATION, Anomaly

# 'Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)', 'Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)',
# 'Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)'
_MATRIX = re.compile(r"^\s*(Unidirectional|Bidirectional) P2P=(Enabled|Disabled) Bandwidth.*Matrix \(GB/s\)", re.M)
_ROW = re.compile(r"^\s*(\d+)((?:\s+\d+(?:\.\d+)?)+)\s*$")
# P2P at less than this share of the staged copy: redirected, not merely slow.
SLOW_SHARE = 0.5
SOURCE = "https://github.com/NVIDIA/cuda-samples (Samples/5_Domain_Specific/p2pBandwidthLatencyTest)"
REMEDY = (
    "Peer-to-peer traffic is being redirected: check PCIe ACS on the bridges between the GPUs (`lspci -vvv | grep "
    "ACSCtl`: SrcValid+ ReqRedir+ means on; disable it in the BIOS or with setpci) and the IOMMU (boot with iommu=pt, "
    "or intel_iommu=off / amd_iommu=off; the kernel log shows IOMMU page faults); NCCL_P2P_DISABLE=1 avoids it for "
    "NCCL at the cost of staging through host memory."
)


def p2p_bandwidth(text: str, display: str) -> Anomaly | None:
    if "P2P=Enabled" not in text or "P2P=Disabled" not in text:
        return None
    medians: dict[tuple[str, str], tuple[float, int]] = {}
    for m in _MATRIX.finditer(text):
        values = _off_diagonal(text, m.end())
        if values:
            medians.setdefault(
                (m.group(1), m.group(2)), (statistics.median(values), text.count("\n", 0, m.start()) + 1)
            )
    for direction in ("Unidirectional", "Bidirectional"):
        on, off = medians.get((direction, "Enabled")), medians.get((direction, "Disabled"))
        if on is None or off is None or off[0] <= 0 or on[0] >= SLOW_SHARE * off[0]:
            continue
        return Anomaly(
            code="p2p_slower_than_host",
            kind="config_error",
            level=APPLICATION,
            message=(
                f"{direction} GPU peer-to-peer copies run at {on[0]:.1f} GB/s (median between GPUs) with P2P "
                f"enabled against {off[0]:.1f} GB/s with it disabled (staged through host memory): direct peer "
                "traffic is redirected (PCIe ACS or the IOMMU)"
            ),
            file=display,
            line=on[1],
            severity="critical",
            details={
                "confidence": "medium",
                "p2p_gbps": round(on[0], 2),
                "staged_gbps": round(off[0], 2),
                "remedy": REMEDY,
                "reference": SOURCE,
            },
        )
    return None


def _off_diagonal(text: str, start: int) -> list[float]:
    """Values off the diagonal of the matrix whose rows follow `start` (a 'D\\D' header line first)."""
    out: list[float] = []
    lines = text[start : start + 20_000].split("\n")[1:]
    for ln in lines:
        if "D\\D" in ln:
            continue
        m = _ROW.match(ln)
        if not m:
            if out:
                break
            continue
        row = int(m.group(1))
        for col, v in enumerate(m.group(2).split()):
            if col != row:
                out.append(float(v))
    return out


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


# '#  Rank  0 Group  0 Pid 202829 on  nid005471 device  0 [0009:01:00] NVIDIA GH200 120GB'
_DEVICE_LINE = re.compile(r"^\s*[#>]?\s*Rank\s+\d+ (?:Group\s+\d+ )?Pid\s+\d+ on\s+(\S+) device\s+\d+ \S+ (.*)$", re.M)
# size count type [redop] [root] time algbw busbw #wrong ...: the out-of-place busbw
_ROW_BUSBW = re.compile(r"^\s*(\d+)\s+\d+\s+\w+\s+(?:\w+\s+)?(?:-?\d+\s+)?[\d.]+\s+[\d.]+\s+([\d.]+)\s+\d+", re.M)


def slow_internode_busbw(text: str, display: str) -> Anomaly | None:
    """nccl-tests across nodes of RDMA-class GPUs at a bus bandwidth only a path without RDMA gives."""
    devices = _DEVICE_LINE.findall(text)
    hosts = {host for host, _ in devices}
    gpus = {name.strip() for _, name in devices}
    if len(hosts) < 2 or not gpus or not all(fabric_rates.RDMA_CLASS_GPUS.search(g) for g in gpus):
        return None
    large = [m for m in _ROW_BUSBW.finditer(text) if int(m.group(1)) >= fabric_rates.MIN_BYTES]
    if not large:
        return None
    peak = max(large, key=lambda m: float(m.group(2)))
    best = float(peak.group(2))
    if best >= fabric_rates.FLOOR_GBPS:
        return None
    return Anomaly(
        code="internode_busbw_without_rdma",
        kind="network_fault",
        level=APPLICATION,
        message=(
            f"nccl-tests across {len(hosts)} nodes of {sorted(gpus)[0]} reach at most {best:.1f} GB/s bus "
            f"bandwidth at {int(large[0].group(1)) // 2**20} MB and more: below {fabric_rates.FLOOR_GBPS:.0f} GB/s, "
            "a rate only a path without RDMA gives between such nodes (TCP sockets, a container without the "
            "fabric's plugin)"
        ),
        file=display,
        line=text.count("\n", 0, peak.start()) + 1,
        severity="critical",
        details={
            "confidence": "medium",
            "busbw_gbps": best,
            "hosts": len(hosts),
            "remedy": fabric_rates.REMEDY,
            "reference": "scope/analyzers/diagnose/knowledge/fabric_rates.py",
        },
    )


def _one_node(text: str) -> bool:
    """NCCL's lines show a single-node job (tf.ONE_NODE, or channels set up with no network transport)."""
    if tf.ONE_NODE.search(text):
        return True
    vias = {m.group(1) for m in tf.CHANNEL_VIA.finditer(text)}
    return bool(vias) and "NET" not in vias and "CollNet" not in vias
