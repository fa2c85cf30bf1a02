"""A class of log with no error line: a gdb backtrace that is a crash's own report (its frame 0 only a process
ending on a signal shows: knowledge/native_libraries.CRASH_FRAMES). Short logs written in gdb's own format.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import top_failure

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
