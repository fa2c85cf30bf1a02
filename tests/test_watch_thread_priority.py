"""The launcher's watch thread (the live look, the hang watchdog) runs nicer than the ranks it starts, so that on a
host whose cores the job fills its CPU comes from the ranks' idle moments: the job's step time pays nothing."""

from __future__ import annotations

import os
import sys
import threading

import pytest

from scope.collectors.watchdog import WATCH_NICE, WatchdogThread

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice values are Linux's")


def _nice_of(tid: int) -> int:
    return os.getpriority(os.PRIO_PROCESS, tid)


def test_the_watch_thread_ticks_at_a_lower_priority_than_the_launcher() -> None:
    seen: list[int] = []
    ticked = threading.Event()

    def tick() -> None:
        seen.append(_nice_of(threading.get_native_id()))
        ticked.set()

    launcher = _nice_of(threading.get_native_id())
    watch = WatchdogThread(None, [tick], poll_s=0.01)
    watch.start()
    try:
        assert ticked.wait(5), "the watch thread never ticked"
    finally:
        watch.stop()
    assert seen[0] == min(19, launcher + WATCH_NICE)
    # only that thread: the launcher itself (which starts the ranks) keeps its priority
    assert _nice_of(threading.get_native_id()) == launcher
    assert os.getpriority(os.PRIO_PROCESS, 0) == launcher
