"""A bus bandwidth that is itself the failure: nccl-tests across nodes of RDMA-class GPUs at a rate only a
path without RDMA gives (knowledge/fabric_rates.py holds the GPUs, the floor and its sources).
"""

from __future__ import annotations

import re

from scope.analyzers.diagnose.knowledge import fabric_rates
from scope.analyzers.diagnose.model import APPLICATION, Anomaly

# '#  Rank  0 Group  0 Pid 202829 on  nid005471 device  0 [0009:01:00] NVIDIA GH200 120GB'
_DEVICE_LINE = re.compile(
    r"^[^\S\n]*[#>]?[^\S\n]*Rank\s+\d+ (?:Group\s+\d+ )?Pid\s+\d+ on\s+(\S+) device\s+\d+ \S+ (.*)$", re.M
)
# size count type [redop] [root] time algbw busbw #wrong ...: the out-of-place busbw
_ROW_BUSBW = re.compile(r"^[^\S\n]*(\d+)\s+\d+\s+\w+\s+(?:\w+\s+)?(?:-?\d+\s+)?[\d.]+\s+[\d.]+\s+([\d.]+)\s+\d+", re.M)


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
