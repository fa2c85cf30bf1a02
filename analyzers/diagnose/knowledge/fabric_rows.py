"""Signature rows for the NVLink fabric's shared-memory set-ups: NCCL's NVLink SHARP (NVLS multicast) refused by
the node, and NVSHMEM's init with no transport to a peer. Same fields as knowledge/signatures.py, which splices
each table in where its rows stood (NVLS before nccl_cuda_invalid_argument: nvls.cc's own 'invalid argument' is
nvls_setup_failed's)."""

from __future__ import annotations

from scope.analyzers.diagnose.knowledge.nvshmem_errors import NVSHMEM_ERROR_SIGNATURES
from scope.analyzers.diagnose.knowledge.signature_row import Signature

NVLS_SIGNATURES: tuple[Signature, ...] = (
    # cuMulticastBindMem (transport/nvls.cc nvlsGroupBindMem) returning CUDA_ERROR_OUT_OF_MEMORY (2) while the GPUs'
    # own memory is free: the NVSwitch fabric has no multicast object left for one more NVLS group. Each
    # communicator with NVLS takes its own, so a job that creates many sub-communicators (FSDP / TP / PP groups, one
    # per test) exhausts the switch's fixed pool; NCCL 2.29 sets NVLS up for every such communicator and fails
    # init where 2.28 fell back (NVIDIA/nccl#2077: 'Failed to bind NVLink SHARP (NVLS) Multicast memory of size
    # 2097152 : CUDA error 2 'out of memory'', Fabric Manager running and healthy).
    Signature(
        id="nvls_multicast_exhausted",
        needles=("multicast",),
        # not NCCL 2.27-2.28's INFO line of the graceful fallback ('... CUDA error 2 'out of memory'. Proceeding
        # without NVLS support.', transport/nvls.cc): that run goes on without NVLS, healthy
        patterns=(
            r"(?i)^(?!.*Proceeding without NVLS)(?=.*(?:NVLS|NVLink SHARP)).*Multicast memory.*"
            r"CUDA error 2 'out of memory'",
        ),
        era="NCCL >= 2.17 on NVSwitch systems; NCCL 2.29 sets NVLS up for every communicator (no fallback)",
        kind="nccl_error",
        cause="nccl_bug",
        meaning="The NVSwitch fabric had no multicast resources left for one more NVLink SHARP (NVLS) group: every "
        "communicator with NVLS takes its own, and this job's communicators used them all; the GPUs' memory is "
        "not what ran out.",
        remedy=(
            "Turn NVLS off for the job (NCCL_NVLS_ENABLE=0; NVLS only speeds up large all-reduces), or create fewer "
            "communicators per node (reuse process groups, destroy the ones no longer used); NCCL releases before "
            "2.29 (2.28.9) fell back to other transports here instead of failing init."
        ),
        reference="https://github.com/NVIDIA/nccl/issues/2077",
        confidence="medium",
    ),
    # NVLS multicast set-up refused with CUDA 401, CUDA_ERROR_ILLEGAL_STATE ('the operation cannot be performed in
    # the present state', cuMulticastAddDevice / cuMulticastBindMem): the node's NVLink fabric state, not a setting
    # of the job: a job that ran for a month on the node starts failing (NVIDIA/nccl#1788), nodes whose local NVLink
    # got into a bad state fail every all_reduce_perf -g 8 (NVIDIA/DCGM#304), CI H100 runners fail until the
    # machines are repaired (pytorch/ao#3841), the driver's dmesg says 'NVLink fabric state ... out of sync'
    # (NVIDIA/nvshmem#40), and a Fabric Manager that is not running shows the same (pytorch/ci-infra#541).
    Signature(
        id="nvls_fabric_illegal_state",
        needles=("401",),
        patterns=(
            r"(?i)(?:NVLS|NVLink SHARP|Multicast|nvls\.cc).*(?:CUDA error|Cuda failure) 401\b",
            r"(?i)(?:CUDA error|Cuda failure) 401 'the operation cannot be performed in the present state'.*"
            r"(?:NVLS|Multicast)",
        ),
        era="NCCL >= 2.17 on NVSwitch systems (H100 / H200 / B200 with Fabric Manager), CUDA 12 multicast objects",
        kind="hardware_fault",
        cause="hardware",
        meaning="The node refused NCCL's NVLink SHARP (multicast) memory in its present state (CUDA error 401): "
        "the node's NVLink fabric - its NVSwitches or the Fabric Manager - is in a bad state; the job's settings "
        "are not the cause.",
        remedy=(
            "Drain the node and repair its fabric: check that nvidia-fabricmanager is running "
            "(systemctl status nvidia-fabricmanager; nvidia-smi -q shows the GPUs' Fabric State), read the kernel "
            "log for the driver's fabric errors (dmesg -T | grep -i -e fabric -e NVRM), then reset the GPUs or "
            "reboot (power-cycle) the node. NCCL_NVLS_ENABLE=0 works around it meanwhile, with slower collectives."
        ),
        reference="https://github.com/NVIDIA/nccl/issues/1788",
        confidence="medium",
    ),
    Signature(
        id="nvls_setup_failed",
        needles=("nvls.cc", "NVLS"),
        # not the advice that closes nvls.cc's own WARN ('Disable NVLS (NCCL_NVLS_ENABLE=0) if you wish to avoid this
        # error in the future.', a line of its own where the log keeps the WARN's newlines): it names no cause; not
        # the INFO line of NCCL 2.27-2.28's fallback ('... Proceeding without NVLS support.'): the run goes on
        patterns=(
            r"transport/nvls\.cc:\d+ (?:NCCL )?WARN",
            r"(?i)^(?!.*(?:if you wish to avoid this error|Proceeding without NVLS)).*NVLS.*(?:failed|failure|error)",
        ),
        era="NCCL >= 2.17 on NVSwitch systems (NVLink SHARP); known with NCCL 2.26.2 on R535 drivers",
        # transport/nvls.cc says it itself: 'usually caused by a system or configuration error in the Fabric
        # Manager or NVSwitches' (or a driver too old for the NCCL release)
        kind="config_error",
        cause="configuration",
        meaning="NCCL's NVLink SHARP (multicast) setup failed and communicator init aborts: the Fabric Manager or "
        "the NVSwitches (NCCL's own words), or an NCCL release and driver combination.",
        remedy=(
            "Check that nvidia-fabricmanager runs and matches the driver (systemctl status nvidia-fabricmanager); "
            "after Fabric Manager was stopped and started, reset the GPUs (or reboot) before running jobs. Then the "
            "NCCL / driver pairing (NCCL >= 2.26.5 on R535). NCCL_NVLS_ENABLE=0 works around it."
        ),
        reference="https://github.com/pytorch/pytorch/issues/150852",
    ),
)

