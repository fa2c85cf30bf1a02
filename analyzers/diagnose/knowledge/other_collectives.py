"""The collective libraries beside NCCL and HCCL that PyTorch jobs use, as data: Intel's oneCCL (torch-ccl /
oneccl_bindings_for_pytorch, XPU's xccl backend), Habana Gaudi's runtime (habana_frameworks), and AMD's RCCL with
the HIP runtime under it.

oneCCL logs through src/common/log/log.hpp: '<date>:(<pid>) |CCL_ERROR| <file>:<line> <function>: <message>'
(|CCL_WARN| and |CCL_INFO| lines are a healthy run's too: no row reads them), and raises its CCL_THROW as
'oneCCL: <file>:<line> <function>: EXCEPTION: <message>'. Its rendezvous is a key-value store (KVS) the ranks reach
over TCP (internal_kvs.cpp: CCL_KVS_IFACE, CCL_KVS_CONNECTION_TIMEOUT, CCL_KVS_IP_EXCHANGE); its transport is MPI
or libfabric (CCL_ATL_TRANSPORT, FI_PROVIDER).

RCCL is NCCL hipified: it prints NCCL's own lines ('NCCL WARN', 'NCCL error in: ...'), NCCL_* settings and 'RCCL
version ...', so NCCL's rows read it; where it words a line its own way ('HIP failure' for 'Cuda failure',
src/include/checks.h) the rows of NCCL say both. The HIP runtime's errors read like CUDA's (torch's ROCm build
prints 'HIP error: <hipGetErrorString>' and 'HIP out of memory'): HIP_WORDINGS lists the pairs the signature rows
accept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from scope.analyzers.diagnose.knowledge.hccl_errors import HCCL_SIGNATURES
from scope.analyzers.diagnose.knowledge.signature_row import Signature, row

ONECCL_LOG = "https://github.com/uxlfoundation/oneCCL/blob/master/src/common/log/log.hpp"
ONECCL_KVS = (
    "https://github.com/uxlfoundation/oneCCL/blob/master/src/atl/util/pm/pmi_resizable_rt/pmi_resizable/kvs/"
    "internal_kvs.cpp"
)
ONECCL_OFI = "https://github.com/uxlfoundation/oneCCL/blob/master/src/atl/ofi/atl_ofi.cpp"
ONECCL_ENV = "https://uxlfoundation.github.io/oneCCL/env-variables.html"
RCCL_CHECKS = "https://github.com/ROCm/rccl/blob/develop/src/include/checks.h"

# oneCCL's CCL_LOG_LEVEL prints each step of its init; every oneCCL remedy ends with it
CCL_DEBUG = "CCL_LOG_LEVEL=debug prints each step of oneCCL's init"

# RCCL's banner (src/init.cc VERSION_STRING 'RCCL version 2.18.3+hip6.1'; newer 'RCCL version : 2.20.5-HEAD:abc')
RCCL_BANNER = re.compile(r"\bRCCL version :? ?(\d+\.\d+\.\d+(?:\+hip\d+(?:\.\d+)*)?)")


def release_fix(runs: str, rccl: str | None, rank: str = "next") -> str:
    """How a fix suggests another release of the collective library the log runs: NCCL's wheels, or RCCL's ROCm
    (RANK: 'next' or 'first' suspect)."""
    if rccl:
        return (
            f"the RCCL release is the {rank} suspect (this log runs RCCL {rccl}): try the RCCL of a newer ROCm, or "
            "the last one that worked (RCCL ships with ROCm and with PyTorch's ROCm wheels; a newer librccl.so can "
            "be put first on LD_LIBRARY_PATH)"
        )
    return (
        f"the NCCL release is the {rank} suspect ({runs}): try a newer NCCL release, or the last one that worked "
        "(pip install nvidia-nccl-cu12==VERSION, or the NCCL of another PyTorch build)"
    )


# HIP's words for what CUDA's rows read (RCCL's checks.h, torch's hipified messages): CUDA's wording, HIP's
HIP_WORDINGS: tuple[tuple[str, str], ...] = (
    ("NCCL WARN Cuda failure", "NCCL WARN HIP failure"),  # RCCL's CUDACHECK / CUCHECK
    ("CUDA error: out of memory", "HIP error: out of memory"),  # c10's C10_CUDA_CHECK, hipified
    ("CUDA out of memory", "HIP out of memory"),  # the caching allocator's OOM
)  # torch's 'No HIP GPUs are available' keeps its words: HIP_SIGNATURES reads it with AMD's settings


def as_cuda_words(text: str) -> str:
    """TEXT with HIP's words put back as CUDA's (HIP_WORDINGS), so the rows written for CUDA's read it."""
    for cuda, hip in HIP_WORDINGS:
        if hip in text:
            text = text.replace(hip, cuda)
    return text


