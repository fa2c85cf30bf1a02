"""The signature table (analyzers/diagnose/knowledge/signatures.py) and the reasoning across lines and ranks.

Single-rule logs are short and written here in the real formats; the cases named after a corpus file
read that file from ../shared/data/failure_corpus.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from scope.analyzers import analyzer
from scope.analyzers.diagnose import diagnose
from scope.analyzers.diagnose.knowledge.signatures import CAUSES, SIGNATURES
from scope.analyzers.diagnose.readers.signature_scan import match_text

from benchmarks.failure_corpus import strip_header
from scope.finding import FAILURE_KINDS
from tests.conftest import ROOT, shared_data


def _failures(path: Path) -> list:
    return [f for f in diagnose(path).findings if f.kind in FAILURE_KINDS and f.severity != "info"]


def _write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "job.log").write_text(text)
    return tmp_path


def _corpus_log(tmp_path: Path, name: str) -> Path:
    _, log = strip_header(shared_data("failure_corpus", name).read_text())
    return _write(tmp_path, log)


# ---- the table ------------------------------------------------------------------------------------


def test_every_signature_row_is_complete_and_compiles() -> None:
    ids = [s.id for s in SIGNATURES]
    assert len(ids) == len(set(ids)), "signature ids must be unique"
    for s in SIGNATURES:
        for name in ("id", "era", "kind", "cause", "meaning", "remedy", "reference"):
            assert getattr(s, name).strip(), f"{s.id}: empty {name}"
        assert s.needles and s.patterns, s.id
        assert s.kind in analyzer("diagnose").kinds and s.kind in FAILURE_KINDS, f"{s.id}: kind {s.kind}"
        assert s.cause in CAUSES, f"{s.id}: cause {s.cause}"
        assert s.confidence in ("high", "medium", "low"), s.id
        assert s.severity in ("critical", "warning"), s.id
        assert s.reference.startswith("https://"), f"{s.id}: reference must be a public URL"
        for p in (*s.patterns, s.ranks_re, s.before_re, s.fields_re):
            re.compile(p)


# One line of each class, written in the format the real message has; the row that must claim it.
LINES = [
    (
        "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).",
        "shm_too_small",
    ),
    (
        "host:1:2 [0] NCCL WARN Error while creating shared memory segment /dev/shm/nccl-x (size 9637888)",
        "shm_too_small",
    ),
    (
        "RuntimeError: The server socket has failed to listen on any local network address. The server socket has "
        "failed to bind to [::]:29500 (errno: 98 - Address already in use).",
        "port_in_use",
    ),
    ("node: Test CUDA failure common.cu:891 'system not yet initialized'", "fabric_manager_not_running"),
    (
        "Failed: Cuda error /x/custom_all_reduce.cuh:307 'peer access is not supported between these two devices'",
        "peer_access_unsupported",
    ),
    (
        "h:1:2 [1] init.cc:497 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000",
        "several_ranks_one_gpu",
    ),
    ("RuntimeError: CUDA error: invalid device ordinal", "gpu_index_missing"),
    ("h:1:1 [0] NCCL WARN Cuda failure 'named symbol not found'", "cuda_stack_incompatible"),
    (
        "[2025-06-20 02:14:03] h:1:1 [0] allocator.cc:79 NCCL WARN Cuda failure 711 'peer mapping resources exhausted'",
        "too_many_peers",
    ),
    ("RuntimeError: CUDA error: no kernel image is available for execution on the device", "cuda_stack_incompatible"),
    ("h:1:2 [0] transport/nvls.cc:254 NCCL WARN Cuda failure 1 'invalid argument'", "nvls_setup_failed"),
    ("h:1:2 [1] enqueue.cc:1500 NCCL WARN Cuda failure 1 'invalid argument'", "nccl_cuda_invalid_argument"),
    ("Error: rank 27 and rank 19 both on CUDA device 53000 (PCI 53:00.0)", "several_ranks_one_gpu"),
    ("torch.distributed.elastic.rendezvous.api.RendezvousClosedError", "torchrun_rendezvous_closed"),
    ("ssh: Could not resolve hostname node-0: Name or service not known", "launcher_ssh_host_unresolved"),
    (
        # an empty address (family 0): ranks of different NCCL versions (NVIDIA/nccl#1267, confirmed there)
        "ncclSocketInit: connecting to address  with family 0 is neither AF_INET(2) nor AF_INET6(10)",
        "peer_address_unreadable",
    ),
    (
        "ncclSocketInit: connecting to address 10.0.0.2 with family 1 is neither AF_INET(2) nor AF_INET6(10)",
        "socket_interface_not_found",
    ),
    ("h:1:2 [2] NCCL INFO bootstrap.cc:270 -> 2", "bootstrap_failed"),
    (
        "RuntimeError: Gloo connectFullMesh failed with [../gloo/transport/tcp/pair.cc:144] no error",
        "gloo_connect_failed",
    ),
    ("RendezvousConnectionError: The connection to the C10d store has failed.", "store_unreachable"),
    (
        "torch.distributed.DistStoreError: wait timeout after 300000ms, keys: /default_pg/0//cuda//0",
        "rendezvous_incomplete",
    ),
    ("Libfabric error: (-12) Cannot allocate memory", "locked_memory_limit"),
    (
        "register_mr_buffers:544 NCCL WARN NET/OFI Unable to register memory (type = 2) for device 0. RC: -22",
        "libfabric_incompatible",
    ),
    ("h:1:2 [3] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'", "gdr_disabled"),
    ("DMAR: DRHD: handling fault status reg 3", "iommu_blocks_p2p"),
    (
        "h:1:2 [5] ibvwrap.c:262 NCCL WARN Call to ibv_modify_qp failed with 110 Connection timed out, on dev mlx5_1:1",
        "ib_qp_connect_failed",
    ),
    ("Not all ranks joining collective: sequence number: 12", "fr_not_all_joined"),
    (
        "h:1:2 [0] net_ib.cc:667 NCCL WARN NET/IB : collective mismatch error local size 32768 remote 1048576",
        "nccl_collective_mismatch",
    ),
    ("NCCL WARN NCCL_TIMEOUT is set. Timeout 600 seconds has been reached in ncclAllReduce", "nccl_timeout_reached"),
    (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79 GiB",
        "cuda_oom",
    ),
    ("RuntimeError: CUDA error: uncorrectable ECC error encountered", "cuda_ecc_error"),
    # NCCL's own CUDA call failing for memory (a launch or its buffers in enqueue.cc): NCCL's remedy, not a batch's
    ("h:1:2 [0] enqueue.cc:100 NCCL WARN Cuda failure 2 'out of memory'", "nccl_buffer_oom"),
    ("RuntimeError: CUDA error: out of memory", "cuda_oom"),
    ("NCCL failure all_reduce.cu:95 'unhandled cuda error'", "nccl_test_failure"),
    ("RuntimeError: ProcessGroupNCCL does not support barrier", "backend_lacks_operation"),
    ("    Watchdog caught collective operation timeout", "nccl_timeout_reached"),
    ("mpirun detected that one or more processes exited with non-zero status, thus causing", "mpirun_nonzero_exit"),
    (
        "RuntimeError: [enforce fail at gloo/transport/tcp/device.cc:127] rp != nullptr. Unable to find address "
        "for: node-7",
        "gloo_host_unresolved",
    ),
    # needles match whatever the case: NCCL 2.4 capitalizes the word the NET/IB check writes in lower case
    (
        "h:1:2 [0] init.cc:1203 NCCL WARN Mismatched collective detected, please check your collective calls at "
        "and around rank 7",
        "nccl_collective_mismatch",
    ),
    ("h:1:2 [0] NCCL INFO include/net.h:25 -> 2", "nccl_net_transport_failed"),
    ("h:1:2 [0] NCCL INFO transport/net_socket.cc:412 -> 6", "nccl_net_transport_failed"),
    ("h:1:2 [0] NCCL INFO enqueue.cc:88 -> 5", "nccl_error_return"),
    (
        "[W socket.cpp:663] [c10d] The client socket has failed to connect to [10.1.2.3]:29500 (errno: 110 - "
        "Connection timed out).",
        "store_connect_failed",
    ),
    (
        "torch.distributed.DistNetworkError: The client socket has timed out after 900s while trying to connect "
        "to (10.1.2.3, 29500).",
        "store_connect_failed",
    ),
    (
        "h:1:2 [0] nccl_net_ofi_init:1400 NCCL WARN NET/OFI OFI fi_getinfo() call failed: No data available",
        "ofi_no_provider",
    ),
    (
        "[1]<stderr>:[2021-01-01 10:00:00.000: W horovod/common/stall_inspector.cc:105] One or more tensors were "
        "submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of ranks",
        "horovod_stalled_tensors",
    ),
]


@pytest.mark.parametrize(("line", "expected"), LINES)
def test_each_class_of_line_is_claimed_by_its_row(line: str, expected: str) -> None:
    row = match_text(line)
    assert row is not None and row.sig.id == expected, (line, row and row.sig.id)


def test_benign_lines_claim_no_row() -> None:
    for line in (
        "h:1:1 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation",
        "h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read",
        "h:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
        "h:1:1 [0] NCCL INFO comm 0x55 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE",
        "h:1:1 [0] NCCL INFO init.cc:1800 -> 7",  # ncclInProgress: a non-blocking call still running
        # torch 2.0-2.1 print this on hosts without IPv6 localhost and carry on
        "[W socket.cpp:601] [c10d] The client socket has failed to connect to [localhost]:12355 (errno: 99 - "
        "Cannot assign requested address).",
    ):
        assert match_text(line) is None, line


def test_root_cause_suggestion_carries_the_signature_remedy(tmp_path: Path) -> None:
    log = (
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "train.py", line 3, in <module>\n'
        "[rank1]: RuntimeError: DataLoader worker (pid 125) is killed by signal: Bus error.\n"
    )
    top = _failures(_write(tmp_path, log))[0]
    assert top.kind == "config_error" and top.ranks == [1]
    assert "--shm-size" in top.suggestion and top.metrics["signature"] == "shm_too_small"
    assert top.metrics["confidence"] == "high" and top.metrics["reference"].startswith("https://")


@pytest.mark.subprocess
def test_scope_diagnose_signatures_lists_the_table() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "scope", "diagnose", "--signatures", "--json", "-"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)["signatures"]
    assert [r["id"] for r in rows] == [s.id for s in SIGNATURES]
    assert all(r["remedy"] and r["reference"] for r in rows)


# ---- reasoning across lines and ranks ------------------------------------------------------------

INIT = "node1:{pid}:{pid} [{dev}] NCCL INFO "


def _init_lines(dev: int, upto: str) -> list[str]:
    p = INIT.format(pid=100 + dev, dev=dev)
    lines = [p + "Bootstrap : Using eth0:10.0.0.1<0>", p + "NET/Socket : Using [0]eth0:10.0.0.1<0>"]
    if upto in ("topology", "connect"):
        lines += [
            p + f"comm 0x{dev}a rank {dev} nranks 4 cudaDev {dev} busId {dev}000 - Init START",
            p + f"Setting affinity for GPU {dev} to ff",
        ]
    if upto == "connect":
        lines += [p + f"Channel 00/0 : {dev}[{dev}] -> {(dev + 1) % 4}[{(dev + 1) % 4}] via P2P/IPC"]
    return lines


def test_init_stopped_at_the_same_step_on_every_rank_is_a_hang_in_the_next(tmp_path: Path) -> None:
    top = _failures(_corpus_log(tmp_path, "NVIDIA-nccl_257.txt"))[0]
    assert top.kind == "hang" and top.metrics["confidence"] == "low"
    assert top.metrics["details"]["phase"] == "topology" and "IOMMU" in top.suggestion
    assert top.summary.startswith("Best guess")


def test_a_rank_stopped_earlier_in_init_than_its_peers_is_named(tmp_path: Path) -> None:
    banner = "# nThread 1 nGpus 1 minBytes 8 maxBytes 128\n# Using devices\n"
    lines = [ln for dev in range(4) for ln in _init_lines(dev, "bootstrap" if dev == 2 else "connect")]
    top = _failures(_write(tmp_path, banner + "\n".join(lines) + "\n"))[0]
    assert top.kind == "hang" and top.ranks == [], "rank 2 never logged its rank number"
    assert "1 of 4 ranks never got past bootstrap" in top.summary


def _coll(dev: int, op_count: int, coll: str, count: int, dtype: int = 7) -> str:
    return (
        f"node1:{100 + dev}:{200 + dev} [{dev}] NCCL INFO {coll}: opCount {op_count:x} sendbuff 0x7f00 recvbuff "
        f"0x7f10 count {count} datatype {dtype} op 0 root 0 comm 0x{dev}a [nranks=4] stream 0x55"
    )


def test_info_collective_lines_name_the_rank_that_posted_another_call(tmp_path: Path) -> None:
    lines = [
        INIT.format(pid=100 + d, dev=d) + f"comm 0x{d}a rank {d} nranks 4 cudaDev {d} - Init COMPLETE" for d in range(4)
    ]
    for op_count in range(3):
        for d in range(4):
            count = 4096 if (op_count == 2 and d == 2) else 1024
            lines.append(_coll(d, op_count, "AllReduce", count))
    top = _failures(_write(tmp_path, "\n".join(lines) + "\n"))[0]
    assert top.kind == "collective_mismatch" and top.ranks == [2]
    assert top.metrics["details"]["op_count"] == 2 and "count 4096" in top.summary


def test_oom_on_one_rank_is_the_root_and_peers_connection_errors_its_cascade_without_timestamps(
    tmp_path: Path,
) -> None:
    log = "\n".join(
        [
            "[rank0]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer",
            "[rank2]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer",
            "[rank3]: [E ProcessGroupNCCL.cpp:475] [Rank 3] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=88, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600321 "
            "milliseconds before timing out.",
            "[rank1]: Traceback (most recent call last):",
            '[rank1]:   File "train.py", line 9, in <module>',
            "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 1 has a total "
            "capacity of 79.10 GiB of which 1.2 GiB is free.",
        ]
    )
    found = _failures(_write(tmp_path, log + "\n"))
    top = found[0]
    assert top.kind == "oom" and top.ranks == [1], top.summary
    assert top.metrics["details"]["tried_to_allocate"] == "4.00 GiB"
    assert top.metrics["cascade"]["count"] >= 3 and {0, 2, 3} <= set(top.metrics["cascade"]["ranks"])
    assert len(found) == 1, [f.summary for f in found]


def test_an_error_line_no_rule_knows_is_a_low_confidence_guess_never_healthy(tmp_path: Path) -> None:
    log = (
        "node1:10:10 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
        "node1:10:10 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation\n"
        "step 1 loss 2.31\n"
        "srun: error: node7: task 5: Exited with exit code 139\n"
        "srun: Terminating job step 4242.0\n"
    )
    found = _failures(_write(tmp_path, log))
    assert len(found) == 1
    top = found[0]
    assert top.metrics["confidence"] == "low" and top.summary.startswith("Best guess")
    assert top.evidence == ["job.log:4"]


def test_healthy_log_with_benign_warnings_stays_clean(tmp_path: Path) -> None:
    lines = [ln for dev in range(2) for ln in _init_lines(dev, "connect")]
    lines += [
        "node1:100:100 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]",
        "node1:100:300 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : client reregistration",
        "[W CudaIPCTypes.cpp:16] Producer process has been terminated before all shared CUDA tensors released.",
        "/usr/lib/python3/site-packages/torch/utils/data.py:12: UserWarning: this is deprecated",
        "node1:100:100 [0] NCCL INFO comm 0x0a rank 0 nranks 2 cudaDev 0 busId 0 - Init COMPLETE",
        "node1:101:101 [1] NCCL INFO comm 0x1a rank 1 nranks 2 cudaDev 1 busId 1000 - Init COMPLETE",
        "node1:100:300 [0] NCCL INFO [Service thread] Connection closed by localRank 0",
    ]
    assert _failures(_write(tmp_path, "\n".join(lines) + "\n")) == []


def test_watchdog_timeouts_of_different_groups_are_not_a_desync(tmp_path: Path) -> None:
    top = _failures(_corpus_log(tmp_path, "vllm-project-vllm_2770.txt"))[0]
    assert top.kind == "timeout"


def test_hardware_xid_explains_more_than_an_earlier_lone_application_xid(tmp_path: Path) -> None:
    top = _failures(_corpus_log(tmp_path, "akash-network-support_244.txt"))[0]
    assert top.kind == "hardware_fault" and top.metrics["details"]["xid"] == 94


def test_a_torch_job_whose_ranks_all_stop_in_init_without_error_hangs_there(tmp_path: Path) -> None:
    lines = [ln for dev in range(4) for ln in _init_lines(dev, "connect")]
    top = _failures(_write(tmp_path, "\n".join(lines) + "\n"))[0]
    assert top.kind == "hang" and top.metrics["details"]["phase"] == "connect"
    assert "all 4 ranks after connect" in top.summary and top.metrics["confidence"] == "low"


def test_a_snippet_of_init_lines_is_not_a_hang(tmp_path: Path) -> None:
    # two ranks that only show their bootstrap lines: nothing says they stopped there
    lines = [ln for dev in range(2) for ln in _init_lines(dev, "bootstrap")]
    assert _failures(_write(tmp_path, "\n".join(lines) + "\n")) == []


@pytest.mark.parametrize(
    "line",
    [
        "[E ProcessGroupNCCL.cpp:566] [Rank 1] Watchdog caught collective operation timeout: "
        "WorkNCCL(OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800528 milliseconds before timing out.",
        "[E ProcessGroupNCCL.cpp:566] [Rank 1] Caught collective operation timeout: WorkNCCL(OpType=BROADCAST, "
        "TensorShape=[512, 1024], Timeout(ms)=1800000) ran for 1800528 milliseconds before timing out.",
    ],
)
def test_watchdog_timeouts_of_eras_without_seqnum_are_timeouts(tmp_path: Path, line: str) -> None:
    top = _failures(_write(tmp_path, line + "\n"))[0]
    assert top.kind == "timeout" and top.ranks == [1] and top.metrics["details"]["timeout_ms"] == 1800000


def test_ranks_left_behind_in_init_are_named_when_they_logged_their_rank(tmp_path: Path) -> None:
    lines = []
    for dev in range(4):
        p = INIT.format(pid=100 + dev, dev=dev)
        lines += [p + "Bootstrap : Using eth0:10.0.0.1<0>", p + f"comm 0x{dev}a rank {dev} nranks 4 - Init START"]
        if dev not in (1, 3):
            lines += [p + f"Channel 00/0 : {dev}[{dev}] -> {(dev + 1) % 4}[{(dev + 1) % 4}] via P2P/IPC"]
    top = _failures(_write(tmp_path, "\n".join(lines) + "\n"))[0]
    assert top.kind == "hang" and top.ranks == [1, 3], top.summary
    assert "2 of 4 ranks never got past topology" in top.summary


def test_info_lines_of_one_host_without_init_lines_take_the_device_as_the_rank(tmp_path: Path) -> None:
    lines = [_coll(d, 0, "Broadcast", 53 if d else 25503912, 4 if d else 6) for d in range(4)]
    top = _failures(_write(tmp_path, "\n".join(lines) + "\n"))[0]
    assert top.kind == "collective_mismatch" and top.ranks == [0]
    assert "float16" in top.summary and "3 peers posted Broadcast count 53 int64" in top.summary


def test_nccls_hang_detector_names_the_rank_it_suspects(tmp_path: Path) -> None:
    line = (
        "host:1:1 [0] init.cc:1259 NCCL WARN Your program may be hanging, this may be caused by a collective "
        "mismatch around rank 3. Please check your collective calls at and around this rank."
    )
    top = _failures(_write(tmp_path, line + "\n"))[0]
    assert top.kind == "hang" and top.ranks == [3] and "iommu=pt" in top.suggestion


def test_a_connect_retried_once_is_normal_and_retried_on_and_on_is_a_network_fault(tmp_path: Path) -> None:
    retry = "node1:10:20 [0] NCCL INFO Call to connect returned Connection refused, retrying"
    assert _failures(_write(tmp_path, retry + "\n")) == []
    top = _failures(_write(tmp_path, "\n".join([retry] * 8) + "\n"))[0]
    assert top.kind == "network_fault" and "NCCL_SOCKET_IFNAME" in top.suggestion


def test_a_slowing_condition_does_not_outrank_the_crash_after_it(tmp_path: Path) -> None:
    log = (
        "node1:10:20 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'\n"
        "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
    )
    found = _failures(_write(tmp_path, log))
    assert [f.kind for f in found] == ["oom", "config_error"] and found[1].severity == "warning"


def test_a_benchmark_that_completed_init_and_printed_no_result_hangs_in_its_first_collective(tmp_path: Path) -> None:
    banner = "# nThread 1 nGpus 2 minBytes 8 maxBytes 128 step: 2(factor)\n# Using devices\n"
    lines = [INIT.format(pid=100 + d, dev=d) + f"comm 0x{d}a rank {d} nranks 2 - Init COMPLETE" for d in range(2)]
    header = "#       size         count      type   redop    root     time   algbw   busbw #wrong\n"
    top = _failures(_write(tmp_path, banner + "\n".join(lines) + "\n" + header))[0]
    assert top.kind == "hang" and top.metrics["details"]["phase"] == "first_collective"
    row = (
        "           8             2     float     sum      -1    20.1    0.00    0.00      0    19.5    0.00    0.00\n"
    )
    # a row, then the log ends below maxBytes with no summary: it hangs in the collective of the next size
    top = _failures(_write(tmp_path, banner + "\n".join(lines) + "\n" + header + row))[0]
    assert top.kind == "hang" and top.metrics["details"]["phase"] == "benchmark_sizes"
    assert "NCCL_P2P_DISABLE=1" in top.suggestion and "ACSCtl" in top.suggestion
    done = row + "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0.001\n"
    assert _failures(_write(tmp_path, banner + "\n".join(lines) + "\n" + header + done)) == []


def test_an_error_return_chain_alone_is_a_low_confidence_nccl_error(tmp_path: Path) -> None:
    log = (
        "h1:10:12 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1000] [send] via NET/Socket/0\n"
        "h1:10:12 [0] NCCL INFO include/net.h:25 -> 2\n"
        "h1:10:12 [0] NCCL INFO transport/net.cc:515 -> 2\n"
    )
    top = _failures(_write(tmp_path, log))[0]
    assert top.kind == "network_fault" and "NCCL_SOCKET_IFNAME" in top.suggestion


def test_an_error_return_chain_is_evidence_of_the_error_a_line_names(tmp_path: Path) -> None:
    # one host's chain printed before the other host's WARN: the WARN says what went wrong
    log = (
        "h1:10:12 [0] NCCL INFO proxy.cc:698 -> 6\n"
        "h2:20:22 [0] net_ib.cc:667 NCCL WARN NET/IB : collective mismatch error local size 32768 remote 1048576\n"
        "h2:20:22 [0] NCCL INFO transport/net.cc:1137 -> 6\n"
    )
    found = _failures(_write(tmp_path, log))
    assert [f.kind for f in found] == ["collective_mismatch"]


def _fingerprint(rank: int, seq: int, shape: str) -> str:
    return (
        f"[I ProcessGroupWrapper.cpp:562] [Rank {rank}] Running collective: CollectiveFingerPrint(SequenceNumber="
        f"{seq}, OpType=BROADCAST, TensorShape=[{shape}], TensorDtypes=Long, TensorDeviceTypes=TensorOptions())"
    )


@pytest.mark.parametrize(("world", "odd"), [(4, [1]), (2, [])])
def test_the_rank_whose_fingerprint_differs_from_the_majority_is_the_culprit(
    tmp_path: Path, world: int, odd: list[int]
) -> None:
    lines = [_fingerprint(r, 3 if r == 1 else 4, "1" if r == 1 else "73") for r in range(world)]
    lines.append(
        "RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running collective: "
        "CollectiveFingerPrint(SequenceNumber=3, OpType=BROADCAST), but Rank 0 is running collective: "
        "CollectiveFingerPrint(SequenceNumber=4, OpType=BROADCAST)."
    )
    top = _failures(_write(tmp_path, "\n".join(lines) + "\n"))[0]
    assert top.kind == "collective_mismatch" and top.ranks == odd


def test_failed_or_timed_out_alone_is_not_called_a_timeout(tmp_path: Path) -> None:
    log = (
        "[E ProcessGroupNCCL.cpp:455] Some NCCL operations have failed or timed out. Due to the asynchronous nature\n"
        "[E ProcessGroupNCCL.cpp:460] To avoid data inconsistency, we are taking the entire process down.\n"
    )
    top = _failures(_write(tmp_path, log))[0]
    assert top.kind == "nccl_error" and top.metrics["confidence"] == "low"
