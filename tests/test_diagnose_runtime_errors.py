"""The program's own errors around the communication stack (knowledge/runtime_errors.py): each class, written
here in the format its source prints, under the prefixes real logs carry (none, `[rankN]:`, `[default0]:`,
`N: `, a timestamp, ANSI colour, CRLF), gets its kind and a remedy that names the fix users apply, quoting
what the line states."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from scope.analyzers.diagnose import diagnose
from scope.analyzers.diagnose.knowledge.signatures import SIGNATURES
from scope.analyzers.diagnose.readers.signature_scan import fill_remedy

from scope.finding import FAILURE_KINDS

# (name, log, expected kind, words the remedy must contain)
CASES = [
    (
        "store_based_barrier",
        "RuntimeError: Timed out initializing process group in store based barrier on rank: 0, for key: "
        "store_based_barrier_key:1 (world_size=16, worker_count=8, timeout=0:30:00)\n",
        "missing_rank",
        ("counted 8 check-ins for world_size=16", "--nproc_per_node", "mp.spawn"),
    ),
    (
        "ddp_unused",
        "RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one. "
        "This error indicates that your module has parameters that were not used in producing loss.\n"
        "Parameter indices which did not receive grad for rank 0: 12 13\n",
        "crash",
        ("find_unused_parameters=True",),
    ),
    (
        "ddp_ready_twice",
        "RuntimeError: Expected to mark a variable ready only once. This error is caused by one of the following "
        "reasons: 1) Use of a module parameter outside the `forward` function.\n",
        "crash",
        ("use_reentrant=False", "static_graph=True"),
    ),
    (
        "allgather_sizes",
        "RuntimeError: output tensor size must be equal to world_size times input tensor size\n",
        "collective_mismatch",
        ("world_size x the input",),
    ),
    (
        "dataloader_killed",
        "RuntimeError: DataLoader worker (pid 2811) is killed by signal: Killed. \n",
        "oom",
        ("num_workers",),
    ),
    ("open_files", "OSError: [Errno 24] Too many open files: '/data/shard_0001.bin'\n", "config_error", ("ulimit -n",)),
    ("ancdata", "RuntimeError: received 0 items of ancdata\n", "config_error", ("set_sharing_strategy",)),
    (
        "io_error",
        "RuntimeError: write(): fd 29 failed with Input/output error\n",
        "config_error",
        ("df -h", "quota"),
    ),
    (
        "driver_too_old",
        "RuntimeError: The NVIDIA driver on your system is too old (found version 10020). Please update your GPU "
        "driver.\n",
        "config_error",
        ("driver (10020)",),
    ),
    (
        "devices_busy",
        "RuntimeError: CUDA error: all CUDA-capable devices are busy or unavailable\n",
        "config_error",
        ("set_device(local_rank)", "nvidia-smi -c DEFAULT"),
    ),
    (
        "device_assert",
        "/w/aten/src/ATen/native/cuda/Indexing.cu:1141: indexSelectLargeIndex: block: [194,0,0], thread: [96,0,0] "
        "Assertion `srcIndex < srcSelectDimSize` failed.\nRuntimeError: CUDA error: device-side assert triggered\n",
        "crash",
        ("CUDA_LAUNCH_BLOCKING=1", "srcIndex < srcSelectDimSize"),
    ),
    (
        "illegal_address",
        "RuntimeError: CUDA error: an illegal memory access was encountered\n",
        "crash",
        ("compute-sanitizer",),
    ),
    (
        "cublas_alloc",
        "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`\n",
        "oom",
        ("set_device(local_rank)",),
    ),
    ("cudnn_init", "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED\n", "config_error", ("libcudnn",)),
    (
        "sigterm_to_launcher",
        "torch.distributed.elastic.multiprocessing.api.SignalException: Process 4242 got signal: 15\n",
        "crash",
        ("sacct", "--requeue"),
    ),
    (
        "sighup_to_launcher",
        "torch.distributed.elastic.multiprocessing.api.SignalException: Process 4242 got signal: 1\n",
        "crash",
        ("nohup", "tmux"),
    ),
    (
        "sighup_glog",
        "W0920 09:10:41.194000 84933 torch/distributed/elastic/agent/server/api.py:719] Received 1 death signal, "
        "shutting down workers\nW0920 09:10:41.195000 84933 torch/distributed/elastic/multiprocessing/api.py:900] "
        "Sending process 85005 closing signal SIGHUP\n",
        "crash",
        ("disown",),
    ),
    (
        "monitored_barrier",
        "RuntimeError: [Rank 0]: Ranks 1, 3 failed to pass monitoredBarrier in 30000 ms\n",
        "missing_rank",
        ("30000 ms", "wait_all_ranks=True"),
    ),
    ("socket_timeout", "RuntimeError: Socket Timeout\n", "missing_rank", ("MASTER_ADDR",)),
    ("no_nccl", "RuntimeError: Distributed package doesn't have NCCL built in\n", "config_error", ('"gloo"',)),
    (
        "abi",
        "ImportError: /site-packages/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined symbol: "
        "_ZN3c104cuda9SetDeviceEi\n",
        "config_error",
        ("--no-build-isolation",),
    ),
    (
        "mpi_abort",
        "MPI_ABORT was invoked on rank 3 in communicator MPI_COMM_WORLD\nwith errorcode 1.\n",
        "crash",
        ("rank 3's own output",),
    ),
    (
        "cublas_exec",
        "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasGemmEx( handle, opa, opb)`\n",
        "crash",
        ("CUDA_LAUNCH_BLOCKING=1",),
    ),
]

# How real logs wrap a line: launcher and rank prefixes, timestamps, colour, Windows line ends.
SHAPES = {
    "bare": lambda line: line,
    "rank": lambda line: f"[rank3]:{line}",
    "default": lambda line: f"[default0]:{line}",
    "numbered": lambda line: f"3: {line}",
    "stamped": lambda line: f"2024-05-01 10:00:00,123 - ERROR - {line}",
    "ansi_crlf": lambda line: f"\x1b[31m{line}\x1b[0m",
}


def _top(tmp_path: Path, text: str):
    (tmp_path / "job.log").write_bytes(text.encode())
    failures = [f for f in diagnose(tmp_path).findings if f.kind in FAILURE_KINDS and f.severity != "info"]
    assert failures, "no failure finding"
    return failures[0]


@pytest.mark.parametrize(("name", "log", "kind", "words"), CASES, ids=[c[0] for c in CASES])
def test_each_runtime_error_class_gets_its_kind_and_its_fix(
    tmp_path: Path, name: str, log: str, kind: str, words: tuple[str, ...]
) -> None:
    top = _top(tmp_path, log)
    assert top.kind == kind, (name, top.summary)
    for word in words:
        assert word in (top.suggestion or ""), (name, top.suggestion)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_class_is_read_under_every_line_shape(tmp_path: Path, shape: str) -> None:
    wrap = SHAPES[shape]
    end = "\r\n" if shape == "ansi_crlf" else "\n"
    for name, log, kind, words in CASES[:6]:
        text = end.join(wrap(line) for line in log.splitlines()) + end
        case = tmp_path / name
        case.mkdir()
        top = _top(case, text)
        assert top.kind == kind, (shape, name, top.summary)
        assert words[0] in (top.suggestion or ""), (shape, name, top.suggestion)


def test_a_remedy_quotes_what_the_line_states_and_falls_back_where_it_states_nothing() -> None:
    template = "Only {joined|some} of {world|the} ranks arrived; the op{op| } failed."
    assert fill_remedy(template, {"joined": 7, "world": "8", "op": "ALLREDUCE"}) == (
        "Only 7 of 8 ranks arrived; the op (ALLREDUCE) failed."
    )
    assert fill_remedy(template, {}) == "Only some of the ranks arrived; the op failed."


def test_an_nccl_failure_no_setting_explains_names_the_release_the_log_runs(tmp_path: Path) -> None:
    top = _top(
        tmp_path,
        "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1269, internal error, "
        "NCCL version 2.19.3\n",
    )
    assert "NCCL 2.19.3" in top.suggestion and "newer NCCL release" in top.suggestion


def test_a_port_in_use_quotes_the_port_and_each_launchers_flag(tmp_path: Path) -> None:
    top = _top(
        tmp_path,
        "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. "
        "port: 29512, useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use\n",
    )
    assert top.kind == "config_error"
    assert "Port 29512" in top.suggestion and "--main_process_port" in top.suggestion


def test_a_launcher_stopped_after_the_jobs_own_error_is_not_the_cause(tmp_path: Path) -> None:
    top = _top(
        tmp_path,
        "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
        "torch.distributed.elastic.multiprocessing.api.SignalException: Process 4242 got signal: 15\n",
    )
    assert top.kind == "oom"


def test_no_row_names_a_field_the_anomaly_itself_carries() -> None:
    reserved = {"rank", "host", "severity", "lineno", "code", "kind", "level", "message"}
    for row in SIGNATURES:
        names = set(re.compile(row.fields_re).groupindex) if row.fields_re else set()
        assert not names & reserved, (row.id, names & reserved)


def test_an_ib_completion_status_named_by_newer_nccl_in_a_last_error_detail_is_read(tmp_path: Path) -> None:
    top = _top(
        tmp_path,
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, remote "
        "process exited or there was a network error, NCCL version 2.27.3\n"
        "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.\n"
        "Last error:\n"
        "NET/IB: Got completion from peer 10.0.0.5<51234> with status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_SEND(0) "
        "reqSize=0 vendor_err=129 req_type=Send localGid ::ffff:10.0.0.4 remoteGid fe80::a00:5 hca mlx5_2\n",
    )
    assert top.kind == "network_fault" and "status 12" in top.summary
    assert not top.summary.startswith("Best guess")
    assert "NCCL_IB_GID_INDEX to the same RoCEv2 index" in top.suggestion


def test_a_sharp_plugin_that_cannot_start_names_collnet_off(tmp_path: Path) -> None:
    top = _top(
        tmp_path,
        "ib-vm-52:1047884:1048148 [7] sharp_plugin.c:320 NCCL WARN NET/IB : SHARP coll init error: Cannot create "
        "SHARP job(-11)\n",
    )
    assert top.kind == "config_error" and "NCCL_COLLNET_ENABLE=0" in top.suggestion
    healthy = tmp_path / "fallback"
    healthy.mkdir()
    (healthy / "job.log").write_text(
        "node:1:2 [0] transport.cc:323 NCCL WARN Cannot initialize CollNet, using point-to-point network instead\n"
    )
    found = [f for f in diagnose(healthy).findings if f.kind in FAILURE_KINDS and f.severity != "info"]
    assert not any(f.metrics.get("signature") == "collnet_sharp_unavailable" for f in found)  # NCCL recovers


def test_the_row_builder_fills_the_common_defaults_and_keeps_what_a_row_names() -> None:
    from scope.analyzers.diagnose.knowledge.signature_row import CAUSES, KIND_OF_CAUSE, Signature, row

    common = {"era": "e", "meaning": "m", "remedy": "r", "reference": "ref"}
    bare = row("a", "needle", r"pattern", cause="configuration", **common)
    assert bare == Signature("a", ("needle",), ("pattern",), kind="config_error", cause="configuration", **common)
    named = row("b", ("x", "y"), ("p", "q"), cause="configuration", kind="missing_rank", confidence="medium", **common)
    assert (named.needles, named.patterns, named.kind, named.confidence) == (
        ("x", "y"),
        ("p", "q"),
        "missing_rank",
        "medium",
    )
    assert set(KIND_OF_CAUSE) == set(CAUSES)  # every cause has a default kind
