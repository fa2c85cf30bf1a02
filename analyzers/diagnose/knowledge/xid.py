"""What each NVIDIA Xid means, who is usually at fault, and what to do (NVIDIA's Xid catalog, condensed).

`blame` says who to look at first: "application" (the job's own kernels, a bad address, an illegal
instruction: debug the code, the GPU is fine), "hardware" (drain the node), "driver" (GPU firmware
or driver state: reset the GPU, then drain if it recurs), "nvlink", "consequence" (a follow-on of
an earlier Xid).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class XidInfo:
    number: int
    meaning: str
    blame: str  # application | hardware | driver | nvlink | consequence | thermal
    severity: str  # critical | warning
    action: str


DRAIN = "drain the node and reset or replace the GPU before rescheduling work on it"
RESET = "reset the GPU (nvidia-smi -r) at the next opportunity; drain the node if it recurs"
APP = (
    "debug the application (compute-sanitizer, CUDA_LAUNCH_BLOCKING=1): this Xid is normally caused "
    "by the job's own kernels, not by a bad GPU, unless it recurs across different jobs"
)

# GSP firmware faults are mostly driver bugs (NVIDIA's release notes: GSP RPC timeouts fixed in 525.105.17 and
# later branches); a reset clears the state, the driver is the fix
GSP = (
    "reset the GPU or reboot the node; if it recurs, upgrade the NVIDIA driver (GSP RPC timeouts are driver bugs "
    "fixed in later releases, e.g. 525.105.17+) or turn GSP firmware off on the affected driver "
    "(NVreg_EnableGpuFirmware=0); drain the node if it still recurs"
)

_CATALOG = [
    XidInfo(8, "GPU stopped processing (channel timeout)", "driver", "critical", RESET),
    XidInfo(
        13, "Graphics engine exception (illegal instruction or address in a kernel)", "application", "critical", APP
    ),
    XidInfo(
        31, "GPU memory page fault (MMU fault: a kernel touched an invalid address)", "application", "critical", APP
    ),
    XidInfo(32, "Invalid or corrupted push buffer stream", "driver", "critical", RESET),
    XidInfo(38, "Driver firmware error", "driver", "critical", RESET),
    XidInfo(
        43,
        "GPU stopped processing: the channel was reset after a fault in the application",
        "application",
        "critical",
        APP,
    ),
    XidInfo(44, "Graphics engine fault during context switch", "driver", "critical", RESET),
    XidInfo(
        45,
        "Preemptive cleanup of a channel after earlier errors",
        "consequence",
        "warning",
        "look at the Xid that precedes it",
    ),
    XidInfo(48, "Double-bit (uncorrectable) ECC error in GPU memory", "hardware", "critical", DRAIN),
    XidInfo(54, "Auxiliary power is not connected to the GPU", "hardware", "critical", DRAIN),
    XidInfo(61, "Internal micro-controller breakpoint/warning", "driver", "critical", RESET),
    XidInfo(62, "Internal micro-controller halt", "driver", "critical", DRAIN),
    XidInfo(
        63,
        "ECC page retirement or row remapping recorded",
        "hardware",
        "warning",
        "reset the GPU when convenient so the remapped rows take effect; watch for recurrence",
    ),
    XidInfo(64, "ECC page retirement or row remapping failure", "hardware", "critical", DRAIN),
    XidInfo(68, "Video decoder (NVDEC) exception", "application", "critical", APP),
    XidInfo(69, "Graphics engine class error", "application", "critical", APP),
    XidInfo(
        74,
        "NVLink error",
        "nvlink",
        "critical",
        "check the NVLink link state (nvidia-smi nvlink -s / -e); reset the GPU, drain the node if it recurs",
    ),
    XidInfo(79, "GPU has fallen off the bus", "hardware", "critical", DRAIN),
    XidInfo(
        92, "High single-bit ECC error rate", "hardware", "warning", "watch the ECC counters; drain if they keep rising"
    ),
    XidInfo(
        94,
        "Contained ECC error (the affected application was stopped)",
        "hardware",
        "critical",
        "reset the GPU (nvidia-smi -r, or reboot the node) before it runs work again, so the pending row remap "
        "takes effect; drain the node until then and restart the job; replace (RMA) the GPU if Xid 94/95 recur",
    ),
    XidInfo(95, "Uncontained ECC error (every application on the GPU is affected)", "hardware", "critical", DRAIN),
    XidInfo(109, "Context switch timeout", "driver", "critical", RESET),
    XidInfo(119, "GSP RPC timeout (the GPU System Processor stopped answering)", "driver", "critical", GSP),
    XidInfo(120, "GSP error", "driver", "critical", GSP),
    XidInfo(121, "C2C link error", "nvlink", "critical", DRAIN),
    XidInfo(136, "NVLink/NVSwitch error (fabric)", "nvlink", "critical", RESET),
    XidInfo(
        137, "NVLink receive pipe error", "nvlink", "warning", "watch NVLink error counters; reset the GPU if it recurs"
    ),
    XidInfo(140, "Unrecovered ECC error", "hardware", "critical", DRAIN),
    XidInfo(143, "GPU initialization failure", "hardware", "critical", DRAIN),
    XidInfo(144, "NVLink5 link error (non-fatal)", "nvlink", "warning", "watch NVLink error counters"),
    XidInfo(145, "NVLink5 receive error (non-fatal)", "nvlink", "warning", "watch NVLink error counters"),
    XidInfo(146, "NVLink5 transmit error", "nvlink", "warning", "watch NVLink error counters"),
    XidInfo(147, "NVLink5 link error", "nvlink", "critical", RESET),
    XidInfo(148, "NVLink5 link error", "nvlink", "critical", RESET),
    XidInfo(
        149, "NVLink5 fatal link event (NETIR)", "nvlink", "critical", "reset the GPU; drain the node if it recurs"
    ),
    XidInfo(150, "NVLink5 fatal error", "nvlink", "critical", DRAIN),
    XidInfo(
        154,
        "GPU recovery action requested by the driver",
        "driver",
        "critical",
        "follow the recovery action in the message (reset the GPU, or drain and reset)",
    ),
    XidInfo(171, "Uncorrectable ECC error (newer GPUs)", "hardware", "critical", DRAIN),
]

XID_CATALOG: dict[int, XidInfo] = {x.number: x for x in _CATALOG}

# Xids that are the job's own fault: combined with a crash of a process on the same GPU they mean
# an application bug, not a bad GPU.
APPLICATION_XIDS = frozenset(x.number for x in _CATALOG if x.blame == "application")
# Xids that commonly follow an application fault on the same GPU within seconds (the faulted
# context times out, its channel is torn down): part of that fault, not a second one.
FOLLOW_ON_XIDS = frozenset({8, 32, 43, 45, 109})


def xid_info(number: int) -> XidInfo:
    known = XID_CATALOG.get(number)
    if known:
        return known
    return XidInfo(
        number,
        f"Xid {number} (not in scope's catalog)",
        "driver",
        "critical",
        "look the Xid up in NVIDIA's Xid catalog; reset the GPU if the job cannot continue",
    )


def finding_kind(info: XidInfo) -> str:
    """Application Xids are crashes of the job on that GPU; the rest are hardware faults."""
    return "crash" if info.blame == "application" else "hardware_fault"
