"""Two classes of log with no error line: a gdb backtrace that is a crash's own report (its frame 0 only a process
ending on a signal shows: knowledge/native_libraries.CRASH_FRAMES), and Lightning's per-process start-up lines, which
cannot show two processes of one node on one local rank (they list the GPUs a node shows, not the processes it runs)
and make no finding. Short logs written in the programs' own formats.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_failures, top_failure

# a core dump's backtrace: NCCL's net init called into the plugin, which called a NULL function pointer
PLUGIN_NULL_CALL = """\
(gdb) bt
#0  0x0000000000000000 in ?? ()
#1  0x00007f0000001234 in plugin_ib_init (ndev=0x7f00000a0000 <nDevs>,
    logFunction=<optimized out>) at ib_plugin.c:210
#2  0x00007f0000005678 in ncclNet_v6_as_v7_init (logfn=<optimized out>) at net.cc:54
#3  0x00007f0000005890 in ncclNetInit (comm=comm@entry=0x5555aaaa0000) at net.cc:351
#4  0x00007f00000059a0 in ncclCommInitRankFunc (job_=0x5555aaab0000) at init.cc:1387
#5  0x00007f0000006000 in start_thread (arg=<optimized out>) at ./nptl/pthread_create.c:442
"""

# the same program attached while it waits: frame 0 is a wait, no crash
PLUGIN_WAITING = PLUGIN_NULL_CALL.replace(
    "#0  0x0000000000000000 in ?? ()", "#0  0x00007f0000000100 in __GI___poll (fds=0x1, nfds=1) at poll.c:29"
)


def test_a_backtrace_through_a_null_pointer_in_the_net_plugin_is_nccls_crash(tmp_path: Path) -> None:
    top = top_failure(tmp_path, PLUGIN_NULL_CALL)
    assert top.kind == "nccl_error"
    assert "SIGSEGV" in top.summary and "network plugin" in top.summary
    assert "NCCL_NET_PLUGIN" in top.suggestion and "NCCL_IB_HCA" in top.suggestion


def test_a_backtrace_standing_in_a_wait_stays_a_hang(tmp_path: Path) -> None:
    top = top_failure(tmp_path, PLUGIN_WAITING)
    assert top.kind == "hang"


def test_a_prompt_pasted_without_its_paren_is_still_gdb(tmp_path: Path) -> None:
    top = top_failure(tmp_path, PLUGIN_NULL_CALL.replace("(gdb) bt", "gdb) bt"))
    assert top.kind == "nccl_error" and "SIGSEGV" in top.summary


# ---- processes of one node stating one local rank: no finding ------------------------------------------------


def _lightning_startup(local_ranks: list[int], devices: str, world: int) -> str:
    lines = []
    for g, local in enumerate(local_ranks):
        lines.append(f"initializing ddp: GLOBAL_RANK: {g}, MEMBER: {g + 1}/{world}")
        lines.append(f"LOCAL_RANK: {local} - CUDA_VISIBLE_DEVICES: [{devices}]")
    return "\n".join(lines) + "\n"


def test_a_healthy_multi_node_lightning_start_is_no_config_error(tmp_path: Path) -> None:
    # 2 nodes x Trainer(devices=4) on 8-GPU nodes: Lightning lists every GPU the node shows, not the processes it runs
    found = diagnose_failures(tmp_path, _lightning_startup([0, 1, 2, 3, 0, 1, 2, 3], "0,1,2,3,4,5,6,7", 8))
    assert not any(f.kind == "config_error" for f in found)


def test_a_fit_then_a_test_printing_the_start_up_twice_is_no_config_error(tmp_path: Path) -> None:
    log = _lightning_startup([0, 1], "0,1", 2) * 2
    assert not any(f.kind == "config_error" for f in diagnose_failures(tmp_path, log))


# gdb stopped the process on a fault and says so above its prompt: frame 0 is an ordinary function
FAULT_NOTICE = """\
Thread 1 "python" received signal SIGSEGV, Segmentation fault.
0x00005555557a0000 in get_state () at Objects/obmalloc.c:866
(gdb) bt
#0  0x00005555557a0000 in get_state () at Objects/obmalloc.c:866
#1  0x00005555557a1000 in PyBytes_FromStringAndSize (str=0x1, size=12) at Objects/bytesobject.c:134
"""


def test_gdbs_own_signal_notice_makes_its_backtrace_the_crash(tmp_path: Path) -> None:
    top = top_failure(tmp_path, FAULT_NOTICE)
    assert top.kind == "crash" and "SIGSEGV" in top.summary


def test_gdb_interrupting_a_live_process_is_no_crash(tmp_path: Path) -> None:
    # Ctrl-C in gdb on a stuck process: SIGINT is gdb's own stop, the backtrace a wait
    log = FAULT_NOTICE.replace("SIGSEGV, Segmentation fault", "SIGINT, Interrupt").replace("get_state ()", "poll ()")
    top = top_failure(tmp_path, log)
    assert top.kind == "hang"
