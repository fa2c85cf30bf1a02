"""The calls a rank waits for its peers in, by the name its stack shows them under: torch.distributed's Python
functions (torch/distributed/distributed_c10d.py) and the methods of c10d's C++ process groups
(torch/csrc/distributed/c10d/ProcessGroup*.hpp, Work::wait / synchronize). A stack dump (readers/stacks.py) or a
traceback cut before its error (readers/cut_traceback.py) that ends in one was waiting in a collective.
"""

from __future__ import annotations

# Python calls that return only when the collective is done (or enqueued on the GPU, for NCCL).
BLOCKING_PY_CALLS = frozenset(
    {
        "barrier",
        "monitored_barrier",
        "all_reduce",
        "all_gather",
        "all_gather_object",
        "all_gather_into_tensor",
        "reduce_scatter",
        "reduce_scatter_tensor",
        "broadcast",
        "broadcast_object_list",
        "reduce",
        "gather",
        "scatter",
        "all_to_all",
        "all_to_all_single",
        "send",
        "recv",
    }
)
# Point-to-point calls that return a Work at once: a stack standing in one is issuing, not (yet) waiting.
ASYNC_PY_CALLS = frozenset({"isend", "irecv", "batch_isend_irecv"})
PY_CALLS = BLOCKING_PY_CALLS | ASYNC_PY_CALLS
# c10d's C++ process-group methods ('frame #13: c10d::ProcessGroupNCCL::barrier(...)', '...::WorkNCCL::wait(').
NATIVE_CALLS = frozenset(
    {
        "barrier",
        "allreduce",
        "allreduce_coalesced",
        "allgather",
        "_allgather_base",
        "allgather_into_tensor_coalesced",
        "reduce_scatter",
        "_reduce_scatter_base",
        "broadcast",
        "reduce",
        "gather",
        "scatter",
        "alltoall",
        "alltoall_base",
        "send",
        "recv",
        "wait",
        "synchronize",
    }
)
