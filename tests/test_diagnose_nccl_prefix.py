"""One reader of NCCL's line prefix 'host:pid:tid [dev] NCCL INFO|WARN ...' (readers/nccl_prefix.py), read on real
lines in place: ../shared/data/nccl_logs, ../shared/data/failure_corpus, and the threads of tests/data.

Three regexes read it before, each accepting a different part: lines.py's (the start of a message whose launcher
prefixes are peeled, any level, a host), knowledge/stop_causes.py's (a line's start, INFO or WARN with no source
location, any non-blank run as the host) and reasoning/shared_gpu.py's (text before the host, a blank host,
INFO only). They stay here, as they were, to show that every line one of them took is still read, and alike."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from scope.analyzers.diagnose.readers.lines import parse_line
from scope.analyzers.diagnose.readers.nccl_prefix import NcclPrefix, nccl_lines, read_prefix
from scope.analyzers.diagnose.reasoning.shared_gpu import workers_on_one_gpu
from scope.analyzers.diagnose.reasoning.stop_causes import one_gpu_per_host

from tests.conftest import shared_data

THREADS = Path(__file__).parent / "data" / "diagnose_threads"

# The three readers before this one, verbatim
LINES_PY = re.compile(r"([\w.\-<>]+):(\d+):(\d+) \[(\d+)\] ")
STOP_CAUSES = re.compile(r"^(\S+):\d+:\d+ \[(\d+)\] NCCL (?:INFO|WARN)", re.M)
SHARED_GPU = re.compile(r"(?:^|[\s\]:])([\w.\-<>]*):(\d+):\d+ \[(\d+)\] NCCL INFO ", re.M)


def _real_lines() -> list[tuple[str, str]]:
    files = [*sorted(shared_data("nccl_logs").glob("*")), *sorted(shared_data("failure_corpus").glob("*.txt"))]
    files.append(THREADS / "pytorch_129385_two_workers_one_gpu.log")
    return [(f.name, line) for f in files for line in f.read_text(errors="replace").split("\n")]


def _line(path: Path, needle: str) -> str:
    return next(line for line in path.read_text().split("\n") if needle in line)


def test_every_line_one_of_the_three_old_readers_took_is_read_alike() -> None:
    took = {"lines.py": 0, "stop_causes": 0, "shared_gpu": 0}
    for name, raw in _real_lines():
        message = parse_line(raw, 2024).text
        m = LINES_PY.match(message)
        if m:
            took["lines.py"] += 1
            got = read_prefix(message)
            assert got is not None, (name, raw)
            assert (got.host, got.pid, got.device) == (m.group(1), int(m.group(2)), int(m.group(4))), (name, raw)
        m = STOP_CAUSES.search(raw)
        if m:
            took["stop_causes"] += 1
            got = read_prefix(raw)
            # its host was any non-blank run: a launcher's tag glued before the host came with it
            assert got is not None and got.level in ("INFO", "WARN"), (name, raw)
            assert got.host and m.group(1).endswith(got.host) and got.device == int(m.group(2)), (name, raw)
        m = SHARED_GPU.search(raw)
        if m:
            took["shared_gpu"] += 1
            got = read_prefix(raw)
            assert got is not None and got.level == "INFO", (name, raw)
            assert (got.host, got.pid, got.device) == (m.group(1), int(m.group(2)), int(m.group(3))), (name, raw)
    # real data of each shape, so that the test cannot pass on nothing
    assert took["lines.py"] > 200 and took["stop_causes"] > 200 and took["shared_gpu"] > 500, took


def test_the_union_reads_lines_none_or_only_some_of_the_old_readers_took() -> None:
    corpus = shared_data("failure_corpus")
    # WARN with its source location, a launcher rank tag before the host (srun --label): stop_causes missed both
    got = read_prefix(_line(corpus / "NVIDIA-nccl_1176.txt", "bootstrap.cc:77 NCCL WARN"))
    assert got is not None
    assert (got.host, got.device, got.level, got.source) == ("compute-st-p4de24xlarge-2", 4, "WARN", "bootstrap.cc:77")
    assert got.message.startswith("Message truncated : received 256 bytes")
    # WARN without a source location (NCCL's CUDA-failure form): shared_gpu took only INFO
    got = read_prefix(_line(corpus / "pytorch-pytorch_152077.txt", "NCCL WARN Cuda failure"))
    assert got is not None and (got.host, got.level, got.source) == ("4d1a2ae696c8", "WARN", "")
    assert got.message == "Cuda failure 'named symbol not found'"
    # NCCL <= 2.3's 'file:line WARN' without the NCCL token
    got = read_prefix(_line(corpus / "NVIDIA-nccl-tests_14.txt", "ibvwrap.cu:61 WARN"))
    assert got is not None and (got.level, got.source) == ("WARN", "misc/ibvwrap.cu:61")
    # a net plugin's function:line, after a timestamp
    got = read_prefix(_line(corpus / "aws-aws-ofi-nccl_1020.txt", "fi_getinfo() call failed"))
    assert got is not None and (got.host, got.level) == ("ip-172-31-3-90", "WARN")
    assert got.source == "nccl_net_ofi_rdma_init:7978" and got.message.startswith("NET/OFI OFI fi_getinfo()")
    # markdown glued before the host; grep's file name before it
    got = read_prefix(_line(corpus / "NVIDIA-nccl_268.txt", "**hvd1:"))
    assert got is not None and (got.host, got.pid, got.tid, got.device) == ("hvd1", 2918, 3333, 0)
    got = read_prefix(_line(corpus / "NVIDIA-nccl_147.txt", "LOG1.3.txt:"))
    assert got is not None and (got.host, got.device, got.level) == ("learnfair062", 3, "INFO")
    assert got.message.startswith("Broadcast: opCount 0")
    # Open MPI's tag before the host
    got = read_prefix(_line(shared_data("nccl_logs", "aws_efa_16rank_2node_healthy.log"), "NCCL INFO Bootstrap"))
    assert got is not None and got.host == "nccl-tests-efa-16-worker-0" and got.level == "INFO"
    # a host the poster blanked out
    got = read_prefix(_line(THREADS / "pytorch_129385_two_workers_one_gpu.log", "NCCL INFO Bootstrap"))
    assert got == NcclPrefix("", 4171735, 4171735, 0, "INFO", "Bootstrap : Using enp216s0np0:10.22.1.28<0>")


def test_a_prefix_without_a_level_counts_only_at_the_start_of_a_line() -> None:
    # lines.py's reading: a wrapped WARN's prefix with its message cut ('gpu2-ru7:2142:2554 [0] include')
    got = read_prefix(_line(shared_data("failure_corpus", "NVIDIA-nccl_290.txt"), "gpu2-ru7:2142:2554 [0] include"))
    assert got is not None and (got.host, got.level, got.message) == ("gpu2-ru7", "", "include")
    # mid-line, a clock then a rank tag is no NCCL prefix; a real one later on the line still is
    assert read_prefix("started at 12:34:56 [0] loading data") is None
    got = read_prefix("at 12:34:56 [0] node-1:77:78 [3] NCCL INFO Init START")
    assert got is not None and (got.host, got.device, got.message) == ("node-1", 3, "Init START")
    assert read_prefix("host:1:2 [0] INFO not NCCL's").level == ""  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "line",
    [
        "2024-05-01 10:31:00 [1] WARN [Rank 1] Watchdog caught collective operation timeout",
        "Epoch 1 12:34:56 [0] INFO step 100 loss 2.31",
        "[2024-05-01 10:31:00] 10:31:00 [3] WARN slow step",
    ],
)
def test_a_clock_then_a_rank_tag_then_another_loggers_level_is_no_nccl_prefix(line: str) -> None:
    # a bare INFO / WARN (no NCCL word, no source file) is some other logger's level: mid-line it was read as
    # host '10', pid 31, device 1
    assert read_prefix(line) is None
    assert list(nccl_lines(line)) == []


@pytest.mark.parametrize(
    "name", ["NVIDIA-nccl_1176.txt", "NVIDIA-nccl_147.txt", "horovod_3929.txt", "NVIDIA-Fuser_3055.txt"]
)
def test_a_whole_logs_lines_come_with_their_line_numbers(name: str) -> None:
    text = shared_data("failure_corpus", name).read_text()
    by_line = [(n, p) for n, line in enumerate(text.split("\n"), 1) if (p := read_prefix(line))]
    assert by_line and list(nccl_lines(text)) == by_line


def test_one_host_whose_lines_carry_a_file_name_has_several_gpus() -> None:
    # NVIDIA/nccl#147: 'LOG1.<rank>.txt:learnfair062:...' - stop_causes read six hosts with one GPU each
    text = shared_data("failure_corpus", "NVIDIA-nccl_147.txt").read_text()
    assert {p.host for _, p in nccl_lines(text)} == {"learnfair062"}
    assert not one_gpu_per_host(text)
    # NVIDIA/nccl#1176: two nodes, each line on its one device, behind srun's '1: ' (stop_causes read none)
    assert one_gpu_per_host(shared_data("failure_corpus", "NVIDIA-nccl_1176.txt").read_text())


def test_two_workers_on_one_gpu_read_through_a_blanked_host() -> None:
    # pytorch/pytorch#129385: both workers' lines on [0], host blanked out (':4171735:4171735 [0]')
    found = workers_on_one_gpu((THREADS / "pytorch_129385_two_workers_one_gpu.log").read_text(), "job.log")
    assert found is not None and "pids 4171735, 4171736" in found.message and "[0]" in found.message
