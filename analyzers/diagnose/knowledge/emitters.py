"""Knowledge taken from the programs that print the messages: NCCL's WARN sites by source file
(nccl_warns.py, generated from the NCCL 2.18-2.28 sources), the CUDA runtime's error names and NCCL's
result codes. A WARN line that no signature row explains is classified by the message class it is an
instance of, and failing that by the subsystem its source file belongs to: a socket, IB, OFI or shm
WARN is a network or configuration fault, never a generic "NCCL error".
"""

from __future__ import annotations

import functools
import re
from collections import Counter, defaultdict
from dataclasses import dataclass

from scope.analyzers.diagnose.knowledge.nccl_warns import ROWS
from scope.analyzers.diagnose.knowledge.other_collectives import as_cuda_words
from scope.analyzers.diagnose.knowledge.remedies import LARGER_SHM

NCCL_SOURCE = "https://github.com/NVIDIA/nccl/blob/{tag}/src/{file}"


@dataclass(frozen=True)
class Subsystem:
    cause: str
    what: str
    remedy: str


# What each subsystem's failure means and what to do; the kind comes from the message class.
SUBSYSTEMS: dict[str, Subsystem] = {
    "ib": Subsystem(
        "network",
        "the InfiniBand / RoCE transport",
        "Check the fabric between the hosts named: ibstat / ibv_devinfo port state, ib_write_bw between them; on "
        "RoCE set NCCL_IB_GID_INDEX to the RoCEv2 GID (show_gids) and check routes / PFC; NCCL_IB_DISABLE=1 as a test.",
    ),
    "ofi": Subsystem(
        "network",
        "the libfabric (OFI / EFA) transport",
        "Check the fabric between the instances: on EC2 the security group must allow all traffic between its "
        "members (inbound and outbound); fi_info -p efa, fi_pingpong between the nodes; keep aws-ofi-nccl, "
        "libfabric and NCCL from one release set.",
    ),
    "ib_config": Subsystem(
        "configuration",
        "the InfiniBand device set-up",
        "Select the NICs NCCL may use (NCCL_IB_HCA), keep one link layer per job (IB or RoCE, not both), and check "
        "that the RDMA devices and their IP interfaces are visible to the process (container --device / privileges).",
    ),
    "socket": Subsystem(
        "network",
        "NCCL's TCP sockets",
        "Make the hosts reach each other on the interface NCCL uses: NCCL_SOCKET_IFNAME to the routable NIC, open "
        "the ports between nodes (firewall / security group), check MASTER_ADDR resolves to that network.",
    ),
    "socket_config": Subsystem(
        "configuration",
        "NCCL's socket interface selection",
        "Set NCCL_SOCKET_IFNAME to an interface every host has (prefixes match: eth, ens; ^docker,lo excludes), "
        "and NCCL_COMM_ID / MASTER_ADDR to an address of that network.",
    ),
    "bootstrap_config": Subsystem(
        "configuration",
        "the bootstrap rendezvous",
        "Each job needs its own rendezvous: another job or a stale process uses the same NCCL_COMM_ID / "
        "MASTER_PORT, or the ranks disagree on the world size; check the launch command of every node.",
    ),
    "peer_lost": Subsystem(
        "network",
        "a connection to a peer process",
        "A peer closed its connection: find the rank or host that failed first (its own log, exit status, kernel "
        "log); the rest is its cascade.",
    ),
    "shm": Subsystem(
        "configuration",
        "shared memory (/dev/shm)",
        LARGER_SHM + "; NCCL_SHM_DISABLE=1 as a workaround.",
    ),
    "p2p": Subsystem(
        "configuration",
        "GPU peer-to-peer (CUDA IPC / P2P)",
        "Check peer access (nvidia-smi topo -p2p r), PCIe ACS (lspci -vvv | grep ACSCtl) and the IOMMU (iommu=pt); in "
        "containers share the IPC namespace (--ipc=host); NCCL_P2P_DISABLE=1 as a test.",
    ),
    "nvls": Subsystem(
        "configuration",
        "NVLink SHARP / multi-node NVLink",
        "Check nvidia-fabricmanager (and IMEX on multi-node NVLink) runs and matches the driver; NCCL_NVLS_ENABLE=0 "
        "(or NCCL_MNNVL_ENABLE=0) as a workaround.",
    ),
    "transport_config": Subsystem(
        "configuration",
        "a transport's set-up (CollNet / SHARP, GIN)",
        "Disable the optional transport (NCCL_COLLNET_ENABLE=0) or fix its plugin / SHARP set-up.",
    ),
    "plugin": Subsystem(
        "configuration",
        "a network / tuner / profiler plugin",
        "Check the plugin NCCL loads (NCCL_NET_PLUGIN, LD_LIBRARY_PATH, libnccl-net.so version) matches this NCCL.",
    ),
    "driver": Subsystem(
        "configuration",
        "the CUDA driver / NVML / GDRCopy libraries",
        "Match the NVIDIA driver, CUDA runtime and NCCL versions (nvidia-smi, CUDA forward compatibility), and make "
        "libcuda / libnvidia-ml visible in the container (NVIDIA container toolkit).",
    ),
    "topology": Subsystem(
        "configuration",
        "topology detection",
        "NCCL could not model the node: check the PCI / NUMA view in VMs and containers (/sys visible), "
        "NCCL_TOPO_FILE if one is set, and the NIC / GPU selection variables.",
    ),
    "usage": Subsystem(
        "configuration",
        "the program's use of the NCCL API",
        "Fix the calls into NCCL: one GPU per rank (torch.cuda.set_device before init), the same collectives, "
        "types and roots on every rank, valid communicator config and environment settings.",
    ),
    "version": Subsystem(
        "configuration",
        "the NCCL version",
        "Use one NCCL version on every rank, recent enough for the GPU (upgrade NCCL / the PyTorch build).",
    ),
    "memory": Subsystem(
        "application",
        "host or GPU memory",
        "Free memory for NCCL's buffers: lower the batch, NCCL_BUFFSIZE, or the number of communicators.",
    ),
    "desync": Subsystem(
        "desync",
        "the ranks' agreement on a collective",
        "Ranks posted different sizes for one operation, or run with different NCCL_PROTO / NCCL_ALGO: compare "
        "the ranks' environments, then each rank's calls (NCCL_DEBUG_SUBSYS=COLL opCount lines, "
        "TORCH_DISTRIBUTED_DEBUG=DETAIL); NCCL_PROTO=Simple everywhere tells the two apart.",
    ),
    "cuda": Subsystem(
        "application",
        "a CUDA call inside NCCL",
        "Read the CUDA error name: check the GPU (dmesg for Xid), the driver / CUDA / NCCL versions, and the "
        "program's streams and devices (CUDA_LAUNCH_BLOCKING=1, compute-sanitizer).",
    ),
    "system_call": Subsystem(
        "application",
        "a system call inside NCCL",
        "Read the errno text: limits (ulimit -l, -n), permissions, or a resource the container lacks.",
    ),
    "internal": Subsystem(
        "nccl_bug",
        "NCCL's internal state",
        "Usually the consequence of an earlier error; else an NCCL bug: upgrade NCCL and report it with "
        "NCCL_DEBUG=INFO logs.",
    ),
    "ras": Subsystem("nccl_bug", "NCCL's RAS subsystem", "Read the RAS report; upgrade NCCL if it persists."),
    "recovered": Subsystem("configuration", "a setting NCCL corrected", "Fix or remove the setting NCCL ignored."),
}

