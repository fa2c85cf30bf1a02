"""The communication-kernel catalog: GPU kernels that move data between GPUs without being NCCL's.

Plain data, one row per kernel family, checked in order after the NCCL/RCCL name rule of
scope.ingest.classify. Each row: a regular expression searched in the kernel name as Kineto prints
it (demangled, templated: `void deep_ep::intranode::dispatch<8, 768, 6144>(int4*, ...)`), the
collective op, the transport, where bytes / group / sequence can be read, and the source file
where the kernel is defined. Patterns are anchored on a namespace or a full kernel identifier so
that compute kernels whose names merely mention a collective word (`reduce_kernel`,
`vectorized_gather_kernel`, `index_select`, `scatter_add`, `get_dispatch_layout`) stay compute.

To add a family: append a row with its source, add its real kernel names to
tests/test_comm_kernels.py (CATALOG_CASES), and run that test. Users add in-house kernels with
`--comm-kernel REGEX[=OP]` or `comm_kernels` in scope.toml (scope.ingest.comm_rules).
"""

from __future__ import annotations

import hashlib
import re
from typing import NamedTuple


class CommKernel(NamedTuple):
    family: str
    pattern: str  # searched (re.search) in the kernel name
    op: str  # canonical op: all_reduce, all_gather, reduce_scatter, all_to_all, dispatch, combine, barrier, ...
    transport: str  # NVLink | NVLS multicast | RDMA | PCIe | NVLink/RDMA
    meta: str  # where bytes, group and sequence can be read
    source: str  # repository: path where the kernel is defined


_SYMM = "pytorch/pytorch: torch/csrc/distributed/c10d/symm_mem/CUDASymmetricMemoryOps.cu"
_SYMM_META = "bytes: Input Dims/type of the launching symm_mem:: op; group: its group_name arg (not in traces)"
_NVSHMEM_EXT = "pytorch/pytorch: torch/csrc/distributed/c10d/symm_mem/nvshmem_extension.cu"
_VLLM = "vllm-project/vllm: csrc/custom_all_reduce.cuh"
_VLLM_META = "bytes: Input Dims of the launching _C_custom_ar::all_reduce / vllm::all_reduce op"
_TRT = "NVIDIA/TensorRT-LLM: cpp/tensorrt_llm/kernels/customAllReduceKernels.cu"
_TRT_FUSION = "NVIDIA/TensorRT-LLM: cpp/tensorrt_llm/kernels/communicationKernels/allReduceFusionKernels.cu"
_UB = "NVIDIA/TransformerEngine: transformer_engine/common/comm_gemm_overlap/userbuffers/userbuffers.cu"
_UB_META = "bytes: not in the trace (the GEMM it overlaps); one kernel per chunk of the overlapped GEMM"
# Ports with the same kernel names under their own namespace (see _EP).
_EP_PORTS = "; microsoft/mscclpp: src/ext/ep/; SandAI-org/MagiAttention: magi_attention/csrc/comm/grpcoll/kernels/"
_DEEPEP_INTRA = "deepseek-ai/DeepEP: csrc/kernels/intranode.cu" + _EP_PORTS
_DEEPEP_INTER = "deepseek-ai/DeepEP: csrc/kernels/internode.cu" + _EP_PORTS
_DEEPEP_LL = "deepseek-ai/DeepEP: csrc/kernels/internode_ll.cu"
_DEEPEP_META = "bytes: tokens x hidden of the launching Buffer op (not in kernel args); sequence: launch order"
_NVSHMEM = "NVIDIA/nvshmem: src/device/ (collective *_on_stream kernels)"
_MSCCLPP = "microsoft/mscclpp: src/executor/execution_kernel.cu, apps/nccl/src/allreduce.hpp"

