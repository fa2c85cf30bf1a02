"""Log parsers: every prefix and format era, the 15 real failure classes, a healthy NCCL log, gloo on CPU."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from scope.analyzers.diagnose import diagnose
from scope.analyzers.diagnose.readers.lines import epoch_ns, parse_line
from scope.analyzers.diagnose.readers.scan import scan_text

from tests.conftest import shared_data

# ---- prefixes and timestamps -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "rank", "text_start", "has_time"),
    [
        ("[rank3]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 3] Watchdog", 3, "[Rank 3] Watchdog", True),
        ("[default2]:[rank2]: RuntimeError: boom", 2, "RuntimeError: boom", False),
        ("[1,7]<stdout>:host-a:25:25 [7] NCCL INFO Bootstrap", 7, "host-a:25:25 [7] NCCL INFO", False),
        ("10: torch.distributed.DistBackendError: NCCL error", 10, "torch.distributed.DistBackendError", False),
        ("[155] crow-ib:5330:5330 [3] NCCL INFO NET/IB : Using", 155, "crow-ib:5330:5330", False),
        ("[E ProcessGroupNCCL.cpp:737] [Rank 1] Watchdog caught", None, "[Rank 1] Watchdog caught", False),
        (
            "E0801 13:23:20.000000 32974 torch/distributed/elastic/multiprocessing/api.py:874] failed",
            None,
            "failed",
            True,
        ),
        (
            "[2024-05-08 08:47:31,261] torch.distributed.elastic.multiprocessing.api: [ERROR] failed",
            None,
            "torch.distributed",
            True,
        ),
        ("kern  :warn  : 2025-01-21T04:41:44,283302+00:00 NVRM: Xid (PCI:0000:38:00): 13", None, "NVRM: Xid", True),
        ("[Sun Feb 23 16:24:18 2025] NVRM: Xid (PCI:0000:9b:00): 119", None, "NVRM: Xid", True),
        ("Dec  2 11:38:47 worker4 kernel: [  219.470994] NVRM: Xid (PCI:0000:07:00): 48", None, "NVRM: Xid", True),
        ("6,3973,227996636,-;nvidia-peermem nv_get_p2p_free_callback:127 ERROR", None, "nvidia-peermem", False),
        ("[Feb 27 2025 15:10:02] [ERROR] [tid 12727] detected NVSwitch", None, "[ERROR] [tid", True),
        (  # Ray's worker prefix, then vLLM's logger (vllm-project/vllm#7896)
            "(RayWorkerWrapper pid=11305) ERROR 08-27 05:12:18 worker_base.py:382] RuntimeError: NCCL error",
            None,
            "RuntimeError: NCCL error",
            True,
        ),
        (
            "(RayWorkerVllm pid=5085, ip=10.0.0.2) [E ProcessGroupNCCL.cpp:475] [Rank 4] Watchdog",
            None,
            "[Rank 4]",
            False,
        ),
    ],
)
def test_prefixes_and_timestamps_are_peeled(raw: str, rank: int | None, text_start: str, has_time: bool) -> None:
    p = parse_line(raw, year=2025)
    if raw.startswith("("):
        assert p.pid in (11305, 5085)
    assert p.rank == rank
    assert p.text.startswith(text_start)
    assert (p.time_ns is not None) == has_time


def test_timestamps_land_on_the_same_clock() -> None:
    iso = parse_line("kern  :warn  : 2025-01-21T04:41:44,283302+00:00 x", 2025).time_ns
    assert iso == epoch_ns(2025, 1, 21, 4, 41, 44, "283302")
    glog = parse_line("[rank0]:[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] x", 2024).time_ns
    assert glog == epoch_ns(2024, 12, 6, 18, 44, 12, "715298746")
    assert parse_line("[   49.261458] NVRM: GPU at 0000:01:00.0", 2025).mono_s == pytest.approx(49.261458)
    assert parse_line("Dec  2 11:38:47 worker4 kernel: NVRM", 2025).host == "worker4"


# ---- c10d watchdog eras ----------------------------------------------------------------------------

WATCHDOG_ERAS = [
    "[E ProcessGroupNCCL.cpp:737] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=469508, "
    "OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1802212 milliseconds before timing out.",
    "[rank1]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, Timeout(ms)=600000) ran "
    "for 600020 milliseconds before timing out.",
    "[rank1]:[E1002 18:16:40.662691402 ProcessGroupNCCL.cpp:756] [Rank 1] Work WorkNCCL(SeqNum=2521, "
    "OpType=ALLREDUCE, NumelIn=160672064, NumelOut=160672064, Timeout(ms)=600000) timed out in blocking wait.",
]


@pytest.mark.parametrize("line", WATCHDOG_ERAS)
def test_watchdog_timeout_of_every_era(line: str) -> None:
    (a,) = [x for x in scan_text(line + "\n", "x.log").anomalies if x.code == "c10d_watchdog_timeout"]
    assert a.rank == 1 and a.details["op"] == "all_reduce" and a.kind == "timeout"


def test_hard_wrapped_watchdog_line_is_glued_back() -> None:
    text = (
        "[rank2]:[E513 13:25:57.714781669 ProcessGroupNCCL.cpp:616] [Rank 2] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=532339, OpType=BROADCAST, NumelIn=5164000, NumelOut=5\n"
        "164000, Timeout(ms)=1800000) ran for 1800042 milliseconds before timing out.\n"
    )
    (a,) = scan_text(text, "x.log").anomalies
    assert (a.details["seq"], a.details["numel_out"], a.rank) == (532339, 5164000, 2)


def test_pg_status_line_names_the_group_and_counters() -> None:
    line = (
        "[rank7]:[E419 10:42:28.861967180 ProcessGroupNCCL.cpp:1785] [PG ID 2 PG GUID 9 Rank 7] Exception "
        "(either an error or timeout) detected by watchdog at work: 4486, last enqueued NCCL work: 4489, "
        "last completed NCCL work: 4485.\n"
    )
    (a,) = scan_text(line, "x.log").anomalies
    assert (a.details["pg"], a.details["last_enqueued"], a.details["last_completed"], a.rank) == ("2", 4489, 4485, 7)


def test_a_rank_that_never_enqueued_the_timed_out_work_is_the_culprit(tmp_path: Path) -> None:
    lines = [
        "[rank0]:[E321 02:07:08.4 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=4, NumelOut=4, Timeout(ms)=600000) ran for 600060 "
        "milliseconds before timing out.",
        "[rank0]:[E321 02:07:08.5 ProcessGroupNCCL.cpp:1664] [PG 1 Rank 0] Exception (either an error or timeout) "
        "detected by watchdog at work: 1580, last enqueued NCCL work: 1582, last completed NCCL work: 1579.",
        "[rank3]:[E321 02:07:08.5 ProcessGroupNCCL.cpp:1664] [PG 1 Rank 3] Exception (either an error or timeout) "
        "detected by watchdog at work: 1579, last enqueued NCCL work: 1579, last completed NCCL work: 1579.",
    ]
    (tmp_path / "job.log").write_text("\n".join(lines) + "\n")
    top = diagnose(tmp_path).findings[0]
    assert top.kind == "hang" and top.ranks == [3]


# ---- the 15 real failure classes -------------------------------------------------------------------

# Finding kind each heading of failure_log_samples.txt stands for. Blocks marked "desync" in their
# source note are ranks disagreeing on the collective; an Xid 45 "caused by previous Xid N" takes the
# class of Xid N (an NVLink fault, not an application one).
HEADING_KINDS = {
    "c10d_watchdog_timeout": {"timeout"},
    "nccl_remote_error_ib": {"network_fault"},
    "c10d_heartbeat_monitor": {"hang", "timeout"},
    "nccl_info_init_topology": set(),
    "nccl_warn_ib_completion_error": {"network_fault"},
    "nccl_system_error_socket": {"network_fault"},
    "nccl_crash_signal": {"crash"},
    "cuda_oom": {"oom"},
    "torchrun_elastic_failure": {"crash"},
    "xid_79_fallen_off_bus": {"hardware_fault"},
    "xid_48_dbe_and_xid_64_retirement": {"hardware_fault"},
    "xid_13_31_32_45_109": {"crash"},
    "xid_nvlink": {"hardware_fault"},
    "xid_119_gsp_timeout": {"hardware_fault"},
    "pcie_aer": {"hardware_fault"},
}


def sample_blocks() -> list[tuple[str, str, str]]:
    """(heading class, source note, log lines) per '# source:' block of each '### GROUP:'."""
    text = shared_data("failure_log_samples.txt").read_text()
    out = []
    for group in re.split(r"^### GROUP: ", text, flags=re.M)[1:]:
        heading, body = group.split("\n", 1)
        name = heading.split()[0]
        for block in re.split(r"^# source: ", body, flags=re.M)[1:]:
            note, rest = block.split("\n", 1) if "\n" in block else (block, "")
            lines = [ln for ln in rest.splitlines() if ln.strip() and not ln.startswith("#")]
            if lines:
                out.append((name, note, "\n".join(lines) + "\n"))
    return out


def expected_kinds(name: str, note: str, lines: str) -> set[str]:
    if "desync" in note:
        return {"collective_mismatch"}
    if "caused by previous Xid" in lines:
        return {"hardware_fault"}
    if "OOM killer" in note:  # a bare SIGKILL, as benchmarks/failure_corpus.sample_cases reads it too
        return HEADING_KINDS[name] | {"oom"}
    return HEADING_KINDS[name]


def test_every_heading_is_known() -> None:
    names = {name for name, _, _ in sample_blocks()}
    assert names == set(HEADING_KINDS), "a new failure class in the samples needs an expected kind here"


def test_every_sample_group_is_classified_as_its_heading_says(tmp_path: Path) -> None:
    wrong = []
    for i, (name, note, lines) in enumerate(sample_blocks()):
        path = tmp_path / f"{i:02d}_{name}.log"
        path.write_text(lines)
        findings = [f for f in diagnose(path).findings if f.severity != "info"]
        expected = expected_kinds(name, note, lines)
        got = findings[0].kind if findings else None
        if (got not in expected) if expected else findings:
            wrong.append(f"{name} [{note[:50]}]: expected {sorted(expected) or 'no failure'}, got {got}")
    assert not wrong, "\n".join(wrong)


def test_sample_details_carry_the_class_specifics(tmp_path: Path) -> None:
    by_name: dict[str, list[str]] = {}
    for name, _, lines in sample_blocks():
        by_name.setdefault(name, []).append(lines)
    codes = {}
    for name, blocks in by_name.items():
        path = tmp_path / f"{name}.log"
        path.write_text(blocks[0])
        codes[name] = diagnose(path).findings
    assert codes["xid_79_fallen_off_bus"][0].metrics["details"]["xid"] == 79
    assert codes["xid_119_gsp_timeout"][0].metrics["details"]["xid"] == 119
    assert "drain" in codes["xid_119_gsp_timeout"][0].suggestion.lower()
    ib = codes["nccl_warn_ib_completion_error"][0]
    assert ib.metrics["details"]["ib_status"] == 12 and "NCCL_IB_GID_INDEX" in ib.suggestion
    assert "shm" in codes["nccl_crash_signal"][0].suggestion
    assert codes["c10d_heartbeat_monitor"][0].metrics["code"] == "c10d_heartbeat_monitor"


# ---- a healthy NCCL log ----------------------------------------------------------------------------


def test_healthy_aws_efa_log_is_healthy_with_16_ranks_on_2_hosts() -> None:
    report = diagnose(shared_data("nccl_logs", "aws_efa_16rank_2node_healthy.log"))
    assert [f for f in report.findings if f.severity != "info"] == []
    nccl = report.sections["nccl"]
    assert nccl["nranks"] == 16 and nccl["init_complete"] == 16 and len(nccl["hosts"]) == 2
    assert nccl["network"] == "OFI/EFA" and "NET/AWS Libfabric" in nccl["transports"]
    assert report.sections["inputs"]["ranks"] == 16 and report.sections["inputs"]["hosts"] == 2


# ---- gloo on CPU, as this machine's torch 2.13 prints it ------------------------------------------

# Captured here: 3 ranks under `torchrun --tee 3`, rank 1 sleeping through an all_reduce (pg timeout 5 s).
GLOO_HANG = (
    "\n".join(
        [
            "[default0]:[rank0]: Traceback (most recent call last):",
            '[default0]:[rank0]:   File "/tmp/diag/fault_probe.py", line 16, in <module>',
            "[default0]:[rank0]:     dist.all_reduce(t)",
            '[default0]:[rank0]:   File "/work/main/.venv/lib/python3.11/site-packages/torch/distributed/dist'
            'ributed_c10d.py", line 3252, in all_reduce',
            "[default0]:[rank0]:     work.wait()",
            "[default0]:[rank0]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbo"
            "und_buffer.cc:78] Timed out waiting 5000ms for recv operation to complete",
            "[default2]:[rank2]: Traceback (most recent call last):",
            '[default2]:[rank2]:   File "/work/main/.venv/lib/python3.11/site-packages/torch/distributed/dist'
            'ributed_c10d.py", line 3252, in all_reduce',
            "[default2]:[rank2]:     work.wait()",
            "[default2]:[rank2]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbo"
            "und_buffer.cc:129] Timed out waiting 5000ms for send operation to complete",
            "W1202 17:23:27.087000 5604 torch/distributed/elastic/multiprocessing/api.py:1028] Sending proces"
            "s 5627 closing signal SIGTERM",
            "E1202 17:23:27.284000 5604 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitco"
            "de: 1) local_rank: 0 (pid: 5626) of binary: /work/main/.venv/bin/python3",
            "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
            "============================================================",
            "Failures:",
            "[1]:",
            "  time      : 2026-12-02_17:23:27",
            "  host      : localhost",
            "  rank      : 2 (local_rank: 2)",
            "  exitcode  : 1 (pid: 5628)",
            "[2]:",
            "  time      : 2026-12-02_17:23:27",
            "  host      : localhost",
            "  rank      : 1 (local_rank: 1)",
            "  exitcode  : -15 (pid: 5627)  (SIGTERM)",
            "  traceback : Signal 15 (SIGTERM) received by PID 5627",
            "------------------------------------------------------------",
            "Root Cause (first observed failure):",
            "[0]:",
            "  time      : 2026-12-02_17:23:27",
            "  host      : localhost",
            "  rank      : 0 (local_rank: 0)",
            "  exitcode  : 1 (pid: 5626)",
            "============================================================",
        ]
    )
    + "\n"
)

GLOO_DESYNC = (
    "\n".join(
        [
            "[default1]:terminate called after throwing an instance of 'gloo::EnforceNotMet'",
            "[default1]:  what():  [enforce fail at /__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/"
            "pair.cc:456] op.preamble.length <= op.nbytes. 668 vs 8. Received data size doesn't match expecte"
            "d size. Is there a distributed collective mismatch in your code?",
            "[default2]:[rank2]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair"
            ".cc:537] Read error [127.0.0.1]:1972: Connection reset by peer. This is typically caused by a re"
            "mote worker hanging or bugs in the application.",
            "[default0]:[rank0]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair"
            ".cc:537] Read error [127.0.0.1]:1972: Connection reset by peer. This is typically caused by a re"
            "mote worker hanging or bugs in the application.",
        ]
    )
    + "\n"
)


def test_gloo_hang_names_the_silent_rank_not_torchruns_first_failure(tmp_path: Path) -> None:
    (tmp_path / "torchrun.log").write_text(GLOO_HANG)
    top = diagnose(tmp_path / "torchrun.log").findings[0]
    assert top.kind == "hang" and top.ranks == [1] and "all_reduce" in top.summary
    assert top.metrics["cascade"]["by_code"]["gloo_timeout"] == 2


def test_gloo_size_mismatch_is_a_desync_and_resets_are_its_cascade(tmp_path: Path) -> None:
    (tmp_path / "torchrun.log").write_text(GLOO_DESYNC)
    (top,) = diagnose(tmp_path / "torchrun.log").findings
    assert top.kind == "collective_mismatch" and top.ranks == [1] and "668 bytes" in top.summary
    assert top.metrics["cascade"]["by_code"]["peer_connection_lost"] == 2


def test_oom_traceback_on_one_rank_is_the_root_of_timeouts_elsewhere(tmp_path: Path) -> None:
    rank3 = (
        "[rank3]: Traceback (most recent call last):\n"
        '[rank3]:   File "train.py", line 42, in step\n'
        "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total "
        "capacity of 79.11 GiB of which 1.2 GiB is free.\n"
    )
    (tmp_path / "rank3.log").write_text(rank3)
    (tmp_path / "rank0.log").write_text(WATCHDOG_ERAS[1].replace("rank1", "rank0").replace("Rank 1", "Rank 0") + "\n")
    report = diagnose(tmp_path)
    (top,) = report.findings
    assert top.kind == "oom" and top.ranks == [3] and "2.00 GiB" in top.summary
    assert top.metrics["cascade"]["ranks"] == [0] and "expandable_segments" in top.suggestion


def test_a_warning_does_not_swallow_the_timeouts_it_did_not_cause(tmp_path: Path) -> None:
    (tmp_path / "kmsg.log").write_text(
        "6,3973,227996636,-;nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context\n"
    )
    (tmp_path / "rank1.log").write_text(WATCHDOG_ERAS[1] + "\n")
    found = diagnose(tmp_path).findings
    assert [f.kind for f in found] == ["timeout", "network_fault"]
    assert found[0].severity == "critical" and found[1].severity == "warning"


# ---- stacks and NaN --------------------------------------------------------------------------------

PY_SPY = """Process 4242: python train.py
Python v3.11.7 (/usr/bin/python3.11)

