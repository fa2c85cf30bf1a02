"""NVSHMEM's own error lines (DeepEP, pplx-kernels, torch symmetric memory), as data: where in NVSHMEM's source a
failure was printed says which part of its set-up failed, and so which settings decide it.

NVSHMEM reports a failed step with the macros of include/non_abi/nvshmemx_error.h, on stderr, as
'__FILE__:__LINE__: non-zero status: N <message>' (NVSHMEMI_NZ_ERROR_JMP / NE / ERROR_JMP), '__FILE__:__LINE__: NULL
value <message>' (NVSHMEMI_NULL_ERROR_JMP) or '... error status: N <message>' (EQ), then jumps out; each caller up
the chain prints its own line, so the innermost (the first printed) names the cause and 'connect EPS failed'
(host/transport/transport.cpp) or 'nvshmem initialization failed' follow it. __FILE__ is the build's path
('/dvs/p4/build/.../src/modules/transport/ibgda/ibgda.cpp' in NVIDIA's packages): the folder under src/ is the
transport or the host's step. N is an nvshmemx_status (7: NVSHMEMX_ERROR_INTERNAL) or the verbs call's errno.

One row a place, the specific before the general (first match wins); each becomes a signature row.
"""

from __future__ import annotations

from dataclasses import dataclass

from scope.analyzers.diagnose.knowledge.signature_row import Signature, row

# The error macros' shape: a source file under NVSHMEM's src/ tree, its line, the macro's words, then the message
# ({message}: what it must name, '' any). The path starts the line or follows a blank or a tag ('[rank3]: '): a
# search tries it there only, so a long line is read in linear time (an unanchored '(?:\S*/)?src/' retried at
# every character of a 20,000-character path was quadratic).
_NVSHMEM_ERROR = (
    r"(?:^|(?<=[\s\]]))(?P<nvshmem_file>(?:[^\s:\]]*/)?src/{place}[\w/.-]*\.(?:cpp|cu|cc|c|h)):\d+: "
    r"(?:non-zero status: -?\d+|NULL value|error status: -?\d+)\s*(?P<nvshmem_message>[^\n]*?{message}[^\n]*)"
)

SOURCE = "https://github.com/NVIDIA/nvshmem/blob/devel/src/include/non_abi/nvshmemx_error.h"
# The settings that decide NVSHMEM's remote transport (src/modules/transport/common/env_defs.h, host env_defs.h).
_TRANSPORT_SETTINGS = (
    "NVSHMEM_DEBUG=INFO prints each transport it tried and why one failed. On one node each process must see "
    "the node's GPUs (CUDA_VISIBLE_DEVICES) with peer access between them (nvidia-smi topo -p2p r). Across nodes "
    "its InfiniBand / RoCE transports need GPUDirect RDMA (the nvidia_peermem module loaded on every host: "
    "modprobe nvidia-peermem; lsmod | grep peer) and "
    "a usable NIC: NVSHMEM_HCA_LIST names the HCAs to use (mlx5_0:1,...), NVSHMEM_IB_GID_INDEX the RoCE v2 GID "
    "(show_gids); IBGDA (NVSHMEM_IB_ENABLE_IBGDA=1, what DeepEP's low-latency kernels use) also needs the "
    'driver\'s PeerMappingOverride=1 (options nvidia NVreg_RegistryDwords="PeerMappingOverride=1;") or the '
    "CPU-assisted NIC handler (NVSHMEM_IBGDA_NIC_HANDLER=cpu); NVSHMEM_REMOTE_TRANSPORT picks another transport"
)


@dataclass(frozen=True)
class NvshmemPlace:
    id: str
    place: str  # the folder (and file) under src/ the line's __FILE__ names
    message: str  # a regex the message after the macro's words must match ('' any)
    kind: str
    meaning: str
    remedy: str
    source: str
    # 'warning': a line that follows the one naming the cause (host/init's 'nvshmem initialization failed')
    severity: str = "critical"