# Expert-parallel all-to-all kernels are recognised by their structure, not one repository's namespace:
# a module `intranode` / `internode` / `internode_ll` holding `dispatch`, `combine`, `notify_*` and
# `cached_notify*` kernels, under ANY namespace. DeepEP names them `deep_ep::intranode::dispatch`; its ports
# keep the structure under their own (MSCCL++'s `mscclpp::ep::`, MagiAttention's
# `magi_attn_comm::grpcoll::`, PaddlePaddle's copy, in-house builds renamed at vendoring).
_EP = r"\b[A-Za-z_]\w*::(?:[A-Za-z_]\w*::)*"

# Kernel-name identifier boundary: not preceded by a letter or underscore (a digit may: the length
# prefix of a mangled name, `_ZN5aiter26cross_device_reduce_2stage...`, as ROCm traces print them).
_B = r"(?<![A-Za-z_])"

CATALOG: tuple[CommKernel, ...] = (
    # torch symmetric memory (torch.ops.symm_mem.*): NVLink SHARP multicast and P2P loads.
    CommKernel(
        "torch_symm_mem",
        _B + r"multimem_(one_shot_)?all_reduce_kernel\b",
        "all_reduce",
        "NVLS multicast",
        _SYMM_META,
        _SYMM,
    ),
    CommKernel(
        "torch_symm_mem", _B + r"multimem_all_gather_kernel\b", "all_gather", "NVLS multicast", _SYMM_META, _SYMM
    ),
    CommKernel(
        "torch_symm_mem",
        _B + r"(one_shot|two_shot)_all_reduce_kernel(_inplace)?\b",
        "all_reduce",
        "NVLink",
        _SYMM_META,
        _SYMM,
    ),
    CommKernel(
        "torch_symm_mem",
        r"\bc10d::symmetric_memory::\w*(barrier|put_signal|wait_signal)\w*",
        "barrier",
        "NVLink",
        "group: the symm_mem op's group_name; no bytes",
        "pytorch/pytorch: torch/csrc/distributed/c10d/symm_mem/CUDASymmetricMemory.cu",
    ),
    CommKernel(
        "torch_nvshmem",
        _B + r"allToAllV(_2d)?\b",
        "all_to_all",
        "NVLink/RDMA",
        "bytes: in/out splits tensors of symm_mem::all_to_all_vdev (device-side)",
        _NVSHMEM_EXT,
    ),
    CommKernel(
        "torch_nvshmem",
        _B + r"exchangeSplitAndOffset(_2d)?\b",
        "all_to_all",
        "NVLink/RDMA",
        "the splits exchange before allToAllV: metadata only",
        _NVSHMEM_EXT,
    ),
    # vLLM / SGLang / aiter custom all-reduce over CUDA IPC (one-shot and two-shot).
    CommKernel(
        "custom_all_reduce",
        _B + r"cross_device_reduce_(1stage|2stage)\w*",
        "all_reduce",
        "NVLink",
        _VLLM_META,
        _VLLM + "; sgl-project/sglang: sgl-kernel/csrc/allreduce/custom_all_reduce.cuh",
    ),
    # TensorRT-LLM (and FlashInfer's port of it) custom and fused all-reduce.
    CommKernel(
        "trtllm_all_reduce",
        _B + r"(oneShot|twoShot|lowPrecisionTwoShot)AllReduceKernel\b",
        "all_reduce",
        "NVLink",
        "bytes: the AllReduce plugin's message size (not in kernel args)",
        _TRT,
    ),
    CommKernel(
        "trtllm_all_reduce",
        _B + r"allreduce_fusion_kernel_(oneshot|twoshot)\w*",
        "all_reduce",
        "NVLink",
        "fused all-reduce + residual/RMSNorm: transfer and compute in one kernel",
        _TRT_FUSION + "; flashinfer-ai/flashinfer: include/flashinfer/comm/trtllm_allreduce_fusion.cuh",
    ),
    CommKernel(
        "trtllm_all_reduce",
        r"\btensorrt_llm::kernels::mnnvl::\w*(oneshot|twoshot)\w*",
        "all_reduce",
        "NVLink (multi-node NVLink)",
        "bytes: not in kernel args",
        "NVIDIA/TensorRT-LLM: cpp/tensorrt_llm/kernels/communicationKernels/mnnvlTwoShotAllreduceKernels.cu",
    ),
    CommKernel(
        "trtllm_all_reduce",
        _B + r"lamportAllReduceKernel\b|\bmoeAllReduceKernel\b",
        "all_reduce",
        "NVLink",
        "bytes: not in kernel args",
        _TRT_FUSION,
    ),
    # TransformerEngine userbuffers (comm-GEMM overlap of tensor-parallel layers).
    CommKernel(
        "te_userbuffers", _B + r"userbuffers_fp16_sum_inplace_gpu_\w*rs\w*", "reduce_scatter", "NVLink", _UB_META, _UB
    ),
    CommKernel(
        "te_userbuffers", _B + r"userbuffers_fp16_sum_inplace_gpu_\w*ag\w*", "all_gather", "NVLink", _UB_META, _UB
    ),
    CommKernel(
        "te_userbuffers", _B + r"userbuffers_fp16_sum_inplace_gpu_(rw|mc)\b", "all_reduce", "NVLink", _UB_META, _UB
    ),
    CommKernel(
        "te_userbuffers",
        _B + r"kuserbuffers_(pullsend|pushsend|pullrecv|pushrecv|pushsendrecv)\w*",
        "send_recv",
        "NVLink",
        _UB_META,
        _UB,
    ),
    CommKernel("te_userbuffers", _B + r"kuserbuffers_(inc|dummy)\b", "signal", "NVLink", _UB_META, _UB),
    # DeepEP expert-parallel all-to-all: intranode (NVLink), internode (RDMA + NVLink), low latency (RDMA).
    CommKernel(
        "deepep",
        _EP + r"intranode::(cached_)?notify_(dispatch|combine)\b",
        "barrier",
        "NVLink",
        "token counts exchanged before dispatch/combine; no payload",
        _DEEPEP_INTRA,
    ),
    CommKernel("deepep", _EP + r"intranode::dispatch\b", "dispatch", "NVLink", _DEEPEP_META, _DEEPEP_INTRA),
    CommKernel("deepep", _EP + r"intranode::combine\b", "combine", "NVLink", _DEEPEP_META, _DEEPEP_INTRA),
    CommKernel(
        "deepep",
        _EP + r"internode::(cached_notify|notify_dispatch|notify_combine)\b",
        "barrier",
        "NVLink/RDMA",
        "token counts exchanged before dispatch/combine; no payload",
        _DEEPEP_INTER,
    ),
    CommKernel("deepep", _EP + r"internode::dispatch\b", "dispatch", "NVLink/RDMA", _DEEPEP_META, _DEEPEP_INTER),
    CommKernel("deepep", _EP + r"internode::combine\b", "combine", "NVLink/RDMA", _DEEPEP_META, _DEEPEP_INTER),
    CommKernel("deepep", _EP + r"internode_ll::dispatch\w*", "dispatch", "RDMA", _DEEPEP_META, _DEEPEP_LL),
    CommKernel("deepep", _EP + r"internode_ll::combine\w*", "combine", "RDMA", _DEEPEP_META, _DEEPEP_LL),
    # DeepEP v2 ("elastic", JIT-built over NCCL's device API); its dispatch_copy_epilogue_impl is a local copy.
    CommKernel(
        "deepep",
        r"\bdeep_ep::elastic::(hybrid_)?dispatch_impl\b",
        "dispatch",
        "NVLink/RDMA",
        _DEEPEP_META,
        "deepseek-ai/DeepEP: csrc/kernels/elastic/dispatch.hpp (deep_ep/impls/dispatch.cuh)",
    ),
    CommKernel(
        "deepep",
        r"\bdeep_ep::elastic::(hybrid_)?combine_impl\b",
        "combine",
        "NVLink/RDMA",
        _DEEPEP_META,
        "deepseek-ai/DeepEP: csrc/kernels/elastic/combine.hpp (deep_ep/impls/combine.cuh)",
    ),
    # NVSHMEM's own on-stream collectives (nvshmemx_*_on_stream launch these).
    CommKernel(
        "nvshmem",
        r"\bnvshmemi?x?_\w*(barrier|sync)\w*_kernel\b",
        "barrier",
        "NVLink/RDMA",
        "team: kernel args (not in traces); no bytes",
        _NVSHMEM,
    ),
    CommKernel(
        "nvshmem",
        r"\bnvshmemi?x?_\w*alltoall\w*_kernel\b",
        "all_to_all",
        "NVLink/RDMA",
        "bytes: not in kernel args",
        _NVSHMEM,
    ),
    CommKernel(
        "nvshmem",
        r"\bnvshmemi?x?_\w*(fcollect|allgather)\w*_kernel\b",
        "all_gather",
        "NVLink/RDMA",
        "bytes: not in kernel args",
        _NVSHMEM,
    ),
    CommKernel(
        "nvshmem",
        r"\bnvshmemi?x?_\w*(reduce|reducescatter)\w*_kernel\b",
        "all_reduce",
        "NVLink/RDMA",
        "bytes: not in kernel args",
        _NVSHMEM,
    ),
    CommKernel(
        "nvshmem",
        r"\bnvshmemi?x?_\w*(broadcast|bcast)\w*_kernel\b",
        "broadcast",
        "NVLink/RDMA",
        "bytes: not in kernel args",
        _NVSHMEM,
    ),
    # MSCCL++ (its NCCL-compatible library and its executor).
    CommKernel(
        "mscclpp",
        r"\bmscclpp::\w*executionKernel\b",
        "",
        "NVLink/RDMA",
        "op and bytes: the execution plan (not in the trace)",
        _MSCCLPP,
    ),
    CommKernel(
        "mscclpp",
        r"\bmscclpp::\w*(allreduce|allReduce|AllReduce)\w*",
        "all_reduce",
        "NVLink/RDMA",
        "bytes: kernel args (not in traces)",
        _MSCCLPP,
    ),
    CommKernel(
        "mscclpp",
        r"\bmscclpp::\w*(allgather|allGather|AllGather)\w*",
        "all_gather",
        "NVLink/RDMA",
        "bytes: kernel args (not in traces)",
        _MSCCLPP,
    ),
)

