"""Orchestrators' and emitters' words for a failure (analyzers/diagnose/: knowledge/signatures.py rows,
knowledge/exit_codes.py, reasoning/interfaces.py): each line written as the program prints it (format strings
from Ray, SLURM, Kubernetes, Horovod, NCCL, aws-ofi-nccl and nccl-tests sources), and the real corpus case
where one exists."""

from __future__ import annotations

from pathlib import Path

import pytest
from scope.analyzers.diagnose import diagnose

from benchmarks.failure_corpus import strip_header
from scope.finding import FAILURE_KINDS
from tests.conftest import shared_data


def _top(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]
    (tmp_path / "job.log").write_text(text)
    found = [f for f in diagnose(tmp_path).findings if f.kind in FAILURE_KINDS and f.severity != "info"]
    return found[0] if found else None


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        (
            "(raylet) node_manager.cc:3007: 2 Workers (tasks / actors) killed due to memory pressure (OOM), 0 Workers "
            "crashed due to other reasons at node (ID: abc, IP: 10.0.0.2) over the last time period.",
            "oom",
        ),
        ("ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.", "oom"),
        (
            "slurmstepd: error: Detected 1 oom_kill event in StepId=123.0. Some of the step tasks have been OOM "
            "Killed.",
            "oom",
        ),
        ("srun: error: node17: task 3: Out Of Memory", "oom"),
        ("slurmstepd: error: *** JOB 4242 ON node03 CANCELLED AT 2025-01-02T03:04:05 DUE TO TIME LIMIT ***", "timeout"),
        (
            "slurmstepd: error: *** JOB 4242 ON node03 CANCELLED AT 2025-01-02T03:04:05 DUE TO NODE FAILURE ***",
            "hardware_fault",
        ),
        # srun's SIGKILL with no memory evidence: srun tears steps down too (knowledge/kill_senders.py)
        ("srun: error: node17: task 5: Killed", "crash"),
        ("      Reason:       OOMKilled", "oom"),
        ("  Warning  Evicted  12m  kubelet  The node was low on resource: memory.", "oom"),
        (
            "worker-1:946:988 [0] transport/net_ib.cc:839 NCCL WARN NET/IB : Got completion with error 12, opcode 1, "
            "len 0, vendor err 129",
            "network_fault",
        ),
        (
            "[1,13]<stdout>:w-1:35:89 [5] ofi_process_cq:1039 NCCL WARN NET/OFI Request 0x7fbb944701b8 completed with "
            "error. RC: 20. Error: unknown error.",
            "network_fault",
        ),
        (" Out of bounds values : 2 FAILED", "nccl_error"),
        # an empty peer address (family 0) is a bootstrap exchange read differently: NCCL versions differ
        ("ncclSocketInit: connecting to address  with family 0 is neither AF_INET(2) nor AF_INET6(10)", "config_error"),
        # NCCL 2.4 wording (NVIDIA/nccl#268); NCCL PR #605: ranks disagree on sizes or NCCL_PROTO / NCCL_ALGO
        (
            "hvd1:2918:3333 [0] external/nccl_archive/src/transport/net_socket.cc:200 NCCL WARN NET/Socket : message "
            "truncated : receiving 696320 bytes instead of 32768",
            "collective_mismatch",
        ),
        ("h:4766:4780 [0] NCCL INFO ncclMaxSharedMem 82240 exceeds device/fn maxSharedMem 79856", "nccl_error"),
        ("ACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-", "config_error"),
    ],
)
def test_a_message_class_is_its_cause(tmp_path: Path, line: str, kind: str) -> None:
    top = _top(tmp_path, line + "\n")
    assert top is not None and top.kind == kind, (line, top)


def test_slurm_task_lists_name_every_task(tmp_path: Path) -> None:
    top = _top(tmp_path, "srun: error: node17: tasks 4-6,9: Out Of Memory\n")
    assert top.kind == "oom" and top.ranks == [4, 5, 6, 9]


def test_healthy_words_are_not_orchestrator_failures(tmp_path: Path) -> None:
    ok = (
        "ACSCtl:\tSrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-\n"
        "# Out of bounds values : 0 OK\n"
        "srun: job 4242 queued and waiting for resources\n"
    )
    assert _top(tmp_path, ok) is None


def test_horovod_ready_ranks_name_the_ranks_that_are_not_ready(tmp_path: Path) -> None:
    top = _top(tmp_path, "Stalled ops:\nHorovodAllreduce_grad_0 [ready ranks: 1, 3]\n")
    assert top.kind == "hang" and top.ranks == [0, 2]


def test_nccl_tests_exit_status_is_the_benchmarks_result_code(tmp_path: Path) -> None:
    _, log = strip_header(shared_data("failure_corpus", "NVIDIA-nccl_241.txt").read_text())
    top = _top(tmp_path, log)
    assert top.kind == "nccl_error" and top.ranks == [8] and "testNcclError" in top.summary


def test_an_init_internal_error_with_a_socket_ifname_set_blames_the_setting(tmp_path: Path) -> None:
    _, log = strip_header(shared_data("failure_corpus", "NVIDIA-nccl-tests_219.txt").read_text())
    top = _top(tmp_path, log)
    assert top.kind == "config_error" and "NCCL_SOCKET_IFNAME" in top.suggestion
    # the same failure without the setting stays an NCCL error
    assert _top(tmp_path, log.replace("-x NCCL_SOCKET_IFNAME=enp6s0 ", "")).kind == "nccl_error"


@pytest.mark.parametrize(
    ("log", "kind", "ranks", "words"),
    [
        (
            "[2024-01-01 10:00:00,000] [ERROR] [launch.py:325:sigkill_handler] ['/usr/bin/python', '-u', 'train.py', "
            "'--local_rank=3'] exits with return code = -9\n",
            "oom",  # SIGKILL: the OOM killer's (knowledge/signals.py)
            [3],
            "OOM",
        ),
        (
            "mpirun noticed that process rank 5 with PID 0 on node node2 exited on signal 9 (Killed).\n",
            "oom",
            [5],
            "",
        ),
        ("Exception: Process 3 exit with status code 137.\n", "oom", [], "OOM"),
        (
            "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1269, invalid usage, "
            "NCCL version 2.14.3\nncclInvalidUsage: This usually reflects invalid usage of NCCL library.\nLast error:\n"
            "Mismatched NCCL version detected : rank 0 version 21805 rank 4 version 21403\n",
            "config_error",
            [],
            "one NCCL version",
        ),
    ],
)
def test_launchers_exit_words_and_last_error_details(
    tmp_path: Path, log: str, kind: str, ranks: list, words: str
) -> None:
    top = _top(tmp_path, log)
    assert top is not None and top.kind == kind and top.ranks == ranks, top
    assert words in top.suggestion


def test_a_slurm_cancel_without_a_reason_says_how_to_ask_slurm_why(tmp_path: Path) -> None:
    log = (
        "slurmstepd: error: *** STEP 6053.0 ON node020 CANCELLED AT 2024-04-23T12:18:08 ***\n"
        "srun: error: node020: task 0: Terminated\n"
    )
    top = _top(tmp_path, log)
    assert top.kind == "crash" and "sacct" in top.suggestion
    assert top.summary.startswith("Best guess: ") and "no known signature" not in top.summary