# CUDA runtime / driver error names (cudaGetErrorString) as NCCL quotes them in 'Cuda failure ...'.
CUDA_ERRORS: dict[str, tuple[str, str]] = {
    "out of memory": ("oom", "the GPU ran out of memory"),
    "invalid resource handle": (
        "config_error",
        "a stream or event of another device or context was passed (no torch.cuda.set_device, or a stream "
        "captured in a CUDA graph)",
    ),
    "invalid device ordinal": ("config_error", "a GPU index that does not exist (CUDA_VISIBLE_DEVICES / local rank)"),
    "invalid device function": ("config_error", "the binary has no kernels for this GPU"),
    "no kernel image is available for execution on the device": ("config_error", "the build lacks this GPU's arch"),
    "named symbol not found": ("config_error", "the NCCL build does not match the GPU or driver"),
    "peer access is not supported between these two devices": ("config_error", "GPU peer access is unavailable"),
    "system not yet initialized": ("config_error", "Fabric Manager has not set up the NVSwitch fabric"),
    "operation not supported": ("config_error", "the driver or platform lacks a feature NCCL asked for"),
    "operation not permitted when stream is capturing": ("config_error", "a forbidden call during graph capture"),
    "initialization error": ("config_error", "CUDA could not initialise (driver, container, fork after init)"),
    "CUDA driver version is insufficient for CUDA runtime version": ("config_error", "the driver is too old"),
    "an illegal memory access was encountered": ("crash", "a kernel touched invalid memory"),
    "unspecified launch failure": ("crash", "a kernel failed"),
    "misaligned address": ("crash", "a kernel used a misaligned address"),
    "uncorrectable ECC error encountered": ("hardware_fault", "the GPU's memory failed"),
    "uncorrectable NVLink error was detected during the execution": ("hardware_fault", "an NVLink failed"),
    "unknown error": ("crash", "the driver reported an unknown error (check dmesg for Xid)"),
}

