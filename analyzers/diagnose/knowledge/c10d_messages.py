"""Message classes of torch.distributed (c10d), its TCPStore and rendezvous, the torchrun elastic agent
and gloo, keyed by the source file that prints them, with the finding kind scope must give a line of
that class. The examples are the format strings filled in as they print (see each file); the accuracy
benchmark and tests/test_diagnose_emitters.py check that scope classifies every one as listed.

Kinds: as scope.finding; "cascade" is a line that follows a failure and names none (take-down notices,
SIGTERMs to the other ranks): it must not be taken for the cause, so it agrees when the line alone is
no failure or only the symptom it reports.
"""

from __future__ import annotations

from dataclasses import dataclass

PT = "https://github.com/pytorch/pytorch/blob/main/"


@dataclass(frozen=True)
class MessageClass:
    emitter: str
    source: str
    name: str
    example: str
    kind: str
    era: str


C10D: tuple[MessageClass, ...] = (
    MessageClass(
        "c10d",
        "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
        "NCCL unique id store timeout",
        "[7] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value store by key "
        "'0', but store->get('0') got error: Socket Timeout",
        "timeout",
        "torch 2.x (broadcastUniqueNCCLID)",
    ),
    # ---- ProcessGroupNCCL: watchdog, heartbeat monitor, NCCL errors --------------------------------
    MessageClass(
        "c10d",
        "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
        "watchdog timeout",
        "[rank1]:[E1205 10:00:00.000000000 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=42, OpType=ALLREDUCE, NumelIn=1024, NumelOut=1024, Timeout(ms)=600000) ran for "
        "600012 milliseconds before timing out.",
        "timeout",
        "torch 1.10-2.x",
    ),
    MessageClass(
        "c10d",
        "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
        "blocking wait timeout",
        "RuntimeError: [Rank 0] WorkNCCL(SeqNum=7, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) "
        "timed out in blocking wait (TORCH_NCCL_BLOCKING_WAIT=1).",
        "timeout",
        "torch 2.x",
    ),
    MessageClass(
        "c10d",
        "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
        "heartbeat monitor",
        "[rank0]:[E1205 10:00:00.000000000 ProcessGroupNCCL.cpp:1400] [PG ID 0 PG GUID 0(default_pg) Rank 0] "
        "Heartbeat monitor timed out! Process will be terminated after dumping debug info. workMetaList_.size()=1",
        "hang",
        "torch 2.2-2.x",
    ),
    MessageClass(
        "c10d",
        "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
        "take-down notice",
        "[E ProcessGroupNCCL.cpp:916] [Rank 3] To avoid data inconsistency, we are taking the entire process down.",
        "cascade",
        "torch 1.10-2.x",
    ),
    MessageClass(
        "c10d",
        "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
        "NCCL error: unhandled system error",
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, "
        "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5",
        "nccl_error",
        "torch 2.x (DistBackendError); RuntimeError before 2.1",
    ),
    MessageClass(
        "c10d",
        "torch/csrc/distributed/c10d/NCCLUtils.hpp",
        "NCCL error: invalid usage",
        "RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:911, invalid usage",
        "config_error",
        "torch 1.x-2.x",
    ),
    MessageClass(
        "c10d",
        "torch/csrc/distributed/c10d/NCCLUtils.hpp",
        "NCCL error: unhandled cuda error",
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, "
        "unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.19.3",
        "nccl_error",  # ncclUnhandledCudaError: NCCL's result code; the WARN before it names the CUDA error
        "torch 2.x",
    ),
    MessageClass(
        "c10d",
        "torch/csrc/distributed/c10d/NCCLUtils.hpp",
        "NCCL error: remote process exited",
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.cpp:83, remote "
        "process exited or there was a network error, NCCL version 2.21.5",
        "network_fault",
        "torch 2.x, NCCL >= 2.12 (ncclRemoteError)",
    ),
    MessageClass(
        "c10d",
        "torch/csrc/distributed/c10d/ProcessGroupWrapper.cpp",
        "collective fingerprint mismatch",
        "RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running collective: "
        "CollectiveFingerPrint(SequenceNumber=12, OpType=ALLREDUCE, TensorShape=[1024], TensorDtypes=Float, "
        "TensorDeviceTypes=TensorOptions(dtype=float (default), device=cuda)), but Rank 1 is running collective: "
        "CollectiveFingerPrint(SequenceNumber=12, OpType=BROADCAST).",
        "collective_mismatch",
        "torch >= 1.10 with TORCH_DISTRIBUTED_DEBUG=DETAIL",
    ),
    MessageClass(
        "c10d",
        "torch/csrc/distributed/c10d/Backend.hpp",
        "backend lacks operation",
        "RuntimeError: No backend type associated with device type cpu",
        "config_error",
        "torch 2.x",
    ),
    # ---- TCPStore, sockets, rendezvous -------------------------------------------------------------
    MessageClass(
        "c10d",
        "torch/csrc/distributed/c10d/socket.cpp",
        "server cannot listen (port in use)",
        "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. "
        "port: 29500, useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use",
        "config_error",
        "torch >= 2.2 (DistNetworkError); errno 98 text before",
    ),
    MessageClass(
        "c10d",
        "torch/csrc/distributed/c10d/socket.cpp",
        "client connect timeout",
        "torch.distributed.DistNetworkError: The client socket has timed out after 1800000ms while trying to connect "
        "to (10.0.0.1, 29500).",
        "config_error",
        "torch >= 2.0",
    ),
    MessageClass(
        "c10d",
        "torch/csrc/distributed/c10d/socket.cpp",
        "client connect refused, retrying",
        "[W socket.cpp:663] [c10d] The client socket has failed to connect to [node1]:29500 (errno: 111 - Connection "
        "refused).",
        "config_error",
        "torch 1.13-2.x (retried until the timeout)",
    ),
    MessageClass(
        "c10d",
        "torch/csrc/distributed/c10d/TCPStore.cpp",
        "clients did not join",
        "torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 7/8 clients joined.",
        "missing_rank",
        "torch >= 2.1",
    ),
    MessageClass(
        "c10d",
        "torch/csrc/distributed/c10d/TCPStore.cpp",
        "store key wait timeout",
        "torch.distributed.DistStoreError: wait timeout after 300000ms, keys: /default_pg//0//cuda//0",
        "missing_rank",
        "torch >= 2.1",
    ),
    MessageClass(
        "torchrun",
        "torch/distributed/elastic/rendezvous/dynamic_rendezvous.py",
        "rendezvous timeout",
        "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError",
        "missing_rank",
        "torch >= 1.9 (c10d rdzv)",
    ),
    MessageClass(
        "torchrun",
        "torch/distributed/elastic/rendezvous/c10d_rendezvous_backend.py",
        "rendezvous store unreachable",
        "torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to the C10d store has "
        "failed. See inner exception for details.",
        "config_error",
        "torch >= 1.9",
    ),
    MessageClass(
        "torchrun",
        "torch/distributed/elastic/rendezvous/api.py",
        "rendezvous backend not registered",
        "ValueError: The rendezvous backend 'etcd3' is not registered. Did you forget to call `register`?",
        "config_error",
        "torch >= 1.9 (RendezvousHandlerRegistry.create_handler)",
    ),
    # ---- distributed_c10d.py: the backend name (knowledge/backend_names.py) -----------------------------
    MessageClass(
        "c10d",
        "torch/distributed/distributed_c10d.py",
        "backend neither built in nor registered",
        "AssertionError: Unknown c10d backend type HCCL",
        "config_error",
        "torch >= 1.8 (_new_process_group_helper; split_group)",
    ),
    MessageClass(
        "c10d",
        "torch/distributed/distributed_c10d.py",
        "invalid backend name",
        "ValueError: Invalid backend: 'ncll'",
        "config_error",
        "torch <= 1.12 (Backend.__new__)",
    ),
    MessageClass(
        "c10d",
        "torch/distributed/distributed_c10d.py",
        "unknown backend name",
        "ValueError: Unknown backend 'glo'. Specify a 'device:backend' string or use one of: ['gloo', 'nccl']",
        "config_error",
        "torch >= 2.10 (_parse_backend_string)",
    ),
    MessageClass(
        "c10d",
        "torch/distributed/distributed_c10d.py",
        "malformed device:backend string",
        "ValueError: Invalid device:backend pairing: cuda-nccl. The custom backend string argument is invalid: "
        "cpu:gloo,cuda-nccl.",
        "config_error",
        "torch >= 2.0 (BackendConfig)",
    ),
    MessageClass(
        "c10d",
        "torch/distributed/distributed_c10d.py",
        "no default backend for the accelerator",
        "ValueError: We detected accelerator npu on your machine. But we don't know which communication backend to "
        "use for this accelerator. Please specify the `backend` argument in the `init_process_group` call.",
        "config_error",
        "torch >= 2.3 (BackendConfig)",
    ),
    # ---- torchrun elastic agent ----------------------------------------------------------------------
    MessageClass(
        "torchrun",
        "torch/distributed/elastic/multiprocessing/api.py",
        "worker failed (exit code)",
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 1234) of "
        "binary: /usr/bin/python3",
        "crash",
        "torch >= 1.9",
    ),
    MessageClass(
        "torchrun",
        "torch/distributed/elastic/multiprocessing/api.py",
        "worker killed (SIGKILL)",
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 2 (pid: 4321) of "
        "binary: /usr/bin/python3",
        "oom",  # SIGKILL's kind (knowledge/signals.py): the OOM killer in the threads
        "torch >= 1.9",
    ),
    MessageClass(
        "torchrun",
        "torch/distributed/elastic/multiprocessing/api.py",
        "closing signal to the others",
        "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 4322 closing signal SIGTERM",
        "cascade",
        "torch >= 1.9",
    ),
    # ---- gloo ----------------------------------------------------------------------------------------
    MessageClass(
        "gloo",
        "third_party/gloo/gloo/transport/tcp/unbound_buffer.cc",
        "recv timeout",
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 1800000ms for "
        "recv operation to complete",
        "timeout",
        "all gloo releases",
    ),
    MessageClass(
        "gloo",
        "third_party/gloo/gloo/transport/tcp/pair.cc",
        "size mismatch",
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:510] op.preamble.length <= op.nbytes. "
        "881392 vs 4",
        "collective_mismatch",
        "all gloo releases",
    ),
    MessageClass(
        "gloo",
        "third_party/gloo/gloo/transport/tcp/pair.cc",
        "peer closed",
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer [10.0.0.2]:42375",
        "network_fault",
        "all gloo releases",
    ),
    # ---- the CUDA runtime through PyTorch ----------------------------------------------------------------
    MessageClass(
        "torch",
        "c10/cuda/CUDAException.cpp",
        "CUDA OOM",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
        "79.10 GiB of which 1.06 GiB is free.",
        "oom",
        "torch >= 2.5 (torch.cuda.OutOfMemoryError before)",
    ),
    MessageClass(
        "torch",
        "c10/cuda/CUDAException.cpp",
        "CUDA illegal memory access",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "crash",
        "all torch releases",
    ),
)


def sources() -> dict[str, list[MessageClass]]:
    out: dict[str, list[MessageClass]] = {}
    for mc in C10D:
        out.setdefault(mc.source, []).append(mc)
    return out
