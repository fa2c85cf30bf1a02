# ruff: noqa: E501
"""A log that is only a stuck process's stack dump (lldb, gdb, py-spy) read as a hang that
names where it waits; a watchdog's event query refused while a graph is captured; a DeviceMesh dimension that
does not exist. Lines written here in each emitter's format, values varied."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_failures, top_failure

LLDB_SHUTDOWN = """\
(lldb) bt all
* thread #1, name = 'python3', stop reason = signal SIGSTOP
  * frame #0: 0x00007f21aa10e7fd libc.so.6`syscall + 29
    frame #1: 0x00007f2190aa1142 libstdc++.so.6`std::__atomic_futex_unsigned_base::_M_futex_wait_until_steady(this=<unavailable>, __addr=0x00007f1c40000c10, __val=2147483648, __has_timeout=true, __s=<unavailable>, __ns=(__r = 12093434)) at futex.cc:217:18
    frame #2: 0x00007f2191cb0b85 libtorch_cuda.so`c10d::ProcessGroupNCCL::waitForFutureOrTimeout(std::future<bool>&, std::chrono::duration<long, std::ratio<1l, 1000l>> const&, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char>> const&, c10d::C10dLoggingData&, bool) + 725
    frame #3: 0x00007f2191cb1068 libtorch_cuda.so`c10d::ProcessGroupNCCL::shutdown() + 412
  thread #2, name = 'python3', stop reason = signal SIGSTOP
    frame #0: 0x00007f21aa0b3d61 libc.so.6`__futex_abstimed_wait_common + 161
"""

LLDB_INIT = """\
  thread #7, name = 'pt_main_thread', stop reason = signal SIGSTOP
    frame #0: 0x00007fd0c3a4b0bf libc.so.6`__poll + 79
    frame #1: 0x00007fd05e1c22a4 libnccl.so.2`bootstrapAllGather + 356
    frame #2: 0x00007fd05e1d9911 libnccl.so.2`ncclCommInitRankFunc(ncclAsyncJob*) + 2321
    frame #3: 0x00007fd05e1dd0fe libnccl.so.2`ncclCommInitRankDev(ncclComm**, int, ncclUniqueId, int, int, ncclConfig_v21700*) + 878
"""

GDB_DESTROY = """\
(gdb) bt
#0  0x00007f88e1a2c117 in ?? () from /lib/x86_64-linux-gnu/libc.so.6
#1  0x00007f88e1a36c10 in pthread_cond_wait () from /lib/x86_64-linux-gnu/libc.so.6
#2  0x00007f8861f0a2c0 in ncclCommDestroy () from /usr/local/lib/python3.12/dist-packages/nvidia/nccl/lib/libnccl.so.2
#3  0x00007f88634e12aa in c10d::NCCLComm::destroy() () from /usr/local/lib/python3.12/dist-packages/torch/lib/libtorch_cuda.so
"""

SPY_SAVE = """\
Process 90211: python -m trainer.main --save-every 500
Python v3.11.9 (/opt/conda/bin/python3.11)

Thread 90211 (idle): "MainThread"
    _save (torch/serialization.py:905)
    save (torch/serialization.py:652)
    save_checkpoint (trainer/ckpt.py:41)
    train (trainer/main.py:310)