# ncclResult_t (src/include/nccl.h.in): the number in 'file.cc:NNN -> N' return chains and retcodes.
NCCL_RESULTS: dict[int, tuple[str, str, str]] = {
    1: ("ncclUnhandledCudaError", "unhandled cuda error", "crash"),
    2: ("ncclSystemError", "unhandled system error", "nccl_error"),
    3: ("ncclInternalError", "internal error", "nccl_error"),
    4: ("ncclInvalidArgument", "invalid argument", "config_error"),
    5: ("ncclInvalidUsage", "invalid usage", "config_error"),
    6: ("ncclRemoteError", "remote process exited or there was a network error", "network_fault"),
    7: ("ncclInProgress", "NCCL operation in progress", "info"),
}


@dataclass(frozen=True)
class MessageClass:
    source: str
    format: str
    first: str
    last: str
    kind: str
    subsystem: str

    @property
    def site(self) -> str:
        return NCCL_SOURCE.format(tag=self.last, file=self.source)

    @functools.cached_property
    def pattern(self) -> re.Pattern[str]:
        return re.compile(format_regex(self.format))

    @property
    def anchor(self) -> str:
        """The longest literal run of the format: a cheap test before the regex."""
        return max(_SPEC.split(self.format), key=len).strip()


_SPEC = re.compile(r"%[-+ #0]*\d*(?:\.\d+)?(?:hh|h|ll|l|z|j|t)?[diouxXcspfeEgG%]")


def format_regex(fmt: str) -> str:
    """A printf format as a regex: each conversion matches any text, the rest literally."""
    parts = _SPEC.split(fmt)
    return ".*?".join(re.escape(p) for p in parts)


@functools.cache
def message_classes() -> tuple[MessageClass, ...]:
    return tuple(MessageClass(*row) for row in ROWS)


@functools.cache
def _by_file() -> dict[str, tuple[MessageClass, ...]]:
    out: dict[str, list[MessageClass]] = defaultdict(list)
    for mc in message_classes():
        out[mc.source.rsplit("/", 1)[-1]].append(mc)
    return {k: tuple(v) for k, v in out.items()}


@functools.cache
def _macro_rows() -> tuple[MessageClass, ...]:
    return tuple(mc for mc in message_classes() if mc.source.startswith("include/"))


@functools.cache
def _file_subsystem() -> dict[str, str]:
    """A source file's usual subsystem (its most common one among failures): for WARNs not in the table."""
    out = {}
    for name, rows in _by_file().items():
        counts = Counter(r.subsystem for r in rows if r.kind != "info" and r.subsystem != "internal")
        out[name] = counts.most_common(1)[0][0] if counts else "internal"
    return out


@dataclass(frozen=True)
class NetPlugin:
    file_prefix: str  # the plugin's source files, as its WARN lines name them ('net_fastsocket.cc:765')
    name: str
    source: str


# Network plugins NCCL loads (libnccl-net*.so) print WARN through NCCL's logger with their own file names, which
# NCCL's table does not hold: a plugin's WARN that the run goes past is its chatter (reasoning/recovered_warns.py).
NET_PLUGINS: tuple[NetPlugin, ...] = (
    NetPlugin(
        "net_fastsocket", "Google NCCL FastSocket", "https://github.com/google/nccl-fastsocket (net_fastsocket.cc)"
    ),
    NetPlugin(
        "nccl_ofi_", "aws-ofi-nccl (libfabric / EFA)", "https://github.com/aws/aws-ofi-nccl (src/nccl_ofi_*.c[pp])"
    ),
)


def net_plugin_of(text: str) -> NetPlugin | None:
    """The network plugin whose source file a WARN line names."""
    m = _WARN_SITE.search(text)
    if m is None:
        return None
    name = m.group(1).rsplit("/", 1)[-1]
    return next((p for p in NET_PLUGINS if name.startswith(p.file_prefix)), None)


_WARN_SITE = re.compile(r"([\w/.\-]+\.(?:cc|cu|h|c|cpp)):\d+ NCCL WARN (.*)$")
_NET_PREFIX = re.compile(r"NCCL WARN (?:NET/(IB|IBext\w*|Socket|OFI|\w+)|(Bootstrap))\b")
_NET_SUBSYSTEM = {"IB": "ib", "Socket": "socket", "OFI": "ofi", "Bootstrap": "socket"}


