"""Hang watchdog: when no rank's step advances for T seconds, take evidence from every rank.

It reads every rank's `heartbeat.json` (written by the in-process hook; on a shared file system a
node's launcher sees all ranks, so each node decides alone and signals only its own ranks). On a
hang it writes a `dump` request into `RUN/control/` (every rank's hook thread dumps its Python
stacks and Flight Recorder buffer), sends each local rank the dump signal its heartbeat names (a
real-time signal nothing in the job handles; faulthandler writes the C-level stacks even if a rank's
Python threads cannot run; never SIGUSR2, which jobs and schedulers use), waits for the dumps, and
reports the hang. A job that steps again, or ends with exit 0, after a stall is not hung: the record
stays, marked recovered. When
the job uses NCCL it also asks NCCL's RAS service for the job status meanwhile (collectors/ras_client.py,
stored as hosts/<host>/ras.txt; nothing listening is a quick no-op noted in the hang record).

Dumps must come before the process-group timeout: after it, gloo/NCCL raise on the waiting ranks
and torchrun kills the rest. Keep T well below the job's timeout.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scope.collectors.hook.control import write_request
from scope.collectors.ras_client import RasQuery

from scope.recordio import HEARTBEAT, checked, read_json
from scope.rundir import fr_dir, stacks_dir

DUMP_WAIT_S = 10.0
RAS_WAIT_S = 16.0
# The live look's thread in the launcher runs this much nicer than the ranks it starts: on a host whose cores the
# job fills, its CPU comes from the ranks' idle moments (a rank waiting in a collective) rather than from their
# turn. Not 19: at CI's load 20 a nice-19 thread gets ~1 ms of CPU a second, under the look's 2-4 ms; nice 10
# still gets ~10 ms there. The hang watchdog keeps its own thread at the launcher's priority: its check must send
# the dump request and signals promptly (the ranks write their stacks and Flight Recorder themselves) before a
# process-group timeout ends them.
LIVE_NICE = 10


@dataclass
class Beat:
    rank: int
    step: int
    pid: int | None
    host: str
    state: str
    time_ns: int | None
    changed_at: float  # monotonic time at which we saw this step first
    backend: str = ""  # torch.distributed backend as the hook saw it ("nccl", "cpu:gloo,cuda:nccl", ...)
    dump_signal: int | None = None  # the signal the rank's hook dumps C-level stacks on, while it is free


def read_heartbeats(run_dir: Path) -> dict[int, dict[str, Any]]:
    """Every rank's heartbeat that reads as one: a half-written, damaged or impossible beat (a FIFO, a link
    to /dev/zero, a string step, NaN rates; scope.recordio) is skipped, never waited on."""
    beats: dict[int, dict[str, Any]] = {}
    for path in (Path(run_dir) / "ranks").glob("*/heartbeat.json"):
        data = read_json(path)
        if data is not None and checked(data, HEARTBEAT) is None:
            beats[data["rank"]] = data
    return beats


def pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class HangWatchdog:
    def __init__(
        self,
        run_dir: Path,
        timeout_s: float,
        *,
        host: str,
        local_pids: Callable[[], dict[int, int]],
        on_hang: Callable[[dict[str, Any]], None],
        startup_timeout_s: float | None = None,
        dump_wait_s: float = DUMP_WAIT_S,
        ras_enabled: bool = True,
        ras_options: dict[str, Any] | None = None,
        on_recover: Callable[[dict[str, Any]], None] | None = None,
        limit: Callable[[], float] | None = None,
    ) -> None:
        self.run_dir = Path(run_dir)
        self.on_recover = on_recover
        self.timeout_s = timeout_s
        # The job's rhythm (seconds without progress that make a hang, from the live detector), else timeout_s.
        self.limit = limit
        # Before the first step, start-up (imports, data loading, compilation) may take long.
        self.startup_timeout_s = startup_timeout_s if startup_timeout_s is not None else 3 * timeout_s
        self.host = host
        self.local_pids = local_pids
        self.on_hang = on_hang
        self.dump_wait_s = dump_wait_s
        # RAS answers within its own timeout (about 5 s per leg); waited for after the dumps, never longer.
        self.ras_enabled = ras_enabled and os.environ.get("NCCL_RAS_ENABLE", "1") != "0"
        self.ras_options = ras_options or {}
        self.ras_wait_s = RAS_WAIT_S
        self.beats: dict[int, Beat] = {}
        self.hang: dict[str, Any] | None = None
        self.recovered: list[dict[str, Any]] = []  # stalls the job came out of, oldest first
        self._started = time.monotonic()

    @property
    def poll_s(self) -> float:
        return min(max(self.timeout_s / 10, 0.25), 5.0)

    def check(self, now: float | None = None) -> dict[str, Any] | None:
        """One look at the heartbeats; returns the hang report when a hang is detected now."""
        now = time.monotonic() if now is None else now
        self._update(read_heartbeats(self.run_dir), now)
        live = [b for b in self.beats.values() if b.state == "running" and self._alive(b)]
        if not live:
            return None
        last_progress = max(b.changed_at for b in live)
        if self.hang is not None:
            if last_progress <= self.hang["_seen_at"]:
                return None
            # Steps again: the record is kept, marked recovered, and the watchdog re-arms, so a real
            # hang after a slow start or a long checkpoint is still caught.
            self.hang.update(recovered=True, recovered_ns=time.time_ns())
            record = {k: v for k, v in self.hang.items() if not k.startswith("_")}
            self.recovered.append(record)
            self.hang = None
            if self.on_recover is not None:
                with contextlib.suppress(Exception):
                    self.on_recover(record)
            return None
        limit = self._limit() if any(b.step > 0 for b in live) else self.startup_timeout_s
        if now - last_progress < limit:
            return None
        return self._report_hang(live, now, limit if self.limit is not None else None)

    def _limit(self) -> float:
        if self.limit is None:
            return self.timeout_s
        try:
            return float(self.limit())
        except Exception:
            return self.timeout_s

    def _update(self, raw: dict[int, dict[str, Any]], now: float) -> None:
        for rank, data in raw.items():
            step = int(data.get("step") or 0)
            old = self.beats.get(rank)
            changed_at = now if old is None or old.step != step else old.changed_at
            self.beats[rank] = Beat(
                rank=rank,
                step=step,
                pid=data.get("pid"),
                host=str(data.get("host", "")),
                state=str(data.get("state", "running")),
                time_ns=data.get("time_ns"),
                changed_at=changed_at,
                backend=str(data.get("backend") or ""),
                dump_signal=data["dump_signal"] if isinstance(data.get("dump_signal"), int) else None,
            )

    def _alive(self, beat: Beat) -> bool:
        if beat.host != self.host:
            return True  # another node's rank: its own launcher knows better; trust the heartbeat
        local = self.local_pids()
        if local and beat.rank in local:
            return True
        return pid_alive(beat.pid)

    def _report_hang(self, live: list[Beat], now: float, limit: float | None = None) -> dict[str, Any]:
        detected_ns = time.time_ns()
        steps = {b.rank: b.step for b in self.beats.values()}
        lowest = min(b.step for b in live)
        report: dict[str, Any] = {
            "detected_ns": detected_ns,
            "timeout_s": self.timeout_s if limit is None else limit,
            "rhythm": self.limit is not None,
            "detected_by": self.host,
            "last_steps": {str(r): s for r, s in sorted(steps.items())},
            "last_step_ns": {str(b.rank): b.time_ns for b in sorted(self.beats.values(), key=lambda b: b.rank)},
            "behind_ranks": sorted(b.rank for b in live if b.step == lowest) if lowest < max(steps.values()) else [],
            "recovered": False,
        }
        self.hang = {**report, "_seen_at": now}
        ras = self._start_ras_query()
        report["dumps"] = self._collect_dumps(live, detected_ns)
        report["ras"] = ras.result(self.ras_wait_s) if ras else {"status": "skipped", "note": "no rank uses NCCL"}
        self.hang.update(dumps=report["dumps"], ras=report["ras"])
        with contextlib.suppress(Exception):
            self.on_hang(report)
        return report

    def _start_ras_query(self) -> RasQuery | None:
        """NCCL's own view of the hang (which ranks are missing or behind), if the job uses NCCL."""
        if not self.ras_enabled or not any("nccl" in b.backend.lower() for b in self.beats.values()):
            return None
        query = RasQuery(self.run_dir, self.host, **self.ras_options)
        query.start()
        return query

    def _collect_dumps(self, live: list[Beat], since_ns: int) -> dict[str, list[str]]:
        """Ask every rank for stacks and Flight Recorder, then wait (bounded) for the files."""
        with contextlib.suppress(OSError):
            write_request(self.run_dir, "dump", reason="hang")
        local = {r: p for r, p in self.local_pids().items() if any(b.rank == r for b in live)}
        for rank, pid in local.items():
            signum = self.beats[rank].dump_signal if rank in self.beats else None
            if signum is not None:  # only the hook's own signal: its default action would end the rank
                with contextlib.suppress(OSError):
                    os.kill(pid, signum)
        expected = {b.rank for b in live if b.host == self.host}
        deadline = time.monotonic() + self.dump_wait_s
        found: dict[str, list[str]] = {}
        while True:
            found = {str(r): self._dumps_since(r, since_ns) for r in sorted(expected)}
            if all(any(p.startswith("stacks/") and "hang" in p for p in f) for f in found.values()):
                time.sleep(0.5)  # the Flight Recorder file follows the stack file
                found = {str(r): self._dumps_since(r, since_ns) for r in sorted(expected)}
                break
            if time.monotonic() > deadline:
                break
            time.sleep(0.2)
        return found

    def _dumps_since(self, rank: int, since_ns: int) -> list[str]:
        out = []
        for folder, label in ((stacks_dir(self.run_dir, rank), "stacks"), (fr_dir(self.run_dir, rank), "fr")):
            with contextlib.suppress(OSError):
                for entry in os.scandir(folder):
                    if not entry.name.startswith(".") and entry.stat().st_mtime_ns >= since_ns:
                        out.append(f"{label}/{entry.name}")
        return sorted(out)


