"""Readings that match an NCCL line's message after its prefix (readers/nccl_prefix.py reads the prefix):
reasoning/stages.py's init narration (the bootstrap lines, the connection lines) and readers/infolines.py's
collective lines (its communicator-init reading has no real line here to be read on). Each kept its own copy of
the prefix before; those regexes stay here, verbatim, to show that on real logs read in place
(../shared/data/nccl_logs, failure_corpus and the samples) every reading is what it was."""

from __future__ import annotations

import re

from scope.analyzers.diagnose.readers import infolines
from scope.analyzers.diagnose.reasoning import stages

from tests.conftest import shared_data

# The readers before, verbatim
NCCL_BEGIN = re.compile(
    r"(?:^|[\s\]:])([\w.\-<>]*):(\d+):\d+ \[\d+\] NCCL INFO (?:Bootstrap|NET/|Using network|cudaDriverVersion)", re.M
)
NCCL_CONNECTING = re.compile(
    r"(?:^|[\s\]:])([\w.\-<>]+):(\d+):\d+ \[\d+\] NCCL INFO (?:Channel \d+|Connected all|.* via (?:P2P|SHM|NET))", re.M
)
CALL = re.compile(
    r"([\w.\-<>]+):(\d+):\d+ \[(\d+)\] NCCL INFO (\w+): opCount ([0-9a-fA-F]+) sendbuff \S+ recvbuff \S+ "
    r"count (\d+) datatype (\d+) op (\d+) root (-?\d+) comm (0x[0-9a-fA-F]+)(?: \S+)*? \[nranks=(\d+)\]"
)


def _real_texts() -> list[tuple[str, str]]:
    files = [*sorted(shared_data("nccl_logs").glob("*")), *sorted(shared_data("failure_corpus").glob("*.txt"))]
    texts = [(f.name, f.read_text(errors="replace")) for f in files]
    samples = shared_data("failure_log_samples.txt").read_text(errors="replace").split("# source:")
    return texts + [(f"sample {i}", text) for i, text in enumerate(samples)]


def _processes(found: set[tuple[str, int]]) -> set[tuple[str, str]]:
    return {(host, str(pid)) for host, pid in found}


def test_init_narration_reads_the_processes_the_old_regexes_read() -> None:
    logs = {"begin": 0, "connecting": 0}
    for name, text in _real_texts():
        tail = text[-stages.TAIL_BYTES :]
        before = {m.groups() for m in NCCL_BEGIN.finditer(tail)}
        assert _processes(stages._info_processes(tail, stages._BEGINS_INIT)) == before, name
        logs["begin"] += bool(before)
        before = {m.groups() for m in NCCL_CONNECTING.finditer(tail)}
        assert _processes(stages._info_processes(tail, stages._CONNECTING, named_host=True)) == before, name
        logs["connecting"] += bool(before)
    # real logs of each reading, so that the test cannot pass on nothing
    assert logs["begin"] >= 15 and logs["connecting"] >= 11, logs


def test_a_launcher_tag_before_the_host_is_left_out_of_the_process() -> None:
    # mpirun --tag-output: '[1,0]<stdout>:nccl-tests-worker-0:21:21 [0] NCCL INFO Bootstrap : Using eth0:...'
    text = shared_data("failure_corpus", "NVIDIA-nccl_1638.txt").read_text()
    assert stages._info_processes(text, stages._BEGINS_INIT) == {
        ("nccl-tests-worker-0", 21),
        ("nccl-tests-worker-1", 21),
    }
    assert stages._init_from_start(text)


def test_collective_calls_are_read_as_the_old_regexes_read_them() -> None:
    read = 0
    for name, text in _real_texts():
        expected = [
            (
                f"{m.group(1)}:{m.group(2)} [{m.group(3)}]",
                text.count("\n", 0, m.start()) + 1,
                m.group(4),
                int(m.group(6)),
            )
            for m in CALL.finditer(text)
            if m.group(4) not in infolines.POINT_TO_POINT
        ]
        assert [(c.who, c.line, c.coll, c.count) for c in infolines.collective_calls(text)] == expected, name
        read += len(expected)
    assert read >= 5, read


def test_a_file_name_from_grep_before_the_host_is_left_out_of_the_call() -> None:
    # 'LOG1.0.txt:learnfair062:32615:32615 [0] NCCL INFO Broadcast: opCount 0 ...': rank 0 posts another count
    text = shared_data("failure_corpus", "NVIDIA-nccl_147.txt").read_text()
    calls = infolines.collective_calls(text)
    assert {c.host for c in calls} == {"learnfair062"}
    first = calls[0]
    assert (first.who, first.line, first.coll, first.count, first.rank) == (
        "learnfair062:32615 [0]",
        7,
        "Broadcast",
        25503912,
        0,
    )