NVSHMEM_PLACES: tuple[NvshmemPlace, ...] = (
    # ibv_create_ah (ibgda.cpp / ibdevx.cpp 'Unable to create ah.') for the peer's address: on RoCE the GID chosen
    # has no route (a link-local or IPv6 GID, another subnet); NVIDIA/nvshmem#33 (B300 + ConnectX-8, DCT share err
    # after it; fixed by another NVSHMEM build)
    NvshmemPlace(
        "nvshmem_ib_address_handle",
        r"modules/transport/(?:ibgda|ibdevx)/",
        r"(?i:create ah\b|ibv_create_ah)",
        "config_error",
        "NVSHMEM's IBGDA / IBDEVX transport could not create an InfiniBand address handle for a peer: the GID it "
        "picked on RoCE has no route to the peer, or this NVSHMEM build does not support the NIC.",
        "NVSHMEM's IBGDA transport could not create an address handle: pick the RoCE v2 GID both sides route "
        "(NVSHMEM_IB_GID_INDEX, show_gids; NVSHMEM_IB_ADDR_FAMILY / NVSHMEM_IB_ROCE_VERSION_NUM when left to "
        "NVSHMEM), restrict it to the NICs on the fabric (NVSHMEM_HCA_LIST), and on a new NIC generation use an "
        "NVSHMEM release or build that supports it (a rebuild from source, e.g. with NVSHMEM_USE_NCCL=1, fixed "
        "NVIDIA/nvshmem#33); without IBGDA (NVSHMEM_IB_ENABLE_IBGDA=0) NVSHMEM uses its proxy IB transport.",
        "https://github.com/NVIDIA/nvshmem/issues/33",
    ),
    NvshmemPlace(
        "nvshmem_ibgda_failed",
        r"modules/transport/ibgda/",
        "",
        "config_error",
        "NVSHMEM's IBGDA transport (GPU-initiated InfiniBand, DeepEP's low-latency kernels) failed to set up.",
        "NVSHMEM's IBGDA transport failed to set up: it needs GPUDirect RDMA (nvidia_peermem loaded on every host: "
        "modprobe nvidia-peermem; lsmod | grep peer) and the "
        'driver\'s PeerMappingOverride=1 (options nvidia NVreg_RegistryDwords="PeerMappingOverride=1;", then '
        "reload the driver) or the CPU NIC handler (NVSHMEM_IBGDA_NIC_HANDLER=cpu), an mlx5 NIC (NVSHMEM_HCA_LIST) "
        "and on RoCE the right GID (NVSHMEM_IB_GID_INDEX, show_gids); NVSHMEM_IB_ENABLE_IBGDA=0 falls back to the "
        "proxy IB transport. NVSHMEM_DEBUG=INFO says which step failed.",
        "NVIDIA/nvshmem src/modules/transport/ibgda/ibgda.cpp; changelog (PeerMappingOverride, "
        "NVSHMEM_IBGDA_NIC_HANDLER); https://github.com/deepseek-ai/DeepEP/issues/55",
    ),
    NvshmemPlace(
        "nvshmem_ib_transport_failed",
        r"modules/transport/(?:ibrc|ibdevx|common)/",
        "",
        "config_error",
        "NVSHMEM's InfiniBand transport (IBRC / IBDEVX) failed to set up or connect a peer.",
        "NVSHMEM's InfiniBand transport failed: " + _TRANSPORT_SETTINGS + ".",
        "NVIDIA/nvshmem src/modules/transport/ibrc/ibrc.cpp, common/env_defs.h",
    ),
    NvshmemPlace(
        "nvshmem_other_transport_failed",
        r"modules/transport/(?:ucx|libfabric)/",
        "",
        "config_error",
        "NVSHMEM's UCX or libfabric transport failed to set up or connect a peer.",
        "NVSHMEM's UCX or libfabric transport failed: check that library's own settings (UCX_TLS / "
        "UCX_NET_DEVICES; FI_PROVIDER) and NVSHMEM_REMOTE_TRANSPORT; NVSHMEM_DEBUG=INFO says which step failed.",
        "NVIDIA/nvshmem src/modules/transport/ucx, libfabric",
    ),
    NvshmemPlace(
        "nvshmem_bootstrap_failed",
        r"(?:modules/bootstrap/|host/bootstrap/)",
        "",
        "config_error",
        "NVSHMEM's bootstrap (how its PEs find each other: PMI, MPI, UID or a plugin) failed.",
        "NVSHMEM's bootstrap failed: NVSHMEM_BOOTSTRAP names how PEs meet (PMI, MPI, UID; a framework such as "
        "DeepEP passes a unique id), and its UID bootstrap listens on the interface NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME "
        "names: set it to the NIC the nodes reach each other on, and open the port between them.",
        "NVIDIA/nvshmem src/modules/bootstrap; host env_defs.h (NVSHMEM_BOOTSTRAP*)",
    ),
    NvshmemPlace(
        "nvshmem_transport_setup_failed",
        r"host/(?:transport|topo)/",
        "",
        "config_error",
        "NVSHMEM could not set up or connect its transports to every peer (the innermost line names the "
        "transport where it printed one).",
        "NVSHMEM could not connect its transports: " + _TRANSPORT_SETTINGS + ".",
        "NVIDIA/nvshmem src/host/transport/transport.cpp ('connect EPS failed'); deepseek-ai/DeepEP#55",
    ),
    # the symmetric heap (src/host/mem/mem.cpp nvshmemi_mem_heap_reserve / cuMemCreate / cuMemMap): every PE
    # reserves NVSHMEM_SYMMETRIC_SIZE of GPU memory at init; not a transport's failure
    NvshmemPlace(
        "nvshmem_symmetric_heap_failed",
        r"host/mem/",
        "",
        "config_error",
        "NVSHMEM could not reserve or map its symmetric heap: each PE takes NVSHMEM_SYMMETRIC_SIZE of GPU memory "
        "at init, and the GPU had not that much free (or the size exceeds what the driver maps).",
        "NVSHMEM could not allocate its symmetric heap on the GPU: lower NVSHMEM_SYMMETRIC_SIZE (e.g. 1G; DeepEP "
        "sizes its buffers from num_nvl_bytes / num_rdma_bytes) or free the GPU's memory first (another process "
        "on the GPU: nvidia-smi; the framework's own allocations before NVSHMEM's init); NVSHMEM_DEBUG=INFO "
        "prints the size it asked for.",
        "NVIDIA/nvshmem src/host/mem/mem.cpp; NVSHMEM environment variables (NVSHMEM_SYMMETRIC_SIZE)",
    ),
    # host/init's 'nvshmem initialization failed' / 'nvshmem_bootstrap failed' is the outermost line: it follows
    # the one that names the cause, so it is a warning that the inner line outranks, said alone where none printed
    NvshmemPlace(
        "nvshmem_init_failed",
        r"host/init/",
        "",
        "config_error",
        "NVSHMEM's initialization failed (the outermost line: an earlier NVSHMEM line, where one was printed, "
        "names the step that failed).",
        "NVSHMEM's init failed: the NVSHMEM line printed before this one names the step (bootstrap, transport, "
        "heap); rerun with NVSHMEM_DEBUG=INFO to print it. " + _TRANSPORT_SETTINGS + ".",
        "NVIDIA/nvshmem src/host/init/init.cu",
        severity="warning",
    ),
)


def _signature(p: NvshmemPlace) -> Signature:
    pattern = _NVSHMEM_ERROR.replace("{place}", p.place).replace("{message}", f"(?:{p.message})" if p.message else "")
    return row(
        p.id,
        ("non-zero status", "null value", "error status"),
        pattern,
        era="NVSHMEM 2.x-3.x (DeepEP, pplx-kernels, torch symmetric memory)",
        kind=p.kind,
        cause="configuration",
        meaning=p.meaning,
        remedy=p.remedy,
        reference=p.source if p.source.startswith("https://") else f"{SOURCE}; {p.source}",
        fields_re=pattern,
        confidence="medium",
        severity=p.severity,
    )


NVSHMEM_ERROR_SIGNATURES: tuple[Signature, ...] = tuple(_signature(p) for p in NVSHMEM_PLACES)
