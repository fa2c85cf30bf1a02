"""More places a stuck process waits, read from its stack dump's frames: the process group's shutdown or abort,
a communicator's creation, the store barrier of init_process_group, a checkpoint's write.

Rows of the same kind as knowledge/wait_places.py's (a WaitPlace each, with its source), joined to its
WAIT_PLACES by readers/stacks.py. A stream synchronize (cudaStreamSynchronize) has no row: the job's own
frame above it says more (tests/test_diagnose_stack_shapes.py). The frames are named the way each dumper prints
them: py-spy's and faulthandler's Python function with its file, gdb's and lldb's C++ function (a library's
symbol, its signature cut by the reader).
"""

from __future__ import annotations

from scope.analyzers.diagnose.knowledge.wait_places import WaitPlace

_SHUTDOWN_WHAT = (
    "waits in the process group's shutdown (destroy_process_group / ProcessGroupNCCL::abort waiting for "
    "ncclCommAbort or ncclCommDestroy to return)"
)
_SHUTDOWN_REMEDY = (
    "The process group's shutdown never returned: ProcessGroupNCCL::abort() (destroy_process_group, or the "
    "watchdog's abort after an error) waits in waitForFutureOrTimeout for ncclCommAbort / ncclCommDestroy, "
    "which hang in NCCL 2.25.1 (fixed in NCCL 2.26.2, the NCCL PyTorch 2.7 ships: pytorch/pytorch#149351). "
    "Print the NCCL version (torch.cuda.nccl.version(), NCCL_DEBUG=VERSION) and, on 2.25.x, upgrade it (pip "
    "install 'nvidia-nccl-cu12>=2.26.2', or a PyTorch build with a newer NCCL); a hang in ncclCommDestroy "
    "(the graceful destroy waiting for unfinished work) is avoided with TORCH_NCCL_ABORT_IN_DESTROY_PG=1 "
    "(abort instead); or skip destroy_process_group at the job's end (let the process exit)"
)
_SHUTDOWN_SOURCE = (
    "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp (ProcessGroupNCCL::abort / shutdown run abortCommsFromMap "
    "on a thread and waitForFutureOrTimeout on it; NCCLComm::abort calls ncclCommAbort, NCCLComm::destroy "
    "ncclCommDestroy); torch/distributed/distributed_c10d.py (destroy_process_group -> _shutdown_backend / "
    "_abort_process_group); pytorch/pytorch#149153 (ncclCommAbort hangs with NCCL 2.25.1), #149351 (NCCL 2.26.2)"
)

_INIT_WHAT = (
    "waits in the NCCL communicator's creation (ncclCommInitRank's bootstrap: every rank of the group must join)"
)
_INIT_REMEDY = (
    "The communicator's creation never finished: ncclCommInitRank waits in its bootstrap until every rank of "
    "the group connects to the others (the first collective of a group creates it, lazily, unless "
    "init_process_group got device_id). A rank that never reached this collective (dump every rank's stack), "
    "or ranks that cannot reach each other's bootstrap sockets, leave it here: NCCL_DEBUG=INFO "
    "NCCL_DEBUG_SUBSYS=INIT,BOOTSTRAP,NET shows the interface each rank picked (set NCCL_SOCKET_IFNAME to the "
    "one the hosts share; open the ports between the hosts)"
)
_INIT_SOURCE = (
    "NVIDIA/nccl src/init.cc (ncclCommInitRank -> ncclCommInitRankFunc -> bootstrapInit), src/bootstrap.cc "
    "(bootstrapAllGather / bootstrapRecv block until the peers connect); torch/csrc/distributed/c10d/"
    "ProcessGroupNCCL.cpp (getNCCLComm -> NCCLComm::create on a group's first collective)"
)

_BARRIER_WHAT = (
    "waits in init_process_group's store barrier for every rank to register (_store_based_barrier: the world "
    "is not complete)"
)
_BARRIER_REMEDY = (
    "init_process_group waits until all WORLD_SIZE ranks have registered in the store: a rank never started, "
    "died before it, or got another MASTER_ADDR / MASTER_PORT / WORLD_SIZE; check every rank was launched "
    "with the same world size and store address, and read the missing rank's own log"
)
_BARRIER_SOURCE = (
    "torch/distributed/distributed_c10d.py (_store_based_barrier: loops on store.add / store.wait until the "
    "world's count is reached, logging 'Waiting in store based barrier to initialize process group')"
)

_SAVE_WHAT = "writes a checkpoint (torch.save) that does not finish: the file system does not take the write"
_SAVE_REMEDY = (
    "The process stands in torch.save's write: the checkpoint's file system (NFS, Lustre, a network or fuse "
    "mount) is slow, full or hung. Check the path's mount (df -h, the storage's health), write the checkpoint "
    "to local disk and copy it after, and make only one rank write (the others waiting in a collective meanwhile)"
)
_SAVE_SOURCE = (
    "torch/serialization.py (save -> _save -> PyTorchStreamWriter.write_record); caffe2/serialize/"
    "inline_container.cc (PyTorchStreamWriter::writeRecord writes the zip records to the file)"
)

STUCK_WAITS: tuple[WaitPlace, ...] = (
    WaitPlace(
        "",
        frozenset(),
        _SHUTDOWN_WHAT,
        _SHUTDOWN_REMEDY,
        _SHUTDOWN_SOURCE,
        func_re=(
            r"(?:c10d::ProcessGroupNCCL::(?:abort|shutdown|waitForFutureOrTimeout|abortCommsFromMap)"
            r"|c10d::NCCLComm::(?:abort|destroy|finalize)|ncclCommAbort|ncclCommDestroy|ncclCommFinalize"
            r"|destroy_process_group|_shutdown_backend|_abort_process_group)\b"
        ),
    ),
    WaitPlace(
        "",
        frozenset(),
        _INIT_WHAT,
        _INIT_REMEDY,
        _INIT_SOURCE,
        func_re=(
            r"(?:ncclCommInitRank\w*|ncclCommInitAll|ncclCommSplit|ncclCommInitRankFunc|bootstrap(?:Init|AllGather"
            r"|Recv|Send|Barrier|Connect)\w*|c10d::NCCLComm::create\w*|c10d::ProcessGroupNCCL::(?:getNCCLComm"
            r"|initNCCLComm))\b"
        ),
        in_collective=True,
    ),
    WaitPlace(
        "torch/distributed/distributed_c10d.py",
        frozenset({"_store_based_barrier"}),
        _BARRIER_WHAT,
        _BARRIER_REMEDY,
        _BARRIER_SOURCE,
    ),
    WaitPlace(
        "torch/serialization.py", frozenset({"save", "_save", "_legacy_save"}), _SAVE_WHAT, _SAVE_REMEDY, _SAVE_SOURCE
    ),
    WaitPlace(
        "",
        frozenset(),
        _SAVE_WHAT,
        _SAVE_REMEDY,
        _SAVE_SOURCE,
        func_re=r"caffe2::serialize::PyTorchStreamWriter::\w+",
    ),
)
