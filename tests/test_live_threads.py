"""`scope run` looks on a thread of its own (nice +10) beside the hang watchdog's: what each may read of the other.

The review of that split reproduced each case: a watchdog that re-armed after a recovery took the live verdict of the
stall that had just ended and reported a second hang at once; the alert command ran at the look's nice value; the
main thread's last look ran beside one still going on the live thread."""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from scope.collectors.launch_live import AUTO_HANG_FLOOR_S, RhythmLimit, _rearming
from scope.collectors.watchdog import LIVE_NICE, HangWatchdog, WatchdogThread

from scope.finding import Finding
from scope.live.alerts import AlertSender
from scope.live.detector import LiveEvent
from scope.live.monitor import build_monitor

HOST = socket.gethostname()


def _stalled_rank(run: Path) -> Path:
    """One rank that stepped 20 times, 0.1 s a step, and stopped about 3 s ago."""
    rank = run / "ranks" / "0"
    rank.mkdir(parents=True)
    t0 = time.time_ns() - 5_000_000_000
    lines = [json.dumps({"step": k, "t_ns": t0 + k * 100_000_000, "attempt": 0}) for k in range(1, 21)]
    (rank / "progress.jsonl").write_text("\n".join(lines) + "\n")
    _beat(rank, 20, t0 + 20 * 100_000_000)
    return rank


def _beat(rank: Path, step: int, t_ns: int) -> None:
    beat = {"rank": 0, "step": step, "pid": os.getpid(), "time_ns": t_ns, "written_ns": time.time_ns()}
    (rank / "heartbeat.json").write_text(json.dumps({**beat, "state": "running", "host": HOST}))


def test_after_a_recovery_the_watchdog_waits_for_a_look_that_saw_the_steps(tmp_path: Path) -> None:
    rank = _stalled_rank(tmp_path)
    live = build_monitor(tmp_path, hang_floor_s=1.0, say=lambda _: None)
    limit = RhythmLimit(live)
    hangs: list[dict[str, Any]] = []
    dog = HangWatchdog(tmp_path, AUTO_HANG_FLOOR_S, host=HOST, local_pids=lambda: {0: os.getpid()},
                       on_hang=hangs.append, on_recover=_rearming(lambda _: None, limit), dump_wait_s=0.2,
                       ras_enabled=False, limit=limit)  # fmt: skip
    live.tick()
    dog.check()
    assert len(hangs) == 1 and live.detector.hang is not None  # the verdict: the dumps at once
    time.sleep(0.6)
    _beat(rank, 21, time.time_ns())  # the job steps again
    dog.check()  # recovered, re-armed; the live thread has not looked since
    time.sleep(0.5)
    dog.check()
    assert len(hangs) == 1, [h["timeout_s"] for h in hangs]  # the ended stall's verdict is not a new hang
    live.tick()  # a look that saw step 21 clears it
    assert live.detector.hang is None and limit() >= AUTO_HANG_FLOOR_S


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice values are Linux's")
def test_the_alert_command_runs_at_the_launchers_priority_not_the_looks(tmp_path: Path) -> None:
    out = tmp_path / "nice.txt"
    sender = AlertSender(cmd=f"nice > {out}")  # built on this thread, as build_monitor is on the launcher's
    event = LiveEvent("new", "hang", Finding(kind="hang", severity="critical", summary="no rank advanced"), 0.0)
    sent = threading.Event()

    def look() -> None:
        if not sent.is_set():
            sender.submit(event)
            sent.set()

    looker = WatchdogThread(None, [look], poll_s=0.02, nice=LIVE_NICE, name="scope-live")
    looker.start()
    try:
        assert sent.wait(5)
        sender.close(10)  # waits for the queued alert's command
    finally:
        looker.stop()
    assert int(out.read_text()) == os.getpriority(os.PRIO_PROCESS, 0)


def test_two_threads_looking_at_once_read_each_record_once(tmp_path: Path) -> None:
    _stalled_rank(tmp_path)
    live = build_monitor(tmp_path, say=lambda _: None)
    looks = [threading.Thread(target=live.tick) for _ in range(8)]
    for t in looks:
        t.start()
    for t in looks:
        t.join()
    alone = build_monitor(tmp_path, say=lambda _: None)
    alone.tick()
    assert alone.detector.samples > 0
    assert live.detector.samples == alone.detector.samples and live.ticks == 8
