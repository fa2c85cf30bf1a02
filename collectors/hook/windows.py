"""Profiler windows: torch.profiler over chosen steps, one Kineto trace per window.

Steps are counted by the hook (see core.py); a window covering steps a..b is warmed up during step
a-1 (Kineto/CUPTI start-up stays out of the measured steps), records a..b with one
`ProfilerStep#<n>` range per step (the global step number, so every rank and every window agree
on numbering), and is written to `traces/rank<R>.step<a>-<b>.pt.trace.json.gz`. The trace is
exported as JSON on the training thread (Kineto requires it) and compressed on a helper thread.

Windows come from a schedule (first step, every N steps, K active) and from on-demand requests
(`scope attach --profile-steps K`). Any profiler error abandons that window and is logged; after
a few failures in a row profiling is switched off, so a broken profiler cannot slow every step.

torch's profiler must not be stopped and begun again on one step boundary: a rank of a gloo DDP job
whose scheduled window 2-4 was followed by an attached 5-7 died of SIGSEGV, in the second window's
stop or at interpreter exit (4 of 4 runs). So a window due by the next step when one ends extends the
one recording (one trace covers both), a new profiler never begins on the boundary the last one
stopped (it waits one step), and each window's results are released right after its export, while no
other session runs, rather than whenever the garbage collector gets to them.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scope.collectors.hook.hooklog import HookLog

MAX_FAILURES = 3
# Steps per profiler window at most: torch.profiler keeps every event of a window in the rank's memory
# until it ends (a million-step request grew a rank by 3.4 GB). scope attach refuses more.
MAX_WINDOW_STEPS = 100
NEVER = 1 << 62


@dataclass
class Window:
    first: int
    steps: int
    source: str  # "schedule" or the id of an on-demand request

    @property
    def last(self) -> int:
        return self.first + self.steps - 1


class ProfilerWindows:
    def __init__(
        self,
        traces_dir: Path,
        rank: int,
        log: HookLog,
        *,
        start: int,
        every: int,
        active: int,
        flops: bool = False,
        memory: bool = False,
    ) -> None:
        self.traces_dir = traces_dir
        self.rank = rank
        self.log = log
        self.every = every
        self.active = active
        self.flops = flops
        self.memory = memory
        self._scheduled: int | None = start if start >= 0 else None
        self._requests: list[Window] = []
        self._lock = threading.Lock()
        self._window: Window | None = None
        self._prof: Any = None
        self._step_range: Any = None
        self._failures = 0
        self._stopped_at = -1  # the boundary the last window stopped on: nothing begins there
        self._exports: list[threading.Thread] = []
        self.written: list[Path] = []
        # The step index at which on_boundary() must next run; the hook compares one int per step.
        self.next_boundary = NEVER
        self._plan_next(0)

    @property
    def recording(self) -> bool:
        return self._prof is not None

    # -- called from the poll thread -------------------------------------------------------
    def request(self, steps: int, at_step: int | None, source: str, current_step: int) -> None:
        first = max(at_step if at_step is not None else 0, current_step + 1)
        if steps > MAX_WINDOW_STEPS:  # a window holds its steps' events in memory until it ends
            self.log.info(f"profile request {source}: {steps} steps capped at {MAX_WINDOW_STEPS}")
            steps = MAX_WINDOW_STEPS
        with self._lock:
            self._requests.append(Window(first=first, steps=max(1, steps), source=source))
            self.next_boundary = min(self.next_boundary, first - 1)

    # -- called on the training thread at each step boundary -------------------------------
    def on_boundary(self, step: int) -> None:
        """`step` is the index of the step about to begin (= steps completed so far)."""
        try:
            if self._prof is not None:
                self._advance_window(step)
            if self._prof is None and self._failures < MAX_FAILURES and step > self._stopped_at:
                self._maybe_begin(step)
        except Exception as exc:
            self._fail(f"profiler window at step {step}", exc)
        self._plan_next(step)

    def finish(self, step: int) -> None:
        """At exit: write what a window caught so far, then wait for compression threads."""
        try:
            if self._prof is not None and self._window is not None and step > self._window.first:
                self._exit_step_range()
                self._stop_and_export(Window(self._window.first, step - self._window.first, "exit"))
            elif self._prof is not None:  # warmed up, nothing recorded yet
                self._exit_step_range()
                prof, self._prof = self._prof, None
                prof.stop_trace()
                _release(prof)
        except Exception as exc:
            self.log.error("profiler window at exit", exc)
        self._prof = None
        for thread in list(self._exports):
            thread.join(timeout=30)

    # -- internals --------------------------------------------------------------------------
    def _advance_window(self, step: int) -> None:
        window = self._window
        assert window is not None
        self._exit_step_range()
        if step < window.first:
            return
        if step == window.first:
            self._prof.start_trace()
        if step > window.last and not self._extend(window, step):
            self._stop_and_export(window)
            self._stopped_at = step
            return
        self._enter_step_range(step)

    def _extend(self, window: Window, step: int) -> bool:
        """A window due at this very step continues the one ending now (no stop and begin on one boundary);
        False when none is due, or the two together would hold more than MAX_WINDOW_STEPS. One due at the next
        step is not merged: it begins a step later, without warm-up (a schedule keeps its windows apart)."""
        due = self._pick_window(step, ahead=0)
        if due is None:
            return False
        last = max(due.last, step)
        if last - window.first + 1 > MAX_WINDOW_STEPS:
            self.log.info(f"profiler window {due.first}-{due.last} ({due.source}) waits: one window holds at most "
                          f"{MAX_WINDOW_STEPS} steps")  # fmt: skip
            with self._lock:
                self._requests.insert(0, Window(step + 1, due.last - step, due.source))
            return False
        window.steps = last - window.first + 1
        window.source = f"{window.source}+{due.source}"
        self.log.info(f"profiler window extended to steps {window.first}-{window.last} ({due.source})")
        return True

    def _maybe_begin(self, step: int) -> None:
        window = self._pick_window(step)
        if window is None:
            return
        if window.first < step:
            window.first = step  # a late request: start now, without warm-up
        self._prof = self._make_profiler()
        self._window = window
        self._prof.prepare_trace()
        if window.first == step:
            self._prof.start_trace()
            self._enter_step_range(step)
        self.log.info(f"profiler window steps {window.first}-{window.last} ({window.source})")

    def _pick_window(self, step: int, ahead: int = 1) -> Window | None:
        """The window to warm up now: one starting at the next step (AHEAD 1), or one already due."""
        with self._lock:
            for i, window in enumerate(self._requests):
                if window.first <= step + ahead:
                    return self._requests.pop(i)
        scheduled = self._scheduled
        if scheduled is None or scheduled > step + ahead:
            return None
        self._scheduled = scheduled + self.every if self.every else None
        if scheduled < step:
            # The hook came late (installed mid-run): skip missed windows of a series, but take a
            # single window now rather than never.
            if self._scheduled is not None:
                return self._pick_window(step, ahead)
            scheduled = step
        return Window(first=scheduled, steps=self.active, source="schedule")

    def _plan_next(self, step: int) -> None:
        if self._prof is not None:
            self.next_boundary = step + 1
            return
        if self._failures >= MAX_FAILURES:
            self.next_boundary = NEVER  # profiling is off
            return
        candidates = [NEVER]
        if self._scheduled is not None:
            candidates.append(self._scheduled - 1)
        # Under the lock: a request arriving meanwhile must not be overwritten by a stale plan.
        with self._lock:
            candidates += [w.first - 1 for w in self._requests]
            self.next_boundary = max(step + 1, min(candidates)) if min(candidates) < NEVER else NEVER

    def _make_profiler(self) -> Any:
        import torch
        from torch.profiler import ProfilerActivity, profile

        activities = [ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(ProfilerActivity.CUDA)
        return profile(activities=activities, record_shapes=True, with_flops=self.flops, profile_memory=self.memory)

    def _enter_step_range(self, step: int) -> None:
        from torch.autograd import profiler as autograd_profiler

        self._step_range = autograd_profiler.record_function(f"ProfilerStep#{step}")
        self._step_range.__enter__()

    def _exit_step_range(self) -> None:
        if self._step_range is not None:
            step_range, self._step_range = self._step_range, None
            step_range.__exit__(None, None, None)

    def _stop_and_export(self, window: Window) -> None:
        prof, self._prof, self._window = self._prof, None, None
        prof.stop_trace()
        self.traces_dir.mkdir(parents=True, exist_ok=True)
        final = self.traces_dir / f"rank{self.rank}.step{window.first}-{window.last}.pt.trace.json.gz"
        raw = final.with_name(f".{final.name[: -len('.gz')]}.tmp")
        # Kineto writes RAW.tmp and renames it; on a full disk it may leave that behind without raising.
        kineto_tmp = raw.with_name(raw.name + ".tmp")
        try:
            prof.export_chrome_trace(str(raw))
        except BaseException:  # a full disk: neither our file nor torch's temporary stays behind
            with contextlib.suppress(OSError):
                raw.unlink()
            raise
        finally:
            with contextlib.suppress(OSError):
                kineto_tmp.unlink()
        _release(prof)
        thread = threading.Thread(target=self._compress, args=(raw, final), name="scope-hook-gzip", daemon=False)
        self._exports = [t for t in self._exports if t.is_alive()] + [thread]
        thread.start()
        self._failures = 0

    def _compress(self, raw: Path, final: Path) -> None:
        tmp = final.with_name(f".{final.name}.tmp")
        try:
            with open(raw, "rb") as src, gzip.open(tmp, "wb", compresslevel=6) as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            os.replace(tmp, final)
            self.written.append(final)
            self.log.info(f"wrote {final.name}")
        except Exception as exc:
            self.log.error(f"compressing {raw}", exc)
            with contextlib.suppress(OSError):
                tmp.unlink()
        finally:
            with contextlib.suppress(OSError):
                raw.unlink()

    def _fail(self, what: str, exc: BaseException) -> None:
        self._failures += 1
        self.log.error(what, exc)
        try:
            self._exit_step_range()
        except Exception:
            self._step_range = None
        prof, self._prof, self._window = self._prof, None, None
        if prof is not None:
            with contextlib.suppress(Exception):
                prof.stop_trace()
            _release(prof)
        if self._failures >= MAX_FAILURES:
            self.log.info(f"profiling switched off after {MAX_FAILURES} failures in a row")


def _release(prof: Any) -> None:
    """Free a stopped window's results now (the training thread, no session running): left to the garbage
    collector, they were freed during the next window or at interpreter exit, where the rank crashed."""
    with contextlib.suppress(Exception):
        inner = prof.profiler
        prof.profiler = None
        if inner is not None:
            inner.kineto_results = None
            inner._function_events = None
            inner._old_function_events = None
