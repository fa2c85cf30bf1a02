# ruff: noqa: E501
"""Lookalikes of the stuck-process dumps and its graph-capture remedy. A debugger's backtrace of a
process that crashed (lldb stopped on SIGSEGV / SIGABRT, a core file, macOS's EXC_BAD_ACCESS) or that went on and
exited is no stuck process: no hang. The CUDA watchdog row's remedy names the PyTorch changes that stopped the
watchdog's event query during capture. Lines written here in each debugger's format, values varied."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_failures, top_failure

# lldb attached, the process continued and then faulted inside ncclCommAbort: a crash, not a wait
LLDB_SEGV = """\
(lldb) process attach --pid 30417
Process 30417 stopped
(lldb) continue
Process 30417 resuming
Process 30417 stopped
* thread #1, name = 'python3', stop reason = signal SIGSEGV: invalid address (fault address: 0x28)
    frame #0: 0x00007f5c10a2b611 libnccl.so.2`ncclCommAbort + 97
(lldb) bt
* thread #1, name = 'python3', stop reason = signal SIGSEGV: invalid address (fault address: 0x28)
  * frame #0: 0x00007f5c10a2b611 libnccl.so.2`ncclCommAbort + 97
    frame #1: 0x00007f5c11c22a10 libtorch_cuda.so`c10d::NCCLComm::abort(std::optional<std::string>) + 208
    frame #2: 0x00007f5c11c4b068 libtorch_cuda.so`c10d::ProcessGroupNCCL::abort() + 664
"""

# a core file opened in lldb: the abort path above the process group's shutdown
LLDB_CORE_ABORT = """\
(lldb) target create "/usr/bin/python3.11" --core "/var/crash/core.python3.90122"
Core file '/var/crash/core.python3.90122' (x86_64) was loaded.
(lldb) bt
* thread #4, name = 'pt_main_thread', stop reason = signal SIGABRT
  * frame #0: 0x00007fe3a80969fc libc.so.6`pthread_kill + 300
    frame #1: 0x00007fe3a8042476 libc.so.6`raise + 22
    frame #2: 0x00007fe3a80287f3 libc.so.6`abort + 211
    frame #3: 0x00007fe391cb1068 libtorch_cuda.so`c10d::ProcessGroupNCCL::shutdown() + 412
"""

# macOS lldb names the fault as a Mach exception
LLDB_MAC_FAULT = """\
* thread #1, queue = 'com.apple.main-thread', stop reason = EXC_BAD_ACCESS (code=1, address=0x0)
  * frame #0: 0x0000000104a1c2f0 libtorch_cpu.dylib`c10d::TCPStore::doWait(c10::ArrayRef<std::string>, std::chrono::milliseconds) + 48
    frame #1: 0x0000000104a1d100 libtorch_cpu.dylib`c10d::TCPStore::wait(std::vector<std::string> const&) + 64
"""

GDB_THEN_EXIT = """\
(gdb) bt
#0  0x00007f0a61a2c117 in ?? () from /lib/x86_64-linux-gnu/libc.so.6
#1  0x00007f0a61a36c10 in pthread_cond_wait () from /lib/x86_64-linux-gnu/libc.so.6
#2  0x00007f09e1f0a2c0 in ncclCommDestroy () from /opt/conda/lib/python3.10/site-packages/nvidia/nccl/lib/libnccl.so.2
#3  0x00007f09e34e12aa in c10d::NCCLComm::destroy() () from /opt/conda/lib/python3.10/site-packages/torch/lib/libtorch_cuda.so
(gdb) continue
Continuing.
[Inferior 1 (process 8841) exited normally]
"""

LLDB_THEN_EXIT = """\
(lldb) bt
* thread #1, name = 'python', stop reason = signal SIGSTOP
  * frame #0: 0x00007f21aa10e7fd libc.so.6`syscall + 29
    frame #1: 0x00007f2191cb0b85 libtorch_cuda.so`c10d::ProcessGroupNCCL::waitForFutureOrTimeout(std::future<bool>&, std::chrono::duration<long, std::ratio<1l, 1000l>> const&, std::string const&, c10d::C10dLoggingData&, bool) + 725
    frame #2: 0x00007f2191cb1068 libtorch_cuda.so`c10d::ProcessGroupNCCL::abort() + 664
