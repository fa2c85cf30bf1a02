"""What the second review of diag58 found, each on short lines in the emitting program's own format: torchrun's
'[rankN]:' tags on a traceback, NVSHMEM's nvshmemx_error.h macros (innermost line first), torch's c10d socket.cpp
client lines, UCX's ucp_context.c WARN, torchvision's UserWarning.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from tests.helpers import diagnose_failures, top_failure

# 1. A rank that died of a missing library, while another rank stepped on until the watchdog's timeout
RANK_DIED_OTHERS_STEPPED = """\
[rank0]: step 1 loss 2.31
[rank3]: Traceback (most recent call last):
[rank3]:   File "/workspace/train.py", line 88, in <module>
[rank3]:     from flash_attn import flash_attn_func
[rank3]:   File "/usr/local/lib/python3.10/dist-packages/flash_attn/__init__.py", line 3, in <module>
[rank3]:     import flash_attn_2_cuda as flash_attn_cuda
[rank3]: ImportError: libcudart.so.11.0: cannot open shared object file: No such file or directory
[rank0]: step 2 loss 2.20
[rank0]: step 3 loss 2.11
[rank0]:[E1201 10:30:00.000000000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: \
WorkNCCL(SeqNum=40, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600012 milliseconds before \
timing out.
"""
# a loader line of rank 3 that did not end its traceback, then only rank 0's steps and its timeout
RANK_WARNED_OTHERS_STEPPED = """\
[rank3]: Could not load library libcudnn_ops_infer.so.8. Error: libcudnn_ops_infer.so.8: cannot open shared \
object file: No such file or directory
[rank0]: step 1 loss 2.31
[rank0]: step 2 loss 2.20
"""


def test_a_rank_that_died_of_a_missing_library_is_the_cause_though_another_rank_stepped(tmp_path: Path) -> None:
    top = top_failure(tmp_path, RANK_DIED_OTHERS_STEPPED)
    assert top.metrics["code"] == "shared_library_missing_cuda_runtime" and top.severity == "critical"
    (tmp_path / "warned").mkdir()
    found = diagnose_failures(tmp_path / "warned", RANK_WARNED_OTHERS_STEPPED)
    # rank 3 never showed a step of its own: its loader line is a clue (a warning), not a note the run went past
    assert [f.severity for f in found if f.metrics["code"].startswith("shared_library_missing")] == ["warning"]


# 2. NVSHMEM prints the innermost line first: a transport or topology line after the bootstrap's is its consequence
_NV = "/dvs/p4/build/sw/rel/gpgpu/toolkit/r12.0/main_nvshmem/src/"
BOOTSTRAP_THEN_TRANSPORT = (
    _NV + "modules/bootstrap/uid/bootstrap_uid.cpp:283: non-zero status: 7 bootstrap_uid_allgather: socket connect to "
    "10.0.0.5:38000 failed\n"
    + _NV
    + "host/transport/transport.cpp:322: non-zero status: 7 allgather of transport handles failed\n"
    + _NV
    + "host/init/init.cu:1012: non-zero status: 7 nvshmem initialization failed, exiting\n"
)
BOOTSTRAP_THEN_TOPO = (
    _NV + "modules/bootstrap/uid/bootstrap_uid.cpp:512: non-zero status: 7 bootstrap_uid_init failed, cannot "
    "connect to root on 10.0.0.5:\n"
    + _NV
    + "host/topo/topo.cpp:470: non-zero status: 7 topology exchange: bootstrap allgather "
    "failed\n"
)


def test_nvshmem_bootstrap_line_before_a_transport_or_topology_line_is_the_cause(tmp_path: Path) -> None:
    for name, log in (("transport", BOOTSTRAP_THEN_TRANSPORT), ("topo", BOOTSTRAP_THEN_TOPO)):
        (tmp_path / name).mkdir()
        top = top_failure(tmp_path / name, log)
        assert top.metrics["code"] == "nvshmem_bootstrap_failed" and top.severity == "critical", name


# 2b. A bootstrap exchange whose peer closed the socket (the PE at the other end exited) inside building the transport
# map: the bootstrap network worked, the transport map's failure is the cause (GPUDirect RDMA, IB transport skipped)
BOOTSTRAP_PEER_LEFT = (
    _NV
    + "modules/bootstrap/uid/bootstrap_uid.cpp:90: non-zero status: -6 allgather of ipc handles failed\n"
    + _NV
    + "host/init/init.cu:998: non-zero status: 7 building transport map failed\n"
    + _NV
    + "modules/bootstrap/uid/ncclSocket/ncclsocket_socket.cpp:socketProgressOpt:39: socketProgressOpt: Call to recv "
    "from 10.0.0.7<38229> failed : Broken pipe\n"
)


def test_a_bootstrap_whose_peer_left_gives_way_to_the_transport_map_failure(tmp_path: Path) -> None:
    top = top_failure(tmp_path, BOOTSTRAP_PEER_LEFT)
    assert top.metrics["code"] == "nvshmem_transport_map_failed", top.metrics["code"]
    assert "nvidia-peermem" in (top.suggestion or "")


# 3. An endpoint typed as an IP, reached by a name: errno 110 (timed out) and 111 count; never 'no node hosts it'
def _ip_renamed(errno: str) -> str:
    return (
        "+ torchrun --nnodes 2 --node_rank 1 --rdzv_backend c10d --rdzv_endpoint 10.0.0.5:29400 train.py\n"
        + f"[W socket.cpp:697] [c10d] The client socket has failed to connect to [gpu-node-0]:29400 (errno: {errno}).\n"
        * 2
        + "[E socket.cpp:957] [c10d] The client socket has timed out after 900s while trying to connect to "
        "(10.0.0.5, 29400).\n"
        "torch.distributed.DistNetworkError: The client socket has timed out after 900s while trying to connect to "
        "(10.0.0.5, 29400).\n"
    )


IP_ENDPOINT_TIMED_OUT = """\
+ torchrun --nnodes 2 --node_rank 1 --rdzv_backend c10d --rdzv_endpoint 10.0.0.5:29400 train.py
[E socket.cpp:957] [c10d] The client socket has timed out after 900s while trying to connect to (10.0.0.5, 29400).
torch.distributed.DistNetworkError: The client socket has timed out after 900s while trying to connect to \
(10.0.0.5, 29400).
"""


def test_an_ip_endpoint_reached_by_a_name_reads_as_renamed_whatever_the_errno(tmp_path: Path) -> None:
    for errno in ("110 - Connection timed out", "111 - Connection refused"):
        where = tmp_path / errno[:3]
        where.mkdir()
        assert top_failure(where, _ip_renamed(errno)).metrics["code"] == "store_endpoint_ip_renamed", errno
    (tmp_path / "ip").mkdir()
    found = diagnose_failures(tmp_path / "ip", IP_ENDPOINT_TIMED_OUT)
    assert found and all(f.metrics["code"] != "c10d_rendezvous_store_unhosted" for f in found)
    assert all("is_host" not in f.suggestion for f in found)


# 4. UCX warns that a CUDA transport is not available and goes on with the others: a CPU job that trained
UCX_CPU_JOB = (
    "[1701234567.123456] [node1:4242:0]    ucp_context.c:1187 UCX  WARN  transport 'cuda_copy' is not available, "
    "please use one or more of: posix, self, sysv, tcp\n" * 2 + "Epoch 1/10 loss 2.31\nEpoch 2/10 loss 2.10\n"
)
UCX_THEN_OOM = (
    "[1701234567.123456] [node1:4242:0]    ucp_context.c:1187 UCX  WARN  transport 'cuda_copy' is not available, "
    "please use one or more of: posix, self, sysv, tcp\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB "
    "of which 1.06 GiB is free.\n"
)


def test_ucx_missing_cuda_transport_warning_is_no_failure_where_the_job_went_on(tmp_path: Path) -> None:
    assert diagnose_failures(tmp_path, UCX_CPU_JOB) == []
    (tmp_path / "oom").mkdir()
    assert top_failure(tmp_path / "oom", UCX_THEN_OOM).kind == "oom"  # a clue, below the failure that ended it


# 5. torchvision's UserWarning in a healthy script that prints no step lines
TORCHVISION_SCRIPT = (
    "/usr/local/lib/python3.10/dist-packages/torchvision/io/image.py:13: UserWarning: Failed to load image Python "
    "extension: 'libc10_cuda.so: cannot open shared object file: No such file or directory'If you don't plan on "
    "using image functionality from `torchvision.io`, you can ignore this warning. Otherwise, there might be "
    "something wrong with your environment.\n  warn(\nGenerating captions for 500 images\n"
    "wrote results to /out/captions.json\n"
)


def test_a_python_warning_of_a_missing_library_never_leads_a_healthy_log(tmp_path: Path) -> None:
    assert diagnose_failures(tmp_path, TORCHVISION_SCRIPT) == []


# 6. The loader's died / went-on patterns and the rendezvous' went-on pattern read a long line in linear time
def test_the_went_on_and_died_patterns_read_a_long_line_in_linear_time() -> None:
    from scope.analyzers.diagnose.knowledge import rendezvous_host
    from scope.analyzers.diagnose.reasoning import survived_loading

    patterns = (
        survived_loading._DIED_AT,
        survived_loading._RANK_TAG,
        re.compile(survived_loading.BRACKETS + "step"),
        re.compile(rendezvous_host._RDZV_WENT_ON),
    )
    slow = []
    for rx in patterns:
        for line in ("[" * 20_000, " [" * 10_000):
            t0 = time.process_time()
            rx.search(line)
            if time.process_time() - t0 > 0.05:
                slow.append((rx.pattern[:30], line[:4]))
    assert not slow, slow
