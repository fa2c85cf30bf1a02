"""An `nvidia-smi topo -m` matrix given alone: what the GPU-to-GPU paths say about peer-to-peer.

Legend of the matrix (nvidia-smi topo -m): NV# NVLink, PIX / PXB one or more PCIe switches, PHB a PCIe
host bridge (the CPU), NODE host bridges within a NUMA node, SYS across the CPU interconnect. P2P over
PHB / NODE / SYS goes up through the root complex, where PCIe ACS or the IOMMU redirect or block it: the
known cause of collectives that hang with no error on such machines (NCCL troubleshooting guide, PCI
Access Control Services). Used only when the input is the matrix and nothing else (no run output to
read): a low-confidence configuration suspect, never a verdict on a log that shows the run.
"""

from __future__ import annotations

import re

from scope.analyzers.diagnose.model import APPLICATION, Anomaly

_HEADER = re.compile(r"^\s*GPU0(?:\s+GPU\d+)+\s+CPU Affinity", re.M)
_ROW = re.compile(r"^\s*GPU(\d+)\s+((?:(?:X|NV\d++|PIX|PXB|PHB|NODE|SYS)\s++)++)", re.M)  # possessive: linear
_ROOT_COMPLEX = {"PHB", "NODE", "SYS"}
ACS_SOURCE = (
    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html#pci-access-control-services-acs"
)


def _only_matrix(text: str) -> bool:
    """Every line is the matrix, its legend, a bracketed note or a comment."""
    for raw in text.split("\n"):
        line = raw.strip()
        if not line or line.startswith(("[", "#", "GPU", "X ", "Legend", "NIC", "mlx")):
            continue
        if line.startswith(("SYS", "NODE", "PHB", "PXB", "PIX", "NV#")) and "=" in line:
            continue
        return False
    return True


def pcie_root_complex_paths(text: str, display: str) -> Anomaly | None:
    if "CPU Affinity" not in text or not _HEADER.search(text) or not _only_matrix(text):
        return None
    links = [tok for m in _ROW.finditer(text) for tok in m.group(2).split() if tok != "X"]
    if not links or any(t.startswith("NV") for t in links) or not _ROOT_COMPLEX & set(links):
        return None
    kinds = "/".join(sorted(_ROOT_COMPLEX & set(links)))
    line = text.count("\n", 0, _HEADER.search(text).start()) + 1  # type: ignore[union-attr]
    return Anomaly(
        code="p2p_through_root_complex",
        kind="config_error",
        level=APPLICATION,
        message=(
            f"only a GPU topology is given: the GPUs reach each other through the CPU's PCIe root complex ({kinds}), "
            "with no NVLink, the path that PCIe ACS or the IOMMU redirect or block, so collectives hang with no error"
        ),
        file=display,
        line=line,
        severity="warning",
        details={
            "confidence": "low",
            "cause": "configuration",
            "reference": ACS_SOURCE,
            "remedy": (
                "Rerun with NCCL_P2P_DISABLE=1 as a test; check ACS on the bridges with `sudo lspci -vvv | grep "
                "ACSCtl` (SrcValid+ ReqRedir+ CmpltRedir+ means enabled): disable it (BIOS, or setpci on each "
                "bridge) and boot with iommu=pt / intel_iommu=off."
            ),
        },
    )
