"""The sampler loop: one low-priority thread per source, a flusher, notices and a status file.

Each source runs in its own thread so that a source that hangs (NVML does, on a GPU that fell off
the bus) stalls only itself: host counters and kernel-log lines keep flowing, which is exactly when
they matter. Work per tick is bounded by the sources; a tick that overruns its period skips the
missed ticks instead of catching up. Every exception is caught, logged once per distinct message
to `sidecar.log`, and counted in `sidecar.json`.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scope.collectors.sidecar.base import OWN_PREFIX, URGENT_TABLES, Source, SourceContext
from scope.collectors.sidecar.writer import ChunkedWriter

from scope import rundir

MAX_HZ = 10.0
# A source failing this many ticks in a row is given up (one notice), so a broken source costs nothing.
MAX_CONSECUTIVE_ERRORS = 50


@dataclass
class SourceState:
    source: Source
    status: str = "pending"  # pending | ok | unavailable | failed | stalled
    reason: str = ""
    samples: int = 0
    errors: int = 0
    consecutive_errors: int = 0
    cpu_s: float = 0.0
    last_tick: float = 0.0
    seen_errors: set[str] = field(default_factory=set)
    thread: threading.Thread | None = None


def lower_thread_priority() -> None:
    """Nice this thread to 19 (Linux niceness is per thread), so the job's threads always win."""
    with contextlib.suppress(OSError, AttributeError, PermissionError):
        current = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        if current < 19:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)