"""

# PyTorch's C++ stack of an exception the watchdog raised: no address before the name, no backtick
WATCHDOG_CPP_STACK = """\
[rank3]:[E0211 08:14:55.201118402 ProcessGroupNCCL.cpp:1899] [PG ID 0 PG GUID 0(default_pg) Rank 3] Process group watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered
Exception raised from c10_cuda_check_implementation at ../c10/cuda/CUDAException.cpp:43 (most recent call first):
frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f5e2c1b9446 in /opt/venv/lib/python3.10/site-packages/torch/lib/libc10.so)
frame #1: c10::detail::torchCheckFail(char const*, char const*, unsigned int, std::string const&) + 0x64 (0x7f5e2c1636e4 in /opt/venv/lib/python3.10/site-packages/torch/lib/libc10.so)
"""


def test_an_lldb_dump_stuck_in_the_process_groups_shutdown_is_a_hang_naming_the_abort(tmp_path: Path) -> None:
    top = top_failure(tmp_path, LLDB_SHUTDOWN)
    assert top.kind == "hang"
    assert "waitForFutureOrTimeout" in top.summary and "shutdown" in top.summary
    assert "2.26.2" in top.suggestion and "TORCH_NCCL_ABORT_IN_DESTROY_PG" in top.suggestion


def test_an_lldb_thread_without_prompt_in_nccl_init_waits_for_the_bootstrap(tmp_path: Path) -> None:
    top = top_failure(tmp_path, LLDB_INIT)
    assert top.kind == "hang" and "bootstrapAllGather" in top.summary
    assert "NCCL_SOCKET_IFNAME" in top.suggestion


def test_a_gdb_dump_in_nccl_comm_destroy_is_the_shutdown_wait(tmp_path: Path) -> None:
    top = top_failure(tmp_path, GDB_DESTROY)
    assert top.kind == "hang" and "ncclCommDestroy" in top.summary
    assert "TORCH_NCCL_ABORT_IN_DESTROY_PG=1" in top.suggestion


def test_a_py_spy_dump_in_torch_save_waits_on_the_file_system(tmp_path: Path) -> None:
    top = top_failure(tmp_path, SPY_SAVE)
    assert top.kind == "hang" and "torch/serialization.py" in top.summary and "torch.save" in top.summary


def test_the_watchdogs_cpp_exception_stack_is_no_stuck_process_but_lldbs_is(tmp_path: Path) -> None:
    found = diagnose_failures(tmp_path, WATCHDOG_CPP_STACK)
    assert found and all(f.kind != "hang" for f in found)
    lldb_frames = "\n".join(line for line in LLDB_SHUTDOWN.splitlines() if "frame #" in line and "thread" not in line)
    assert top_failure(tmp_path, lldb_frames).kind == "hang"  # frames pasted without their thread's header


def _watchdog_capture(vendor: str, rank: int) -> str:
    return (
        f"[rank{rank}]:[E0519 22:40:03.551208934 ProcessGroupNCCL.cpp:1689] [PG ID 2 PG GUID 7 Rank {rank}] Process "
        f"group watchdog thread terminated with exception: {vendor} error: operation not permitted when stream is "
        "capturing\n"
        f"{vendor} kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
        "might be incorrect.\n"
        f"Exception raised from c10_{vendor.lower()}_check_implementation at /src/pytorch/c10/{vendor.lower()}/"
        f"{vendor}Exception.cpp:43 (most recent call first):\n"
        "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x98 (0x7fa1 in /opt/torch/lib/libc10.so)\n"
    )


def test_the_watchdogs_event_query_refused_during_a_hip_capture_is_the_rocm_bug(tmp_path: Path) -> None:
    top = top_failure(tmp_path, _watchdog_capture("HIP", 3))
    assert top.kind == "crash" and top.metrics["code"] == "watchdog_event_query_during_graph_capture"
    assert "ROCm 7.2" in top.suggestion and "TORCH_NCCL_BLOCKING_WAIT=1" in top.suggestion


def test_the_watchdogs_event_query_refused_during_a_cuda_capture_names_the_torch_fix(tmp_path: Path) -> None:
    top = top_failure(tmp_path, _watchdog_capture("CUDA", 0))
    assert top.metrics["code"] == "watchdog_event_query_during_graph_capture"
    # the lazy communicator creation (device_id) is the capturing thread's own call, not the watchdog's
    assert "thread-local capture mode" in top.suggestion and "ROCm" not in top.suggestion
    assert "'CUDA error: operation not permitted" in top.suggestion


def test_the_capturing_threads_own_forbidden_call_is_no_watchdog_race(tmp_path: Path) -> None:
    log = (
        "Traceback (most recent call last):\n"
        '  File "/srv/app/graph_runner.py", line 212, in capture\n'
        "    n = int(lengths.max().item())\n"
        "RuntimeError: CUDA error: operation not permitted when stream is capturing\n"
    )
    top = top_failure(tmp_path, log)
    assert top.kind == "config_error" and top.metrics["code"] == "call_forbidden_during_graph_capture"
    assert "item()" in top.suggestion and "watchdog" not in top.suggestion


def test_a_torchtitan_mesh_of_a_disabled_parallelism_names_its_degree(tmp_path: Path) -> None:
    log = (
        "[rank0]:[titan] 2026-02-11 10:02:11,480 - root - INFO - Building 2-D device mesh with ['dp_shard', 'ep']\n"
        "[rank0]:Traceback (most recent call last):\n"
        '[rank0]:  File "/opt/titan/torchtitan/experiments/mymodel/parallelize.py", line 91, in parallelize_mymodel\n'
        '[rank0]:    cp_mesh = parallel_dims.get_mesh("cp")\n'
        '[rank0]:  File "/opt/titan/torchtitan/distributed/parallel_dims.py", line 281, in get_mesh\n'
        "[rank0]:    raise ValueError(\n"
        "[rank0]:ValueError: Mesh 'cp' is not available. Ensure the corresponding parallelism dimension is enabled "
        "(size > 1).\n"
    )
    top = top_failure(tmp_path, log)
    assert top.kind == "config_error" and top.metrics["code"] == "torchtitan_mesh_dim_not_enabled"
    fix = top.suggestion
    assert "context_parallel_degree" in fix and "get_optional_mesh('cp')" in fix and "tensor_parallel" not in fix
    # the INFO line that names the mesh it builds is no finding of its own
    assert not diagnose_failures(tmp_path, log.splitlines(keepends=True)[0])


def test_a_device_mesh_sliced_by_a_name_it_lacks_names_both(tmp_path: Path) -> None:
    cases = (
        (
            "KeyError: \"Invalid mesh_dim_names ('dp_shard_cp',) specified. Valid mesh_dim_names are ['world', "
            "'loss_mesh'].\"",
            "('dp_shard_cp',)",
            "['world', 'loss_mesh']",
        ),
        (
            'KeyError: ("Mesh dimension \'pp\' does not exist.", "Available mesh dimensions are: '
            "mesh_dim_names=('dp', 'tp')\")",
            "'pp'",
            "('dp', 'tp')",
        ),
    )
    for line, asked, has in cases:
        log = (
            f'Traceback (most recent call last):\n  File "train.py", line 40, in <module>\n    m = mesh["x"]\n{line}\n'
        )
        top = top_failure(tmp_path, log)
        assert top.metrics["code"] == "device_mesh_dim_name_missing", line
        assert f"asked {asked}, the mesh has {has}" in top.suggestion and "mesh_dim_names=" in top.suggestion
