"""What the review of diag58 (the heldout14 classes: a library not found, NVSHMEM's error macros, stale shared
memory, the c10d rendezvous store) found, each on short lines in the emitting program's own format: torchvision's
and torchaudio's import warnings, torch's elastic agent and c10d socket lines, NVSHMEM's nvshmemx_error.h macros,
UCX's ucp_context.c WARN, ld.so's symbol lookup error, mosaicml-streaming's prefix.py, torch's MapAllocator.cpp.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from benchmarks.remedy_fit import _contains, judge
from tests.helpers import diagnose_failures, top_failure

# 1. A loader line the program survives: torchvision's / torchaudio's UserWarning (they go on without the extension)
TORCHVISION_WARNING = (
    "/usr/local/lib/python3.10/dist-packages/torchvision/io/image.py:13: UserWarning: Failed to load image Python "
    "extension: 'libc10_cuda.so: cannot open shared object file: No such file or directory'If you don't plan on "
    "using image functionality from `torchvision.io`, you can ignore this warning. Otherwise, there might be "
    "something wrong with your environment.\n"
    "  warn(\n"
)
TORCHAUDIO_WARNING = (
    "/opt/conda/lib/python3.10/site-packages/torchaudio/_extension/utils.py:10: UserWarning: Failed to load FFmpeg "
    "extension: libavutil.so.58: cannot open shared object file: No such file or directory\n"
)
CUDNN_PROBE = (
    "Could not load library libcudnn_ops_infer.so.8. Error: libcudnn_ops_infer.so.8: cannot open shared object "
    "file: No such file or directory\nFalling back to the math implementation\n"
)
STEPS = "step 10 loss 2.31\nstep 20 loss 2.10\nstep 30 loss 1.90\n"
NCCL_REMOTE_ERROR = """\
node1:100:200 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<47023> with \
status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.0.0.1 remoteGidsfe80::1
node1:100:200 [0] NCCL INFO transport/net.cc:1335 -> 6
[rank0]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, remote process exited or \
there was a network error, NCCL version 2.21.5
[rank0]: ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.
"""
OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
    "79.10 GiB of which 1.20 GiB is free.\n"
)


def test_a_loader_warning_the_program_survives_is_no_failure_and_never_hides_a_later_one(tmp_path: Path) -> None:
    for name, log in (("tv", TORCHVISION_WARNING), ("ta", TORCHAUDIO_WARNING), ("cudnn", CUDNN_PROBE)):
        (tmp_path / name).mkdir()
        assert not diagnose_failures(tmp_path / name, log + STEPS), name
    (tmp_path / "nccl").mkdir()
    top = top_failure(tmp_path / "nccl", TORCHVISION_WARNING + STEPS + NCCL_REMOTE_ERROR)
    assert top.kind == "network_fault" and "libc10_cuda" not in top.suggestion
    (tmp_path / "oom").mkdir()
    top = top_failure(tmp_path / "oom", TORCHVISION_WARNING + OOM)
    assert top.kind == "oom"


def test_a_library_missing_where_the_process_died_stays_the_root_cause(tmp_path: Path) -> None:
    # Python's exception line ending a traceback, and ld.so at a program's start
    died = (
        'Traceback (most recent call last):\n  File "/opt/app/run.py", line 3, in <module>\n    import fused\n'
        "ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory\n"
    )
    top = top_failure(tmp_path, died)
    assert top.kind == "config_error" and top.severity == "critical" and "libcudnn.so.9" in top.suggestion


# 2. A retried connect to the rendezvous store that then joined is no failure, whatever its errno
C10D_RETRY_JOINED = """\
+ torchrun --nnodes 2 --node_rank 1 --rdzv_backend c10d --rdzv_endpoint 10.0.0.5:29400 train.py
[W socket.cpp:697] [c10d] The client socket has failed to connect to [ip-10-0-0-5.ec2.internal]:29400 \
(errno: 111 - Connection refused).
[W socket.cpp:697] [c10d] The client socket has failed to connect to [ip-10-0-0-5.ec2.internal]:29400 \
(errno: 111 - Connection refused).
INFO:torch.distributed.elastic.agent.server.api:[default] Rendezvous complete for workers. Result:
node2:100:100 [0] NCCL INFO comm 0x5600 rank 8 nranks 16 cudaDev 0 busId 1000 - Init COMPLETE
"""
C10D_TIMEOUT_THEN_JOINED = """\
  rdzv_backend     : c10d
  rdzv_endpoint    : node0:29400
