"""One name per collective, whoever printed it: the op names of the whole project (ingest and diagnose).

The same all-reduce is `ALLREDUCE` in a c10d watchdog line, `nccl:all_reduce` in a Flight Recorder entry,
`allreduce` in a trace's record_param_comms, `c10d::allreduce_` as a dispatcher op, `AllReduce` in an NCCL
kernel name, `gloo:all_reduce` on gloo, `all_reduce` in a Python stack. Each row is a canonical name and the
spellings the programs print for it, with where they print it. Spellings are compared without case and
underscores (`_ALLGATHER_BASE`, `_allgather_base` and `allgather_base` are one key).

A coalesced variant is its base collective: a coalesced all-reduce is one NCCL group of all-reduce kernels
(the GPU runs ncclDevKernel_AllReduce*, which ingest reads as all_reduce), has the all-reduce's bus-bandwidth
factor, and all_gather / reduce_scatter coalesced variants were already their base op on both sides. So
`allreduce_coalesced` is `all_reduce` (ingest's classifier used to say `all_reduce_coalesced`, diagnose
`all_reduce`). `coalesced` alone (the entry that closes a coalescing group in Flight Recorder), `wait`,
`start_coalescing` / `end_coalescing` and names no row knows keep their own (snake_case) name.
"""

from __future__ import annotations

import re

# Sources:
#   c10d OpType, printed as `OpType=...` by the watchdog: torch/csrc/distributed/c10d/Work.hpp (opTypeToString).
#   Flight Recorder profiling_name ("nccl:<name>", "gloo:<name>"): ProcessGroupNCCL.cpp / ProcessGroupGloo.cpp
#     profiling titles; the set torch/distributed/flight_recorder/components/types.py (COLLECTIVES, P2P) matches.
#   record_param_comms collective names in Kineto traces: torch/csrc/distributed/c10d/ParamCommsUtils.hpp
#     callers in ProcessGroupNCCL.cpp / ProcessGroupGloo.cpp.
#   c10d dispatcher ops (`c10d::allreduce_`): torch/csrc/distributed/c10d/Ops.cpp.
#   NCCL kernels (ncclDevKernel_AllReduce_Sum_f32_RING_LL, ncclDevKernel_SendRecv): NCCL src/device/generate.py.
#   Python API functions in stack dumps: torch/distributed/distributed_c10d.py.
OP_NAMES: dict[str, tuple[str, ...]] = {
    "all_reduce": (
        "all_reduce",  # Python API, FR, gloo
        "ALLREDUCE",  # OpType
        "AllReduce",  # NCCL kernel
        "allreduce_",  # c10d dispatcher op
        "allreduce_coalesced",  # FR, record_param_comms, OpType ALLREDUCE_COALESCED
        "_allreduce_sparse",  # OpType _ALLREDUCE_SPARSE
    ),
    "all_gather": (
        "all_gather",
        "ALLGATHER",
        "AllGather",
        "_allgather_base",  # OpType _ALLGATHER_BASE, FR, record_param_comms
        "_all_gather_base",
        "all_gather_into_tensor",  # Python API
        "allgather_into_tensor_coalesced",  # record_param_comms, c10d op
        "all_gather_into_tensor_coalesced",  # FR
        "allgather_coalesced",  # OpType ALLGATHER_COALESCED
        "ALLGATHER_coalesced",  # FR
        "all_gather_single",  # FR (torch >= 2.6)
        "all_gather_v",  # FR
    ),
    "reduce_scatter": (
        "reduce_scatter",
        "REDUCE_SCATTER",
        "ReduceScatter",
        "_reduce_scatter_base",  # OpType, FR, record_param_comms
        "reduce_scatter_tensor",  # Python API
        "reduce_scatter_tensor_coalesced",  # OpType REDUCE_SCATTER_TENSOR_COALESCED, FR
        "REDUCE_SCATTER_coalesced",  # FR
        "reduce_scatter_single",  # FR
        "reduce_scatter_v",  # FR
    ),
    "all_to_all": (
        "all_to_all",
        "ALLTOALL",
        "AllToAll",
        "alltoall_base",  # OpType ALLTOALL_BASE, record_param_comms
        "all_to_all_single",  # Python API, FR
        "all_to_all_v_single",  # FR
        "all_to_allv",
        "alltoallv",
    ),
    "broadcast": ("broadcast", "BROADCAST", "Broadcast", "_broadcast_oop"),  # _broadcast_oop: FR
    "reduce": ("reduce", "REDUCE", "Reduce", "_reduce_oop"),  # _reduce_oop: FR
    "barrier": ("barrier", "BARRIER", "all_reduce_barrier"),  # all_reduce_barrier: FR (a barrier run as all-reduce)
    "gather": ("gather", "GATHER"),
    "scatter": ("scatter", "SCATTER"),
    "send": ("send", "SEND"),
    "recv": ("recv", "RECV", "recv_any_source", "RECVANYSOURCE"),  # OpType RECVANYSOURCE, c10d op recv_any_source_
    "send_recv": ("send_recv", "SendRecv"),  # NCCL's one kernel for point-to-point
}


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


_BY_KEY = {_key(spelling): op for op, spellings in OP_NAMES.items() for spelling in spellings}
_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")


def canonical_op(raw: str) -> str:
    """'ALLREDUCE', 'nccl:all_reduce', 'allreduce_', 'AllReduce', '_ALLGATHER_BASE', 'nccl:send 0->1' -> the
    canonical name (all_reduce, all_gather, send); a name no row knows, in snake_case."""
    name = raw.split(":")[-1].strip().split(" ", 1)[0]  # 'nccl:send 0->1', 'c10d::allreduce_'
    known = _BY_KEY.get(_key(name))
    if known:
        return known
    name = name.rstrip("_") or name
    return _CAMEL.sub(r"_\1", name).lower()
