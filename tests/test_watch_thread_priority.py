"""The launcher's live look runs on a thread nicer than the ranks it starts, so that on a host whose cores the job
fills its CPU comes from the ranks' idle moments; the hang watchdog's thread keeps the launcher's priority (its
dumps must land before a process-group timeout)."""

from __future__ import annotations

import os
import sys
import threading

import pytest
from scope.collectors.watchdog import LIVE_NICE, WatchdogThread

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice values are Linux's")


def _nice_of(tid: int) -> int:
    return os.getpriority(os.PRIO_PROCESS, tid)


def _nice_while_ticking(**kwargs: int) -> int:
    seen: list[int] = []
    ticked = threading.Event()

    def tick() -> None:
        seen.append(_nice_of(threading.get_native_id()))
        ticked.set()

    watch = WatchdogThread(None, [tick], poll_s=0.01, **kwargs)
    watch.start()
    try:
        assert ticked.wait(5), "the thread never ticked"
    finally:
        watch.stop()
    return seen[0]


def test_the_live_look_ticks_at_a_lower_priority_than_the_launcher_and_the_watchdog_does_not() -> None:
    launcher = _nice_of(threading.get_native_id())
    assert _nice_while_ticking(nice=LIVE_NICE) == min(19, launcher + LIVE_NICE)
    assert _nice_while_ticking() == launcher
    # only that thread: the launcher itself (which starts the ranks) keeps its priority
    assert _nice_of(threading.get_native_id()) == launcher
    assert os.getpriority(os.PRIO_PROCESS, 0) == launcher