[E socket.cpp:957] [c10d] The client socket has timed out after 60s while trying to connect to (node0, 29400).
WARNING:torch.distributed.elastic.rendezvous.dynamic_rendezvous:The rendezvous attempt failed, retrying.
INFO:torch.distributed.elastic.agent.server.api:[default] Rendezvous complete for workers. Result:
"""


def test_a_retried_rendezvous_connect_that_then_joined_is_no_failure(tmp_path: Path) -> None:
    assert not diagnose_failures(tmp_path, C10D_RETRY_JOINED + STEPS)
    (tmp_path / "timeout").mkdir()
    assert not diagnose_failures(tmp_path / "timeout", C10D_TIMEOUT_THEN_JOINED + STEPS)
    # errno 111 (node 0 not listening yet) retried until it joined is told by the rendezvous done, not by the errno
    # (test_diagnose_review58d2: errno 110 and 111 without it read as store_endpoint_ip_renamed)


# 3. The workers' own store after a completed rendezvous is not the rendezvous store; node 0's launcher that died
C10D_WORKERS_STORE = """\
  rdzv_backend     : c10d
  rdzv_endpoint    : node0:29400
INFO:torch.distributed.elastic.agent.server.api:[default] Rendezvous complete for workers. Result:
  master_addr=node0
  master_port=29500