# CPU ops (torch.library ops, visible in traces with record_shapes) that launch catalog kernels: their
# Input Dims / Input type give the kernel's bytes (scope.ingest.launcher). Also listed in
# native/kineto.c (is_comm_name), which keeps their args.
LAUNCH_OP_PREFIXES = ("symm_mem::", "_C_custom_ar::")

# Every pattern contains one of these literally: a name with none of them skips the regular
# expressions (a substring test is ~100x cheaper than 30 searches of a 200-character template name).
KEYWORDS = (
    "multimem",
    "_all_reduce_kernel",
    "symmetric_memory",
    "allToAllV",
    "exchangeSplitAndOffset",
    "cross_device_reduce",
    "AllReduceKernel",
    "allreduce_fusion_kernel",
    "mnnvl",
    "userbuffers",
    "deep_ep::",
    "intranode::",
    "internode",
    "nvshmem",
    "mscclpp::",
    "grpcoll::",
)

CATALOG_RE: tuple[re.Pattern[str], ...] = tuple(re.compile(row.pattern) for row in CATALOG)

# Changes whenever a row changes: part of the store's cache key (scope.ingest), so stores ingested
# with an older catalog are re-parsed.
CATALOG_KEY = hashlib.sha1(repr([(r.pattern, r.op) for r in CATALOG] + [LAUNCH_OP_PREFIXES]).encode()).hexdigest()[:12]


def is_launch_op(name: str) -> bool:
    return name.startswith(LAUNCH_OP_PREFIXES)


def catalog_match(name: str) -> CommKernel | None:
    """The first catalog row whose pattern occurs in the kernel name, or None."""
    if not any(k in name for k in KEYWORDS):
        return None
    for row, pattern in zip(CATALOG, CATALOG_RE, strict=True):
        if pattern.search(name):
            return row
    return None