(lldb) process continue
Process 77120 resuming
Process 77120 exited with status = 0 (0x00000000)
"""


def test_an_lldb_backtrace_of_a_fault_is_the_crash_not_a_stuck_shutdown(tmp_path: Path) -> None:
    found = diagnose_failures(tmp_path, LLDB_SEGV)
    assert found and all(f.kind != "hang" for f in found)
    top = found[0]
    assert top.metrics["code"] in ("nccl_crash_signal", "fatal_signal") and "SIGSEGV" in top.summary
    assert "libnccl.so.2" in top.summary


def test_a_core_files_abort_in_lldb_is_a_crash(tmp_path: Path) -> None:
    found = diagnose_failures(tmp_path, LLDB_CORE_ABORT)
    assert found and all(f.kind != "hang" for f in found)
    assert "SIGABRT" in found[0].summary


def test_macos_exc_bad_access_in_lldb_is_a_crash(tmp_path: Path) -> None:
    found = diagnose_failures(tmp_path, LLDB_MAC_FAULT)
    assert found and all(f.kind != "hang" for f in found)
    assert "SIGSEGV" in found[0].summary


def test_a_debugged_process_that_exited_normally_after_its_backtrace_is_no_hang(tmp_path: Path) -> None:
    for log in (GDB_THEN_EXIT, LLDB_THEN_EXIT):
        assert not [f for f in diagnose_failures(tmp_path, log) if f.kind == "hang"], log
    # the same backtraces without the exit stay a hang (the stuck process's dump)
    stuck = GDB_THEN_EXIT.split("(gdb) continue")[0]
    assert top_failure(tmp_path, stuck).kind == "hang"


def test_a_sigstop_attach_of_a_stuck_process_stays_a_hang(tmp_path: Path) -> None:
    stuck = LLDB_THEN_EXIT.split("(lldb) process continue")[0]
    top = top_failure(tmp_path, stuck)
    assert top.kind == "hang" and "waitForFutureOrTimeout" in top.summary


def _cuda_watchdog_capture() -> str:
    return (
        "[rank1]:[E0117 09:12:44.104455192 ProcessGroupNCCL.cpp:1714] [PG ID 0 PG GUID 0(default_pg) Rank 1] Process "
        "group watchdog thread terminated with exception: CUDA error: operation not permitted when stream is "
        "capturing\n"
        "Search for `cudaErrorStreamCaptureUnsupported' in https://docs.nvidia.com/cuda/cuda-runtime-api/"
        "group__CUDART__TYPES.html for more information.\n"
    )


def test_the_cuda_watchdog_remedy_names_the_torch_changes_that_stopped_the_query(tmp_path: Path) -> None:
    top = top_failure(tmp_path, _cuda_watchdog_capture())
    assert top.metrics["code"] == "watchdog_event_query_during_graph_capture"
    fix = top.suggestion
    # the thread-local capture mode of the watchdog's queries (pytorch#148594, #160398 for isStarted) and the
    # capture's wait for queued work (2.1.1): an upgrade target, not 'a newer release' of an unnamed version
    assert "thread-local" in fix and "148594" in fix and "2.9" in fix
    assert "TORCH_NCCL_BLOCKING_WAIT=1" in fix and "ROCm" not in fix
    # a warm-up collective just before capture queues the very work the watchdog then queries: not advised
    assert "warm-up all_reduce" not in fix


def test_the_capturing_threads_own_call_names_lazy_communicator_creation(tmp_path: Path) -> None:
    log = (
        "Traceback (most recent call last):\n"
        '  File "/srv/engine/cuda_graph_runner.py", line 318, in capture_one\n'
        "    dist.all_reduce(buf, group=tp_group)\n"
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, "
        "unhandled cuda error, NCCL version 2.21.5\n"
        "RuntimeError: CUDA error: operation not permitted when stream is capturing\n"
    )
    top = top_failure(tmp_path, log)
    if top.metrics["code"] == "call_forbidden_during_graph_capture":
        assert "device_id" in top.suggestion
    else:  # the NCCL error line may rank first; the capture row must still read its line
        assert any(f.metrics["code"] == "call_forbidden_during_graph_capture" for f in diagnose_failures(tmp_path, log))