# Messages whose wording before 2.18 no format of the table matches, by what they say.
OLDER_WORDINGS: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"(?i)message truncated"), "collective_mismatch", "desync"),
)


@dataclass(frozen=True)
class Classified:
    kind: str
    subsystem: str
    message_class: MessageClass | None
    source: str  # the source file the line names, or the table row's

    @property
    def meaning(self) -> Subsystem:
        return SUBSYSTEMS[self.subsystem]


def classify_warn(text: str) -> Classified | None:
    """The message class of an NCCL WARN line, else the subsystem of the file or NET/ prefix it names."""
    if "NCCL WARN" not in text:
        return None
    text = as_cuda_words(text)  # RCCL's 'HIP failure' is NCCL's 'Cuda failure' (knowledge/other_collectives.py)
    m = _WARN_SITE.search(text)
    message = m.group(2) if m else text.split("NCCL WARN", 1)[1].strip()
    name = m.group(1).rsplit("/", 1)[-1] if m else ""
    # macros in headers (CUDACHECK, SYSCHECK, alloc, ibv wrappers) print their caller's file and line
    pool = (*_by_file().get(name, ()), *_macro_rows()) if name else message_classes()
    for mc in pool:
        if mc.anchor in message and mc.pattern.search(message):
            return _refine(Classified(mc.kind, mc.subsystem, mc, mc.source), message)
    for pattern, kind, sub in OLDER_WORDINGS:
        if pattern.search(message):
            return Classified(kind, sub, None, name)
    net = _NET_PREFIX.search(text)
    if net and (net.group(1) or net.group(2)) in _NET_SUBSYSTEM:
        sub = _NET_SUBSYSTEM[net.group(1) or net.group(2)]
        return Classified("network_fault", sub, None, name)
    if name in _file_subsystem():
        sub = _file_subsystem()[name]
        return Classified(_kind_of(sub), sub, None, name)
    return None


# errno texts (strerror) that say more than the call that failed: a peer that went away, a route that is not
# there, a limit of the host.
ERRNO_SUBSYSTEMS: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"Broken pipe|Connection reset by peer|closed by remote peer"), "network_fault", "peer_lost"),
    (
        re.compile(
            r"Connection refused|No route to host|Network is unreachable|Host is unreachable|timed out|"
            r"Software caused connection abort"
        ),
        "network_fault",
        "socket",
    ),
    (re.compile(r"Cannot assign requested address|Address family not supported"), "config_error", "socket_config"),
    (re.compile(r"Cannot allocate memory"), "oom", "memory"),
)


def _refine(found: Classified, message: str) -> Classified:
    """'Cuda failure' is as specific as the CUDA error it quotes; a failed call as its errno text."""
    if found.subsystem in ("socket", "system_call", "peer_lost", "internal", "ib"):
        for pattern, kind, sub in ERRNO_SUBSYSTEMS:
            if pattern.search(message):
                return Classified(kind, sub, found.message_class, found.source)
    if found.subsystem != "cuda":
        return found
    name = re.search(r"'([^']+)'", message)
    kind = CUDA_ERRORS.get(name.group(1).strip(), ("crash", ""))[0] if name else "crash"
    return Classified(kind, found.subsystem, found.message_class, found.source)


def _kind_of(subsystem: str) -> str:
    cause = SUBSYSTEMS[subsystem].cause
    return {"network": "network_fault", "configuration": "config_error", "application": "crash"}.get(
        cause, "nccl_error"
    )


def coverage() -> dict[str, tuple[int, int]]:
    """Per source file: (message classes classified to a cause other than 'internal', message classes)."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for mc in message_classes():
        row = out[mc.source]
        row[1] += 1
        row[0] += mc.subsystem != "internal" or mc.kind != "nccl_error"
    return {k: (v[0], v[1]) for k, v in sorted(out.items())}


_SAMPLE_VALUES = {"s": "x", "p": "0x1", "c": "c", "x": "1f", "X": "1F", "f": "1.0", "e": "1.0", "g": "1.0"}


def instance(fmt: str) -> str:
    """One line the format could print (each conversion filled with a plain value)."""
    return _SPEC.sub(lambda m: "%" if m.group(0) == "%%" else _SAMPLE_VALUES.get(m.group(0)[-1], "1"), fmt)


def warn_line(mc: MessageClass) -> str:
    return f"node1:100:200 [0] {mc.source}:42 NCCL WARN {instance(mc.format)}"