[rank8]: torch.distributed.DistNetworkError: The client socket has timed out after 1800s while trying to connect \
to (node0, 29500).
"""


def test_a_store_timeout_after_the_rendezvous_or_beside_a_dead_node_0_is_not_the_unhosted_store(
    tmp_path: Path,
) -> None:
    top = top_failure(tmp_path, C10D_WORKERS_STORE)
    assert "is_host" not in top.suggestion
    (tmp_path / "two").mkdir()
    (tmp_path / "two" / "node0.log").write_text(
        "+ torchrun --nnodes 2 --node_rank 0 --rdzv_backend c10d --rdzv_endpoint node0:29400 train.py\n"
        'Traceback (most recent call last):\n  File "/usr/local/bin/torchrun", line 5, in <module>\n'
        "    from torch.distributed.run import main\n"
        "ModuleNotFoundError: No module named 'torch.distributed.run'\n"
    )
    node1 = (
        "+ torchrun --nnodes 2 --node_rank 1 --rdzv_backend c10d --rdzv_endpoint node0:29400 train.py\n"
        "[E socket.cpp:957] [c10d] The client socket has timed out after 900s while trying to connect to "
        "(node0, 29400).\n"
    )
    top = top_failure(tmp_path / "two", node1)  # written as job.log beside node0.log
    assert top.kind == "crash" and "is_host" not in top.suggestion


def test_the_unhosted_store_reading_leads_over_the_agents_exception_lines_that_echo_it(tmp_path: Path) -> None:
    log = (
        "  rdzv_backend     : c10d\n  rdzv_endpoint    : trainer-svc:29400\n"
        "[E socket.cpp:957] [c10d] The client socket has timed out after 60s while trying to connect to "
        "(trainer-svc, 29400).\n"
        "torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to the C10d store has "
        "failed. See inner exception for details.\n"
    )
    top = top_failure(tmp_path, log)
    assert top.metrics["code"] == "c10d_rendezvous_store_unhosted" and "is_host" in top.suggestion


# 4 and 5. NVSHMEM's innermost line names the cause: the bootstrap's, the symmetric heap's; init.cu follows it
NVSHMEM_BOOTSTRAP = """\
/workspace/nvshmem_src/src/modules/bootstrap/uid/bootstrap_uid.cpp:512: non-zero status: 7 bootstrap_uid_init \
failed, cannot connect to root on 10.0.0.5:
/workspace/nvshmem_src/src/host/init/init.cu:990: non-zero status: 7 nvshmem_bootstrap failed
/workspace/nvshmem_src/src/host/init/init.cu:1012: non-zero status: 7 nvshmem initialization failed
"""
NVSHMEM_HEAP = """\
/workspace/nvshmem_src/src/host/mem/mem.cpp:485: non-zero status: 2 nvshmemi_mem_heap_reserve failed: cuMemCreate \
out of memory
/workspace/nvshmem_src/src/host/init/init.cu:1012: non-zero status: 7 nvshmem initialization failed
"""


def test_nvshmem_innermost_line_names_the_cause_bootstrap_or_heap_not_a_transport(tmp_path: Path) -> None:
    top = top_failure(tmp_path, NVSHMEM_BOOTSTRAP)
    assert top.metrics["code"] == "nvshmem_bootstrap_failed" and top.severity == "critical"
    assert "NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME" in top.suggestion and "NCCL_SOCKET_IFNAME" not in top.suggestion
    (tmp_path / "alone").mkdir()
    found = diagnose_failures(tmp_path / "alone", NVSHMEM_BOOTSTRAP.split("\n", 1)[1])
    assert all(f.metrics["code"] != "bootstrap_failed" for f in found)  # NCCL's row takes no NVSHMEM line
    # after another NVSHMEM failure the bootstrap's line is a PE's echo of a peer that exited: the other leads
    (tmp_path / "beside").mkdir()
    beside = (
        "/workspace/nvshmem_src/src/modules/transport/ibrc/ibrc.cpp:398: non-zero status: 12 ibv_modify_qp failed\n"
        + NVSHMEM_BOOTSTRAP.split("\n")[0]
        + "\n"
    )
    assert top_failure(tmp_path / "beside", beside).metrics["code"] == "nvshmem_ib_transport_failed"
    (tmp_path / "heap").mkdir()
    top = top_failure(tmp_path / "heap", NVSHMEM_HEAP)
    assert "NVSHMEM_SYMMETRIC_SIZE" in top.suggestion and "nvidia_peermem" not in top.suggestion


# 6. The NVSHMEM rows read a long line in linear time
def test_the_nvshmem_rows_read_a_long_line_in_linear_time() -> None:
    from scope.analyzers.diagnose.knowledge.nvshmem_errors import NVSHMEM_ERROR_SIGNATURES

    lines = (
        "/a" * 10_000 + " non-zero status: 7",
        "src/" * 5_000 + "x",
        "/src/modules/transport/ibgda/" + "a" * 20_000 + " non-zero status: 7",
        "a.cpp:1: non-zero status: 7 " + " " * 20_000 + "x",
    )
    slow = []
    for sig in NVSHMEM_ERROR_SIGNATURES:
        for rx in (*sig.patterns, sig.fields_re):
            compiled = re.compile(rx)
            for line in lines:
                t0 = time.process_time()
                compiled.search(line)
                if time.process_time() - t0 > 0.05:
                    slow.append((sig.id, line[:20]))
    assert not slow, slow


# 7. UCX's own word that its CUDA transport is missing
UCX_OWN_WORDING = """\
[1701234567.123456] [node1:4242:0]    ucp_context.c:1187 UCX  WARN  transport 'cuda_copy' is not available, \
please use one or more of: posix, self, sysv, tcp
E1201 10:00:00.000001  4242 nixl_agent.cpp:470] registerMem: registration failed for the specified or all potential \
backends
"""


def test_ucx_own_wording_of_a_missing_cuda_transport_reads_as_ucx_without_cuda(tmp_path: Path) -> None:
    top = top_failure(tmp_path, UCX_OWN_WORDING)
    assert top.metrics["code"] == "ucx_without_cuda" and "UCX_MODULE_DIR" in top.suggestion


# 8. NVSHMEM's own modules and Python extension modules are library names
NVSHMEM_MODULE = """\
/sw/nvshmem/src/host/bootstrap/bootstrap_loader.cpp:64: NVSHMEM ERROR: Bootstrap unable to load \
'nvshmem_bootstrap_uid.so.3'
\tnvshmem_bootstrap_uid.so.3: cannot open shared object file: No such file or directory
/sw/nvshmem/src/host/init/init.cu:990: non-zero status: 7 nvshmem initialization failed
"""
EXTENSION_MISSING = (
    "ImportError: /opt/app/_C.cpython-310-x86_64-linux-gnu.so: cannot open shared object file: No such file or "
    "directory\n"
)


def test_nvshmem_modules_and_python_extensions_are_library_names(tmp_path: Path) -> None:
    top = top_failure(tmp_path, NVSHMEM_MODULE)
    assert "nvshmem_bootstrap_uid.so.3" in top.suggestion and "LD_LIBRARY_PATH" in top.suggestion
    (tmp_path / "ext").mkdir()
    top = top_failure(tmp_path / "ext", EXTENSION_MISSING)
    assert "_C.cpython-310-x86_64-linux-gnu.so" in top.suggestion and "LD_LIBRARY_PATH" in top.suggestion


# 9. One reading of 'undefined symbol': torch's own library is two torch installs, an extension's is its ABI
def test_an_undefined_symbol_in_torch_itself_is_mixed_installs_and_in_an_extension_its_abi(tmp_path: Path) -> None:
    torch_lib = (
        "python: symbol lookup error: /opt/conda/lib/python3.10/site-packages/torch/lib/libtorch_cuda.so: "
        "undefined symbol: _ZN3c104cuda9SetDeviceEi\n"
    )
    top = top_failure(tmp_path, torch_lib)
    assert top.metrics["code"] == "shared_library_symbol_mismatch" and "two torch" in top.suggestion
    (tmp_path / "ext").mkdir()
    ext = (
        "ImportError: /opt/conda/lib/python3.10/site-packages/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: "
        "undefined symbol: _ZN3c104cuda9SetDeviceEi\n"
    )
    top = top_failure(tmp_path / "ext", ext)
    # the same row (review59d: one reading of the message), the extension's fix
    assert top.metrics["code"] == "shared_library_symbol_mismatch" and "--no-build-isolation" in top.suggestion


# 10. streaming's bare-string _check_self; torch's shm_open errno 17 (a name that exists)
def test_streaming_bare_dir_and_torch_shared_memory_messages_read_as_torch_prints_them(tmp_path: Path) -> None:
    top = top_failure(tmp_path, "ValueError: Reused local directory: /data/c4/train. Provide a different one.\n")
    assert top.metrics["code"] == "streaming_duplicate_local_dir"
    (tmp_path / "exists").mkdir()
    top = top_failure(
        tmp_path / "exists",
        "RuntimeError: unable to open shared memory object </torch_4242_1_0> in read-write mode: File exists (17)\n",
    )
    assert top.metrics["code"] == "torch_shm_name_exists" and "/torch_4242_1_0" in top.suggestion


# 11. The remedy scorer: '-' and '_' inside a name join it on both edges; a flag's leading dashes start a word
def test_the_remedy_scorer_treats_dash_and_underscore_alike_inside_a_name() -> None:
    assert not _contains("set NCCL-IB-HCA=mlx5_0", "ib_hca") and not _contains("set NCCL_IB_HCA=mlx5_0", "ib_hca")
    assert not _contains("use --master-port 29500", "port") and not _contains("port_range 5", "port")
    assert _contains("Set --rdzv_endpoint to node0", "rdzv_endpoint") and _contains("open the port", "port")
    assert judge("set ib_hca", "export nccl-ib-hca=mlx5_0").verdict == "miss"
