"""Kernel-log and driver-side lines: Xid, fallen-off-bus, ECC, PCIe AER, nvidia-peermem, NVSwitch /
Fabric Manager, OOM killer, segfaults, and `nvidia-smi nvlink -s` output."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from scope.analyzers.diagnose.knowledge.remedies import PEERMEM
from scope.analyzers.diagnose.knowledge.xid import finding_kind, xid_info
from scope.analyzers.diagnose.model import APPLICATION, COMM_ERROR, HARDWARE
from scope.analyzers.diagnose.readers.lines import Parsed

if TYPE_CHECKING:
    from scope.analyzers.diagnose.readers.scan import Scanner

_XID = re.compile(r"NVRM: Xid \((?:PCI:)?([^)]*)\): (\d+),\s*(?:pid=([^,]*),\s*)?(?:name=([^,]*),\s*)?(.*)")
_CAUSED_BY = re.compile(r"caused by previous Xid (\d+)")
_RECOVERY = re.compile(r"recovery action changed from .* to 0x\w+ \(([^)]*)\)")
_OFF_BUS = re.compile(
    r"(?:GPU at |NVIDIA GPU |GPU )(?:PCI:)?([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F.]+)?.*fallen off the bus"
)
_GPU_UUID = re.compile(r"NVRM: GPU at PCI:([0-9a-fA-F:.]+): (GPU-[0-9a-f\-]+)")
_NVRM_FATAL = re.compile(
    r"NVRM: (?:GPU (\S+): )?(RmInitAdapter failed|The NVIDIA probe routine failed|.*NV_ERR_RESET_REQUIRED"
    r"|.*The GPU likely needs to be reset)"
)
_AER = re.compile(
    r"(?:pcieport|nvidia|pci) ([0-9a-fA-F:.]+?):? .*AER: (Corrected|Uncorrected \([\w\-]+\)|Multiple \w+) error"
)
_PCIE_BUS = re.compile(r"(\S+) ([0-9a-fA-F:.]+?): PCIe Bus Error: severity=([\w ()\-]+?), type=([\w ]+)")
_ANY_PCI = re.compile(r"(?:PCI:|GPU )([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.\d)?)")
_NO_HANDLE = re.compile(r"Unable to determine the device handle for GPU ?([0-9a-fA-F:.]+): (.*)")
_PEERMEM = re.compile(r"nvidia-peermem (\S+?)(?::\d+)? ERROR (.*)")
_NVSWITCH = re.compile(r"\[ERROR\].*?(detected NVSwitch (non-fatal|fatal) error (\d+).*)", re.IGNORECASE)
_FM_FATAL = re.compile(r"\[ERROR\].*(NVSwitch|NVLink|fabric).*", re.IGNORECASE)
_SEGFAULT = re.compile(r"(\S+)\[(\d+)\]: segfault at (\w+) ip (\w+) sp \w+ error (\d+)(?: in ([^\[\s]+))?")
_OOM_KILL = re.compile(
    r"(?:Out of memory|Memory cgroup out of memory): Kill(?:ed)? process (\d+),? (?:\(([^)]*)\)|UID \d+,? \(([^)]*)\))?"
)
_LINK_DOWN = re.compile(r"(mlx5_core|mlx5_\d+) (\S+):? .*(?:[Ll]ink down|Port module event.*(?:unplugged|error))")
_NVLINK_STATUS = re.compile(r"^Link (\d+): (<inactive>|0 GB/s|[\w<>/ ]*(?:inactive|down)[\w<>/ ]*)$", re.IGNORECASE)
_GPU_HEADER = re.compile(r"^GPU (\d+): (.*?) \(UUID: (GPU-[0-9a-f\-]+)\)")


def handle_kmsg(sc: Scanner, p: Parsed, idx: int) -> int:
    """Parse one kernel/driver line; returns how many following lines it consumed (-1: not ours)."""
    text = p.text
    if "NVRM" in text:
        return _nvrm(sc, p, idx)
    for handler in (_aer, _no_handle, _peermem, _fabric, _segfault, _oom_kill, _link_down, _nvlink_status):
        if handler(sc, p):
            return 0
    return -1


def _nvrm(sc: Scanner, p: Parsed, idx: int) -> int:
    consumed = 0
    text = p.text
    # Newer drivers wrap one message over several "NVRM:" lines indented under the first.
    while idx + consumed + 1 < len(sc.lines):
        nxt = sc.lines[idx + consumed + 1]
        if not nxt[:1].isspace() or "NVRM:" not in nxt:
            break
        text += " " + nxt.strip().removeprefix("NVRM:").strip()
        consumed += 1
    m = _XID.search(text)
    if m:
        _xid(sc, p, m, idx + 1)
        return consumed
    m = _GPU_UUID.search(text)
    if m:
        sc.result.gpu_uuids[m.group(1).lower()] = m.group(2)
        return consumed
    m = _OFF_BUS.search(text)
    if m:
        info = xid_info(79)
        sc.emit(
            p,
            "xid",
            "hardware_fault",
            HARDWARE,
            f"GPU {m.group(1) or '?'} has fallen off the bus (Xid 79)",
            lineno=idx + 1,
            xid=79,
            pci=_norm_pci(m.group(1) or ""),
            meaning=info.meaning,
            blame=info.blame,
            action=info.action,
        )
        return consumed
    m = _NVRM_FATAL.search(text)
    if m:
        pci = _ANY_PCI.search(text)
        sc.emit(
            p,
            "nvrm_error",
            "hardware_fault",
            HARDWARE,
            text[text.find("NVRM") :],
            lineno=idx + 1,
            pci=_norm_pci(pci.group(1)) if pci else "",
            blame="driver",
            action="reset the GPU; drain the node if it does not come back",
        )
    return consumed


def _xid(sc: Scanner, p: Parsed, m: re.Match[str], lineno: int) -> None:
    pci, number, pid, name, rest = m.group(1), int(m.group(2)), m.group(3), m.group(4), m.group(5)
    info = xid_info(number)
    details: dict[str, Any] = {
        "xid": number,
        "pci": _norm_pci(pci),
        "meaning": info.meaning,
        "blame": info.blame,
        "action": info.action,
        "text": rest.strip(),
    }
    if pid and pid.strip("'").isdigit():
        details["pid"] = int(pid.strip("'"))
    if name and "unknown" not in name:
        details["process"] = name.strip()
    kind, severity, blame = finding_kind(info), info.severity, info.blame
    caused = _CAUSED_BY.search(rest)
    if caused:  # Xid 45 names the Xid it cleans up after: that one decides the blame
        root = xid_info(int(caused.group(1)))
        details.update(
            caused_by=root.number,
            blame=root.blame,
            action=root.action,
            meaning=f"{info.meaning}, after Xid {root.number}: {root.meaning}",
        )
        kind, severity, blame = finding_kind(root), root.severity, root.blame
    recovery = _RECOVERY.search(rest)
    if recovery:
        details["action"] = f"driver requests: {recovery.group(1)}"
    level = APPLICATION if blame == "application" else HARDWARE
    sc.emit(
        p,
        "xid",
        kind,
        level,
        f"Xid {number} on GPU {details['pci']}: {details['meaning']}",
        severity=severity,
        lineno=lineno,
        **details,
    )


def _norm_pci(pci: str) -> str:
    """'0000:9b:00' and '0000:9b:00.0' name the same GPU."""
    pci = pci.strip().lower().removeprefix("pci:")
    return pci[:-2] if pci.endswith(".0") else pci


def _aer(sc: Scanner, p: Parsed) -> bool:
    m = _AER.search(p.text)
    bus = _PCIE_BUS.search(p.text)
    if not m and not bus:
        return False
    if m:
        device, severity = m.group(1), m.group(2)
        message = f"PCIe AER {severity.lower()} error on {device}"
    else:  # the report's detail line; on its own when the header line was lost
        assert bus is not None  # (no match of either returned above)
        device, severity = bus.group(2), bus.group(3)
        message = f"PCIe bus error on {device}: severity={severity}, type={bus.group(4).strip()}"
    corrected = "corrected" in severity.lower() and "uncorrected" not in severity.lower()
    sc.emit(
        p,
        "pcie_aer",
        "hardware_fault",
        HARDWARE,
        message,
        severity="warning" if corrected else "critical",
        device=device.rstrip(":"),
        action="check the PCIe link (lspci -vv; reseat or replace the riser or GPU) if errors keep coming",
    )
    return True


def _no_handle(sc: Scanner, p: Parsed) -> bool:
    m = _NO_HANDLE.search(p.text)
    if not m:
        return False
    sc.emit(
        p,
        "gpu_unreachable",
        "hardware_fault",
        HARDWARE,
        f"the driver cannot reach GPU {m.group(1)} ({m.group(2).strip()}): the GPU is lost",
        pci=_norm_pci(m.group(1)),
        action="drain the node; reset or reseat the GPU (check PCIe AER errors)",
    )
    return True


def _peermem(sc: Scanner, p: Parsed) -> bool:
    m = _PEERMEM.search(p.text)
    if not m:
        return False
    sc.emit(
        p,
        "nvidia_peermem",
        "network_fault",
        COMM_ERROR,
        f"nvidia-peermem ({m.group(1)}): {m.group(2)}",
        severity="warning",
        action=(
            "GPUDirect RDMA lost a GPU memory mapping (often when a process using it exits uncleanly); "
            f"if RDMA transfers fail, {PEERMEM}"
        ),
    )
    return True


def _fabric(sc: Scanner, p: Parsed) -> bool:
    m = _NVSWITCH.search(p.text)
    if m:
        fatal = m.group(2).lower() == "fatal"
        sc.emit(
            p,
            "nvswitch",
            "hardware_fault",
            HARDWARE,
            f"Fabric Manager: {m.group(1).strip()}",
            severity="critical" if fatal else "warning",
            nvswitch_error=int(m.group(3)),
            action=(
                "drain the node and reset the NVSwitch fabric"
                if fatal
                else "non-fatal NVSwitch error: watch for repeats; reset the fabric if jobs slow or fail"
            ),
        )
        return True
    m = _FM_FATAL.search(p.text)
    if m and ("fatal" in p.text.lower() or "fail" in p.text.lower()):
        sc.emit(
            p,
            "nvswitch",
            "hardware_fault",
            HARDWARE,
            f"Fabric Manager: {p.text}",
            action="check nv-fabricmanager and the NVSwitch state; drain the node if it does not recover",
        )
        return True
    return False


def _segfault(sc: Scanner, p: Parsed) -> bool:
    m = _SEGFAULT.search(p.text)
    if not m:
        return False
    lib = m.group(6) or "?"
    sc.emit(
        p,
        "segfault",
        "crash",
        APPLICATION,
        f"{m.group(1)} (pid {m.group(2)}) segfaulted in {lib}",
        pid=int(m.group(2)),
        process=m.group(1),
        library=lib,
        address=m.group(3),
    )
    return True


def _oom_kill(sc: Scanner, p: Parsed) -> bool:
    m = _OOM_KILL.search(p.text)
    if not m:
        return False
    name = m.group(2) or m.group(3) or "?"
    sc.emit(
        p,
        "host_oom_kill",
        "oom",
        APPLICATION,
        f"host OOM killer killed {name} (pid {m.group(1)})",
        pid=int(m.group(1)),
        process=name,
    )
    return True


def _link_down(sc: Scanner, p: Parsed) -> bool:
    m = _LINK_DOWN.search(p.text)
    if not m:
        return False
    sc.emit(
        p, "nic_link_down", "network_fault", COMM_ERROR, f"NIC {m.group(2)}: {p.text[m.start() :]}", device=m.group(2)
    )
    return True


def _nvlink_status(sc: Scanner, p: Parsed) -> bool:
    header = _GPU_HEADER.match(p.text)
    if header:
        sc.state["nvlink_gpu"] = int(header.group(1))
        return True
    m = _NVLINK_STATUS.match(p.text)
    if not m:
        return False
    gpu = sc.state.get("nvlink_gpu")
    sc.emit(
        p,
        "nvlink_down",
        "hardware_fault",
        HARDWARE,
        f"GPU {gpu} NVLink {m.group(1)} is {m.group(2)}",
        severity="warning",
        gpu=gpu,
        link=int(m.group(1)),
        action="an inactive NVLink halves intra-node bandwidth: reset the GPU, drain the node if it stays down",
    )
    return True
