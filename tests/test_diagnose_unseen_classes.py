"""Classes that real logs never seen before exposed (the third held-out set of issue 40), each on a short real
excerpt (the thread's URL beside it) or on lines written from the emitting program's source.
"""

from __future__ import annotations

from pathlib import Path

from scope.analyzers.diagnose import diagnose
from scope.analyzers.diagnose.reasoning.stages import where_it_stopped

from scope.finding import FAILURE_KINDS


def _failures(tmp_path: Path, log: str) -> list:
    (tmp_path / "job.log").write_text(log)
    return [f for f in diagnose(tmp_path).findings if f.kind in FAILURE_KINDS and f.severity != "info"]


# https://github.com/NVIDIA/nccl/issues/259: an nccl-tests run quoted as its init chatter, a cut, and the test's
# own summary line (the test passed; the INFO / WARN lines are NCCL falling back to sockets).
NCCL_TESTS_CUT_THEN_SUMMARY = """\
# nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 validation: 1
#
# Using devices
#   Rank  0 Pid  12877 on h0913n-ubuntu device  0 [0x0e] GeForce GTX 1080 Ti
#   Rank  1 Pid  12877 on h0913n-ubuntu device  1 [0x0f] GeForce GTX 1080 Ti
h0913n-ubuntu:12877:12877 [0] NCCL INFO Bootstrap : Using [0]enp0s31f6:192.168.97.149<0>
h0913n-ubuntu:12877:12877 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so).
h0913n-ubuntu:12877:12877 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]
h0913n-ubuntu:12877:12877 [0] NCCL INFO NET/Socket : Using [0]enp0s31f6:192.168.97.149<0>
NCCL version 2.4.8+cuda10.1
h0913n-ubuntu:12877:12877 [1] NCCL INFO nranks 2
h0913n-ubuntu:12877:12877 [0] NCCL INFO Setting affinity for GPU 0 to 03
h0913n-ubuntu:12877:12877 [1] NCCL INFO Setting affinity for GPU 1 to 03
[... cut ...]
# Out of bounds values : 0 OK
"""


def test_a_programs_own_completion_summary_after_a_cut_is_a_clean_end(tmp_path: Path) -> None:
    stop = where_it_stopped(NCCL_TESTS_CUT_THEN_SUMMARY)
    assert stop is not None and stop.stage == "exit" and stop.clean
    assert _failures(tmp_path, NCCL_TESTS_CUT_THEN_SUMMARY) == []


def test_init_lines_before_a_cut_with_more_log_after_it_are_no_init_stall(tmp_path: Path) -> None:
    # the same init lines, then a cut and a line of the job that is no marker: lines were left out, the run
    # did not stop in init; without the cut the same log is an init stall
    body = NCCL_TESTS_CUT_THEN_SUMMARY.rsplit("[... cut ...]", 1)[0]
    assert _failures(tmp_path, body + "[... cut ...]\nall done\n") == []
    stalled = _failures(tmp_path, body)
    assert stalled and stalled[0].kind == "hang"


# https://github.com/google/nccl-fastsocket/issues/4: the FastSocket net plugin's WARNs (net_fastsocket.cc) in a
# job that runs ("The code runs despite the warning"); every connection ends 'Connected' / 'Accepted'.
FASTSOCKET_RETRIES = """\
full-debug2-test-1:4024:4048 [0] net_fastsocket.cc:765 NCCL WARN Cannot get incoming CPU.
full-debug2-test-0:4300:4325 [0] net_fastsocket.cc:785 NCCL WARN Maximum retry reached for accept 3.
full-debug2-test-1:4024:4055 [0] net_fastsocket.cc:674 NCCL WARN Maximum retry reached for connect 3.
full-debug2-test-0:4300:4325 [0] NCCL INFO accept qid: 3, rqid: 3
full-debug2-test-0:4300:4325 [0] NCCL INFO NET/FastSocket : Connected after 1000 retries.
full-debug2-test-0:4300:4325 [0] NCCL INFO NET/FastSocket : Accepted data socket 3
full-debug2-test-0:4300:4348 [0] net_fastsocket.cc:652 NCCL WARN Cannot get incoming CPU.
full-debug2-test-1:4024:4055 [0] NCCL INFO connect qid: 3, rqid: 3
full-debug2-test-1:4024:4055 [0] NCCL INFO NET/FastSocket : Connected after 1000 retries.
"""


def test_a_net_plugins_warns_followed_by_its_connections_are_no_failure(tmp_path: Path) -> None:
    assert _failures(tmp_path, FASTSOCKET_RETRIES) == []
    (tmp_path / "job.log").write_text(FASTSOCKET_RETRIES)
    kept = [f for f in diagnose(tmp_path).findings if "net_fastsocket.cc" in f.summary]
    assert all(f.severity == "info" for f in kept)


def test_a_plugin_warn_with_nothing_after_it_still_counts(tmp_path: Path) -> None:
    # the same WARNs with the connections cut away: nothing shows the run went past them
    warns = "\n".join(ln for ln in FASTSOCKET_RETRIES.splitlines() if "NCCL WARN" in ln) + "\n"
    assert _failures(tmp_path, warns)


def test_a_warn_followed_by_an_error_is_not_downgraded(tmp_path: Path) -> None:
    log = FASTSOCKET_RETRIES + (
        "full-debug2-test-1:4024:4055 [0] NCCL INFO misc/socket.cc:470 -> 2\n"
        "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1296, unhandled system error, NCCL version 2.8.3\n"
    )
    assert _failures(tmp_path, log)