@dataclass(frozen=True)
class CclError:
    id: str
    words: str  # a regex of the message after '|CCL_ERROR| <file>:<line> <function>: ' (or its EXCEPTION)
    kind: str
    cause: str
    meaning: str
    remedy: str
    source: str


# Most specific first: a line is the first row's whose words it holds.
ONECCL_ERRORS: tuple[CclError, ...] = (
    CclError(
        "oneccl_kvs_timeout",
        r"connection time \(\d+\) >= limit|KVS get error: timeout|kvs_get_value: .{0,80}timeout",
        "network_fault",
        "network",
        "oneCCL's key-value store (its rendezvous) could not reach the main rank's server in time.",
        "oneCCL's ranks could not reach its KVS server on the main rank: set CCL_KVS_IFACE to the interface the "
        "nodes reach each other on (the same on every node), open its port between them, and for a slow start "
        "raise CCL_KVS_CONNECTION_TIMEOUT (seconds); check that the main rank started at all (its own log).",
        ONECCL_KVS,
    ),
    CclError(
        "oneccl_kvs_interface_missing",
        r"can't find interface (?P<ccl_iface>\S*) ?to get host IP",
        "config_error",
        "configuration",
        "oneCCL's key-value store found no address on the interface it was told to use.",
        "CCL_KVS_IFACE names an interface this host does not have{ccl_iface| }: set it to the interface that "
        "carries the job's traffic here (ip -br addr), or unset it.",
        ONECCL_KVS,
    ),
    CclError(
        "oneccl_kvs_mode",
        r"can_use_internal_kvs\(\) failed|internal kvs should be used with pmi kvs mode or ofi transport",
        "config_error",
        "configuration",
        "oneCCL was set to MPI's transport while the ranks were not started by MPI, so its own KVS cannot be used.",
        "Ranks started by torchrun, Ray or a framework's own launcher need oneCCL's own rendezvous: set "
        "CCL_ATL_TRANSPORT=ofi (not mpi), or launch the ranks with mpirun.",
        ONECCL_KVS,
    ),
    CclError(
        "oneccl_no_ofi_provider",
        r"can't find suitable provider|no active providers",
        "config_error",
        "configuration",
        "oneCCL's libfabric transport found no usable provider for the network.",
        "oneCCL found no libfabric provider it can use: check FI_PROVIDER names one this node has (fi_info -l lists "
        "them: tcp, verbs, cxi, psm3), or unset it; CCL_ATL_TRANSPORT=mpi uses MPI instead.",
        ONECCL_OFI,
    ),
    CclError(
        "oneccl_ze_ipc_exchange",
        r"set CCL_ZE_IPC_EXCHANGE=(?P<ccl_ze_ipc>\w+) explicitly",
        "config_error",
        "configuration",
        "oneCCL could not learn each process's place on the node for its GPU IPC exchange.",
        "Set CCL_ZE_IPC_EXCHANGE={ccl_ze_ipc|sockets} as oneCCL asks, or give it the local rank and count "
        "(CCL_LOCAL_RANK, CCL_LOCAL_SIZE) from the launcher.",
        "https://github.com/uxlfoundation/oneCCL/blob/master/src/common/global/global.cpp",
    ),
    CclError(
        "oneccl_ze_not_initialized",
        r"ze_data (?:failed|was not initialized)",
        "config_error",
        "configuration",
        "oneCCL's GPU path (Level Zero) was not initialized in this process: it saw no Intel GPU.",
        "oneCCL saw no Intel GPU through Level Zero: check that the process sees one (sycl-ls; ZE_AFFINITY_MASK or "
        "ONEAPI_DEVICE_SELECTOR not hiding it, the container's /dev/dri), and that oneCCL, the GPU driver and torch "
        "(its xpu build) are releases made for each other.",
        "https://github.com/uxlfoundation/oneCCL/blob/master/src/comm/comm_selector.cpp",
    ),
    CclError(
        "oneccl_error",
        r"",
        "nccl_error",
        "nccl_bug",
        "Intel's collective library oneCCL reported an error.",
        "oneCCL failed{ccl_site| }: " + CCL_DEBUG + "; check the transport (CCL_ATL_TRANSPORT, FI_PROVIDER) and "
        "the rendezvous interface (CCL_KVS_IFACE) on every node.",
        ONECCL_LOG,
    ),
)