Thread 4242 (idle): "MainThread"
    {top} ({file}:{line})
    train_step (train.py:42)
    <module> (train.py:60)
Thread 4300 (idle): "Thread-1"
    wait (threading.py:320)
"""
FAULTHANDLER = """Thread 0x00007f1c8d7fe700 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 320 in wait

Current thread 0x00007f1c9b4c0740 (most recent call first):
  File "/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", line 2050 in all_reduce
  File "train.py", line 42 in train_step
"""


def test_stacks_name_the_rank_outside_the_collective(tmp_path: Path) -> None:
    for rank in range(4):
        folder = tmp_path / "ranks" / str(rank) / "stacks"
        folder.mkdir(parents=True)
        if rank == 2:  # py-spy: busy reading data
            text = PY_SPY.format(top="read", file="data/loader.py", line=77)
        elif rank == 1:
            text = PY_SPY.format(top="all_reduce", file="torch/distributed/distributed_c10d.py", line=2050)
        else:
            text = FAULTHANDLER
        (folder / "dump.txt").write_text(text)
    top = diagnose(tmp_path).findings[0]
    assert top.kind == "hang" and top.ranks == [2]
    assert "data/loader.py:77 in read" in top.summary


@pytest.mark.parametrize(
    "line",
    [
        "[rank0]: RuntimeError: Function 'MulBackward0' returned nan values in its 0th output.",
        "[rank0]: FloatingPointError: Loss is inf at step 1200",
        "step 1200 | loss: nan | grad_norm: inf",
    ],
)
def test_nan_and_inf_are_recognised(line: str) -> None:
    codes = {a.code for a in scan_text(line + "\n", "train.log").anomalies}
    assert codes == {"nan_inf"}
