"""GPU-to-GPU bandwidth that is itself the failure: numbers a test printed that no healthy machine gives.

CUDA samples' p2pBandwidthLatencyTest prints the GPU-to-GPU bandwidth matrices with peer-to-peer off
(copies staged through host memory) and on. Direct P2P is never slower than staging through the host on
healthy hardware; P2P well below the staged copy means the peer traffic is redirected on the way
(PCIe ACS sending it up to the root complex, or the IOMMU translating it), the class of fault that also
makes NCCL hang or crawl on that node.
"""

from __future__ import annotations

import re
import statistics

from scope.analyzers.diagnose.model import APPLICATION, Anomaly

# 'Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)', 'Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)',
# 'Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)'
_MATRIX = re.compile(r"^[^\S\n]*(Unidirectional|Bidirectional) P2P=(Enabled|Disabled) Bandwidth.*Matrix \(GB/s\)", re.M)
_ROW = re.compile(r"^\s*(\d+)((?:\s++\d++(?:\.\d++)?+)++)\s*$")  # possessive: one reading of a long row
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