_CCL_ERROR = r"\|CCL_ERROR\| (?P<ccl_site>[\w./-]+:\d+)? ?.{0,300}?"


def _ccl_row(e: CclError) -> Signature:
    pattern = _CCL_ERROR + (f"(?:{e.words})" if e.words else "")
    return row(
        e.id,
        "|ccl_error|",
        pattern,
        era="oneCCL 2021.x (torch-ccl / oneccl_bindings_for_pytorch, torch's xccl backend)",
        kind=e.kind,
        cause=e.cause,
        meaning=e.meaning,
        remedy=e.remedy if e.id == "oneccl_error" else f"{e.remedy} {CCL_DEBUG}.",
        reference=f"{e.source}; {ONECCL_ENV}",
        fields_re=pattern,
        confidence="high" if e.words else "medium",
    )


ONECCL_SIGNATURES: tuple[Signature, ...] = (
    *(_ccl_row(e) for e in ONECCL_ERRORS),
    # CCL_THROW's exception in the Python traceback: it follows the |CCL_ERROR| lines that say why (counts alone)
    row(
        "oneccl_exception",
        "oneccl:",
        r"oneCCL: (?P<ccl_site>[\w./-]+:\d+) \w+: EXCEPTION: (?P<ccl_exception>.{1,200})",
        era="oneCCL 2021.x (log.hpp CCL_THROW)",
        kind="nccl_error",
        cause="nccl_bug",
        meaning="Intel's collective library oneCCL raised an exception.",
        remedy="oneCCL raised at {ccl_site|its source}: {ccl_exception|see the message}; the |CCL_ERROR| lines "
        f"before it say why. {CCL_DEBUG}.",
        reference=ONECCL_LOG,
        fields_re=r"oneCCL: (?P<ccl_site>[\w./-]+:\d+) \w+: EXCEPTION: (?P<ccl_exception>.{1,200})",
        echo=True,
        confidence="medium",
    ),
)