class Sampler:
    """Samples `sources` at `hz` into RUN/hosts/<host>/counters until `stop()`."""

    def __init__(
        self,
        run_dir: Path,
        host: str,
        sources: list[Source],
        hz: float = 1.0,
        chunk_seconds: float = 30.0,
        parent_pid: int | None = None,
    ) -> None:
        if not 0 < hz <= MAX_HZ:
            raise ValueError(f"sampling rate must be in (0, {MAX_HZ}] Hz, got {hz}")
        self.run_dir = Path(run_dir)
        self.host = host
        self.hz = hz
        self.chunk_seconds = max(chunk_seconds, 1.0 / hz)
        self.parent_pid = parent_pid
        self.host_dir = rundir.host_dir(self.run_dir, host)
        self.log_path = self.host_dir / "sidecar.log"
        self.status_path = self.host_dir / "sidecar.json"
        self.states = [SourceState(source) for source in sources]
        self.writer = ChunkedWriter(rundir.counters_dir(self.run_dir, host), {})
        self.notices: list[str] = []
        self._notice_keys: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._flusher: threading.Thread | None = None
        self.started_ns = 0
        self.stopped = False

    # ----- notices and log -----------------------------------------------------------------
    def notice(self, message: str) -> None:
        """Record `message` once: a line in sidecar.log and an entry in `notices`."""
        with self._lock:
            if message in self._notice_keys:
                return
            self._notice_keys.add(message)
            self.notices.append(message)
        self.log(message)

    def log(self, message: str) -> None:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime())
        with contextlib.suppress(OSError), open(self.log_path, "a") as fh:
            fh.write(f"{stamp} {OWN_PREFIX} {message}\n")  # the prefix: scope's words, never the job's

    # ----- life cycle ------------------------------------------------------------------------
    def open(self) -> None:
        """Open every source (reporting the unavailable ones once); no thread yet."""
        self.host_dir.mkdir(parents=True, exist_ok=True)
        self.started_ns = time.time_ns()
        self.log(f"sidecar started: pid {os.getpid()}, {self.hz:g} Hz, host {self.host}")
        for state in self.states:
            self._open_source(state)
        try:
            self.writer.warm_up()
        except Exception as exc:
            self.log(f"pyarrow warm-up failed ({type(exc).__name__}: {exc})")

    def tick_all(self) -> None:
        """One sample of every open source, in this thread (tests, benchmarks)."""
        for state in self.states:
            if state.status in ("ok", "stalled"):
                self.tick(state)

    def start(self) -> None:
        self.open()
        for state in self.states:
            if state.status == "ok":
                state.thread = threading.Thread(
                    target=self._source_loop, args=(state,), name=f"scope-sidecar-{state.source.name}"
                )
                state.thread.daemon = True
                state.thread.start()
        self._flusher = threading.Thread(target=self._flush_loop, name="scope-sidecar-flush", daemon=True)
        self._flusher.start()
        self.write_status()

    def _open_source(self, state: SourceState) -> None:
        name = state.source.name
        ctx = SourceContext(self.host_dir, self.hz, lambda message: self.notice(f"{name}: {message}"))
        try:
            reason = state.source.open(ctx)
        except Exception as exc:  # a source must never take the sampler down
            reason = f"failed to open ({type(exc).__name__}: {exc})"
        if reason:
            state.status, state.reason = "unavailable", reason
            self.notice(f"{name}: unavailable: {reason}")
            return
        state.status = "ok"
        state.last_tick = time.monotonic()
        self.writer.add_schemas(state.source.tables)

    def wait(self, seconds: float | None = None) -> None:
        """Block until `stop()` is called, `seconds` pass, or the parent process is gone."""
        deadline = None if seconds is None else time.monotonic() + seconds
        while not self._stop.is_set():
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return
            self._stop.wait(0.2 if remaining is None else min(0.2, remaining))

    def request_stop(self) -> None:
        """Ask the loops to end (safe from a signal handler); `wait()` then returns."""
        self._stop.set()

    def stop(self, timeout: float = 5.0) -> None:
        if self.stopped:
            return
        self._stop.set()
        end = time.monotonic() + timeout
        for state in self.states:
            if state.thread is not None:
                state.thread.join(max(0.0, end - time.monotonic()))
        if self._flusher is not None:
            self._flusher.join(max(0.0, end - time.monotonic()))
        self._safe_flush()
        for state in self.states:
            if state.thread is not None and state.thread.is_alive():
                # Still inside a call (a hung NVML): closing under it could hang us too; exit leaves it.
                self.log(f"{state.source.name}: still busy at stop; left to exit with the process")
            elif state.status in ("ok", "stalled", "failed"):
                with contextlib.suppress(Exception):
                    state.source.close()
        self.stopped = True
        self.write_status()
        self.log(f"sidecar stopped: {self.writer.rows_written} rows in {self.writer.chunks_written} chunks")

    def run(self, seconds: float | None = None) -> None:
        """Foreground use (`scope sample`, `scope attach`): start, wait, stop (also on Ctrl-C)."""
        self.start()
        try:
            self.wait(seconds)
        finally:
            self.stop()

    # ----- threads ---------------------------------------------------------------------------
    def _source_loop(self, state: SourceState) -> None:
        lower_thread_priority()
        period = 1.0 / self.hz
        next_tick = time.monotonic()
        while not self._stop.is_set() and state.status in ("ok", "stalled"):
            self.tick(state)
            next_tick += period
            now = time.monotonic()
            if next_tick <= now:  # overran: skip the missed ticks rather than bunch them up
                next_tick = now + period
            self._stop.wait(next_tick - now)

    def tick(self, state: SourceState) -> None:
        """One sample of one source; everything it raises is caught here."""
        cpu0 = time.thread_time()
        try:
            out = state.source.sample(time.time_ns())
            urgent = []
            for table, rows in out.items():
                self.writer.append(table, rows)
                if rows and table in URGENT_TABLES:
                    urgent.append(table)
            if urgent:
                self.writer.flush(urgent)
            state.samples += 1
            state.consecutive_errors = 0
            if state.status == "stalled":
                state.status = "ok"
                self.log(f"{state.source.name}: sampling again")
        except Exception as exc:
            self._source_error(state, exc)
        state.cpu_s += time.thread_time() - cpu0
        state.last_tick = time.monotonic()

    def _source_error(self, state: SourceState, exc: BaseException) -> None:
        state.errors += 1
        state.consecutive_errors += 1
        message = f"{type(exc).__name__}: {exc}"
        if message not in state.seen_errors and len(state.seen_errors) < 20:
            state.seen_errors.add(message)
            self.log(f"{state.source.name}: sample failed ({message}); continuing")
        if state.consecutive_errors >= MAX_CONSECUTIVE_ERRORS:
            state.status, state.reason = "failed", message
            self.notice(f"{state.source.name}: gave up after {state.consecutive_errors} failed samples: {message}")

    def _flush_loop(self) -> None:
        lower_thread_priority()
        last_flush = time.monotonic()
        while not self._stop.wait(min(1.0, self.chunk_seconds)):
            if self.parent_pid is not None and os.getppid() != self.parent_pid:
                self.log(f"parent process {self.parent_pid} is gone; stopping")
                self._stop.set()
                break
            self._check_stalls()
            if time.monotonic() - last_flush >= self.chunk_seconds:
                self._safe_flush()
                self.write_status()
                last_flush = time.monotonic()

    def _check_stalls(self) -> None:
        limit = max(10.0, 10.0 / self.hz)
        for state in self.states:
            if state.status == "ok" and time.monotonic() - state.last_tick > limit:
                state.status = "stalled"
                self.notice(f"{state.source.name}: stalled (no sample for over {limit:g} s)")

    def _safe_flush(self) -> None:
        try:
            self.writer.flush()
        except Exception as exc:  # full disk, unwritable folder: log, keep sampling
            self.log(f"writing counters failed ({type(exc).__name__}: {exc})")

    # ----- status ----------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        sources = {
            s.source.name: {
                "status": s.status,
                "reason": s.reason,
                "samples": s.samples,
                "errors": s.errors,
                "cpu_s": round(s.cpu_s, 6),
                "tables": sorted(s.source.tables),
            }
            for s in self.states
        }
        return {
            "host": self.host,
            "pid": os.getpid(),
            "hz": self.hz,
            "chunk_seconds": self.chunk_seconds,
            "started_ns": self.started_ns,
            "updated_ns": time.time_ns(),
            "stopped": self.stopped,
            "sources": sources,
            "notices": list(self.notices),
            "chunks_written": self.writer.chunks_written,
            "rows_written": self.writer.rows_written,
            "rows_lost": self.writer.rows_lost,
            "write_error": self.writer.write_error,
        }

    def write_status(self) -> None:
        """sidecar.json, atomically: what ran, what was unavailable and why, what it cost."""
        tmp = self.status_path.with_name(f".sidecar.json.{os.getpid()}")
        try:
            tmp.write_text(json.dumps(self.status(), indent=1) + "\n")
            os.replace(tmp, self.status_path)
        except OSError:  # a full disk: no half-written temporary stays behind
            with contextlib.suppress(OSError):
                tmp.unlink()