NVSHMEM_SIGNATURES: tuple[Signature, ...] = (
    # NVSHMEM (DeepEP, torch symmetric memory) builds a map of how each PE reaches every other (host/init/init.cu)
    # and aborts its init when some peer has no transport: across nodes the IB transport was skipped (ibrc.cpp:
    # 'neither nv_peer_mem, or nvidia_peermem detected. Skipping transport.': deepseek-ai/DeepEP#55 and #223, fixed by
    # modprobe nvidia-peermem), on one node a peer GPU this process cannot reach (topo.cpp 'Peer GPU 8 is not
    # accessible': pytorch/pytorch#170479, each process seeing only its own GPU).
    Signature(
        id="nvshmem_transport_map_failed",
        needles=("building transport map failed",),
        patterns=(r"building transport map failed",),
        era="NVSHMEM 2.x-3.x (DeepEP, pplx-kernels, torch symmetric memory)",
        kind="config_error",
        cause="configuration",
        meaning="NVSHMEM found no transport to some of its peers and aborted its initialisation: across nodes its "
        "InfiniBand transport was skipped, or on one node a peer GPU is not reachable from this process.",
        remedy=(
            "Across nodes load the GPUDirect RDMA module on every host (modprobe nvidia-peermem; lsmod | grep "
            "peer) - NVSHMEM skips its IB transport without it - or use IBGDA (NVSHMEM_IB_ENABLE_IBGDA=1 with the "
            "driver's PeerMappingOverride=1); on one node let each process see every GPU of the node "
            "(CUDA_VISIBLE_DEVICES) and check GPU peer access (nvidia-smi topo -p2p r). NVSHMEM_DEBUG=INFO names the "
            "transport that was skipped and why."
        ),
        reference="https://github.com/deepseek-ai/DeepEP/issues/55",
        confidence="medium",
    ),
    Signature(
        id="nvshmem_no_peermem",
        needles=("nvidia_peermem detected",),
        patterns=(r"neither nv_peer_mem, or nvidia_peermem detected",),
        era="NVSHMEM 2.x-3.x ibrc transport (src/modules/transport/ibrc/ibrc.cpp nvshmemt_init)",
        kind="config_error",
        cause="configuration",
        meaning="NVSHMEM skipped its InfiniBand transport: no GPUDirect RDMA peer-memory module is loaded, so "
        "NVSHMEM cannot reach the other nodes' GPUs (on one node, over NVLink, it needs none).",
        remedy="Load the GPUDirect RDMA module on every host (modprobe nvidia-peermem; lsmod | grep peer).",
        reference="https://github.com/deepseek-ai/DeepEP/issues/55",
        confidence="medium",
        severity="warning",  # single-node runs print it too and work: a failure beside it says more
    ),
    *NVSHMEM_ERROR_SIGNATURES,  # NVSHMEM's error macros, by the source folder that printed them
)
