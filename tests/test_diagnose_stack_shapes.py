"""Stack dumps in the shapes a reviewing session wrote to test the merged readers (tests/data/diagnose_stack_shapes,
written here: py-spy, faulthandler, gdb with `Thread N (LWP n)` headers, the dumpstacks recipe without process ids,
scope's hook dumps): processes told apart, native collectives read as collectives, the store's server not taken for a
client, a dump the log went past to more steps no hang.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import diagnose_failures, top_failure

SHAPES = Path(__file__).parent / "data" / "diagnose_stack_shapes"


def _log(name: str) -> str:
    return (SHAPES / name).read_text()


@pytest.mark.parametrize("name", ["recipe_two.log", "fh_only.log", "hook_then_fh.log"])
def test_the_process_outside_the_collective_is_found_among_dumps_of_several(tmp_path: Path, name: str) -> None:
    """Three processes dumped, two in all_reduce, one loading a shard: recipe dumps without process ids are kept
    apart by their main threads, and faulthandler dumps after a hook dump are read (were lost behind it)."""
    top = top_failure(tmp_path, _log(name))
    assert top.kind == "hang" and "load_shard" in top.summary and "2 other stacks" in top.summary


def test_gdb_frames_in_a_process_groups_wait_are_a_collective(tmp_path: Path) -> None:
    top = top_failure(tmp_path, _log("gdb_alone.log"))
    assert "waits in" in top.summary and "WorkNCCL::wait" in top.summary
    assert "__libc_recv" not in top.summary.split("waits in")[0]


def test_a_py_spy_and_a_gdb_dump_of_one_process_are_not_one_outside_and_one_inside(tmp_path: Path) -> None:
    top = top_failure(tmp_path, _log("gdb_and_spy.log"))
    assert "stands outside any collective" not in top.summary


def test_gdb_lwp_headers_keep_a_monitor_threads_store_check_off_the_main_thread(tmp_path: Path) -> None:
    """`Thread 2 (LWP n)` is the heartbeat monitor in TCPStore::check; thread 1, the main one, is elsewhere."""
    top = top_failure(tmp_path, _log("gdb_lwp.log"))
    assert "rendezvous store" not in top.summary and "train_loop" in top.summary


def test_the_store_servers_own_constructor_is_not_a_client_waiting_for_a_key(tmp_path: Path) -> None:
    for f in diagnose_failures(tmp_path, _log("tcp0.log")):
        assert "waits for a key of the rendezvous store" not in f.summary


def test_scopes_own_watchdog_dump_alone_is_no_pasted_hang(tmp_path: Path) -> None:
    """scope's watchdog dumps a stall it suspects (reason=hang); the job may outlive it (a stall longer than the hang
    timeout, then exit 0: test_collector_faults): alone in a log it is read with the run's records, not as a dump
    someone pasted because the job hung."""
    assert not [f for f in diagnose_failures(tmp_path, _log("hookhang.log")) if f.kind == "hang"]


def test_a_dump_the_log_goes_past_to_more_steps_is_no_hang(tmp_path: Path) -> None:
    assert not [f for f in diagnose_failures(tmp_path, _log("healthy_spy.log")) if f.kind == "hang"]


def test_of_two_dumps_of_one_process_the_later_one_is_read(tmp_path: Path) -> None:
    top = top_failure(tmp_path, _log("recipe_twice.log"))
    assert "save_checkpoint" in top.summary


def test_a_faulthandler_dump_after_a_gdb_backtrace_is_not_a_thread_of_the_py_spy_dump_before_it() -> None:
    """The formats are read in one pass: a gdb prompt ends the py-spy dump before it, so the faulthandler dumps after
    the backtrace are processes of their own (the one loading a shard was a thread of process 4242's dump)."""
    from scope.analyzers.diagnose.readers import stacks

    dumps = stacks.parse_stacks(_log("gdb_and_spy.log") + _log("fh_only.log"))
    assert [(d.form, len(d.threads)) for d in dumps] == [("python", 1)] * 4 + [("gdb", 1)]
    assert [stacks.where(d)["state"] for d in dumps[:2]] == ["in_collective", "elsewhere"]