HABANA_SIGNATURES: tuple[Signature, ...] = (
    # habana_frameworks' device acquire (synDeviceAcquire): 'synStatus=20 [Device already acquired] Device acquire
    # failed.' (another process holds the HPU: huggingface/tgi-gaudi#93), other statuses where no HPU is free
    row(
        "habana_device_acquire_failed",
        "device acquire failed",
        r"synStatus[= ]?(?P<syn_status>\d+) \[(?P<syn_says>[^\]]{1,60})\] Device acquire failed",
        era="Habana SynapseAI 1.x (habana_frameworks.torch)",
        kind="config_error",
        cause="configuration",
        meaning="The process could not acquire a Gaudi device (HPU): another process holds it, or none is visible.",
        remedy=(
            "The HPU was not free (synStatus {syn_status|N}: {syn_says|see the message}): stop the process that "
            "holds it (hl-smi lists them; a leftover of an earlier run), give each rank its own device "
            "(HABANA_VISIBLE_DEVICES, one process per HPU), and in a container start it with --runtime=habana "
            "-e HABANA_VISIBLE_DEVICES=all."
        ),
        reference="https://github.com/huggingface/tgi-gaudi/issues/93; "
        "https://github.com/HabanaAI/vllm-fork/issues/344",
        fields_re=r"synStatus[= ]?(?P<syn_status>\d+) \[(?P<syn_says>[^\]]{1,60})\]",
    ),
)

# torch/cuda/__init__.py _lazy_init (c10 device_count_ensure_non_zero, hipified on ROCm) and the runtimes' own
# cudaErrorNoDevice / hipErrorNoDevice: one row a vendor, so the remedy names the settings of the GPUs the log runs
_NO_GPU_ERA = "all torch releases (torch.cuda._lazy_init); the CUDA / HIP runtime (cudaErrorNoDevice, hipErrorNoDevice)"
_NO_GPU_MEANING = "The process saw no GPU: none is visible to it, or the driver is not loaded."
_LAUNCHER_GPUS = (
    "that the launcher gave the process GPUs (Slurm --gres=gpu:N or --gpus, Ray num_gpus, a Kubernetes pod's GPU "
    "resource)"
)

HIP_SIGNATURES: tuple[Signature, ...] = (
    row(
        "no_gpu_visible",
        ("no cuda gpus are available", "no cuda-capable device"),
        (r"No CUDA GPUs are available", r"CUDA error: no CUDA-capable device is detected"),
        era=_NO_GPU_ERA,
        kind="config_error",
        cause="configuration",
        meaning=_NO_GPU_MEANING,
        remedy=(
            "The process sees no NVIDIA GPU: check that CUDA_VISIBLE_DEVICES is not empty or out of range for this "
            f"node (a typo, an index past the node's GPUs), {_LAUNCHER_GPUS}, that the driver is loaded "
            "(nvidia-smi; dmesg for an Xid), and in a container that the GPUs are passed in (--gpus all, the "
            "NVIDIA container runtime)."
        ),
        reference="https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html (cudaErrorNoDevice)",
    ),
    row(
        "no_amd_gpu_visible",
        ("no hip gpus are available", "hiperrornodevice", "no rocm-capable device"),
        (r"No HIP GPUs are available", r"\bhipErrorNoDevice\b|no ROCm-capable device is detected"),
        era=_NO_GPU_ERA,
        kind="config_error",
        cause="configuration",
        meaning=_NO_GPU_MEANING,
        remedy=(
            "The process sees no AMD GPU: check that HIP_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES (and "
            "CUDA_VISIBLE_DEVICES, which ROCm's torch also reads) are not empty or out of range for this node, "
            f"{_LAUNCHER_GPUS}, that the amdgpu driver is loaded (rocm-smi), and in a container that the devices "
            "are passed in (--device=/dev/kfd --device=/dev/dri, the video / render groups)."
        ),
        reference="https://rocm.docs.amd.com/projects/HIP/en/latest/reference/error_codes.html",
    ),
)


def library_of(signature: str | None) -> str | None:
    """The collective library other than NCCL whose row SIGNATURE is (no NCCL release advice for it), else None."""
    return _LIBRARY_OF_ROW.get(signature or "")


_LIBRARY_OF_ROW: dict[str, str] = {
    **{s.id: "HCCL" for s in HCCL_SIGNATURES},
    **{s.id: "oneCCL" for s in ONECCL_SIGNATURES},
    **{s.id: "Habana" for s in HABANA_SIGNATURES},
}