class WatchdogThread(threading.Thread):
    """Runs `tick()` callbacks and the watchdog's check on one daemon thread until stopped."""

    def __init__(
        self,
        watchdog: HangWatchdog | None,
        ticks: list[Callable[[], None]],
        poll_s: float = 0.5,
        *,
        nice: int = 0,
        name: str = "scope-watchdog",
    ):
        super().__init__(name=name, daemon=True)
        self.nice = nice
        self.watchdog = watchdog
        self.ticks = ticks
        self.poll_s = min(poll_s, watchdog.poll_s) if watchdog else poll_s
        self._stop_event = threading.Event()

    def run(self) -> None:
        if self.nice:
            lower_thread_priority(self.nice)
        while not self._stop_event.wait(self.poll_s):
            for tick in self.ticks:
                with contextlib.suppress(Exception):
                    tick()
            if self.watchdog is not None:
                with contextlib.suppress(Exception):
                    self.watchdog.check()

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=5)


def lower_thread_priority(step: int) -> bool:
    """Make the calling thread `step` nicer (Linux: a thread id is a PRIO_PROCESS target and the nice value is
    per thread; children it starts, such as py-spy for a dump, inherit it). False where the OS says no."""
    if not hasattr(os, "setpriority") or not os.path.isdir("/proc/self/task"):
        return False  # elsewhere a thread id is no process id: setpriority would renice the whole launcher
    tid = threading.get_native_id()
    try:
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + step))
    except OSError:
        return False
    return True
