"""The in-process hook of one rank: step clock, heartbeat, profiler windows, triggers and dumps.

Work on the training thread is one integer increment and one comparison per optimizer step;
everything else (heartbeat writes, polling `control/`, dumps, trace compression) happens on a
daemon thread that wakes twice a second. Every error is caught and written to `hook.log`.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import json
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from types import FrameType, ModuleType, TracebackType
from typing import Any

from scope.collectors.hook.config import HookConfig
from scope.collectors.hook.control import Request, RequestPoller
from scope.collectors.hook.dumps import Dumper, pick_dump_signal
from scope.collectors.hook.endings import die_by_sigterm, write_error_file
from scope.collectors.hook.hooklog import HookLog
from scope.collectors.hook.importwatch import call_after_import
from scope.collectors.hook.lifecycle import LifeRecorder
from scope.collectors.hook.streams import LastWords, SafeStream, dropped, guard_std_streams, refused_summary
from scope.collectors.hook.where import main_thread_site
from scope.collectors.hook.windows import ProfilerWindows

from scope.rundir import fr_dir, heartbeat_path, rank_dir, stacks_dir, traces_dir

# Rank variables of the launchers we know, in order of preference.
RANK_VARS = ("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK")
LOCAL_RANK_VARS = ("LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID")
# A dump request and the SIGUSR2 that follows it describe one event: one dump, not two.
DUMP_DEDUP_S = 3.0
# After SIGTERM, how long the hook thread waits for the main thread's handler before ending the
# process itself (the main thread may be blocked in a collective and never get to it).
MAIN_SIGTERM_GRACE_S = 1.0
# Without the hook, SIGTERM ends a rank at once; with it, the rank dumps and saves its profiler window
# first. This C-level deadline bounds that even when no Python code can run any more, inside the
# launchers' grace before SIGKILL (torchrun's, and Slurm's KillWait default: 30 s).
SIGTERM_DEADLINE_S = 25.0
# The heartbeat is rewritten at least this often even without progress: it shows the rank alive.
HEARTBEAT_REFRESH_S = 10.0
# Step rate over the last writes of the heartbeat (about RATE_MARKS * heartbeat_s seconds).
RATE_MARKS = 20
# An optimizer that is not the step clock but stepped this often since the clock last did takes over.
CLOCK_HANDOVER = 3


def env_rank(names: tuple[str, ...]) -> int | None:
    for name in names:
        value = os.environ.get(name)
        if value not in (None, ""):
            with contextlib.suppress(ValueError):
                return int(value)
    return None


class Hook:
    def __init__(self, config: HookConfig) -> None:
        self.config = config
        self.log = HookLog()
        self.rank: int | None = config.rank if config.rank is not None else env_rank(RANK_VARS)
        self.local_rank = env_rank(LOCAL_RANK_VARS)
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.started_ns = time.time_ns()
        self.active = True
        self.step = 0  # optimizer steps completed = index of the step now running
        self.last_step_ns: int | None = None
        self.state = "running"
        self.backend: str | None = None
        self.windows: ProfilerWindows | None = None
        self.dumper: Dumper | None = None
        self.memory: Any = None  # memsnap.MemorySnapshots when armed by the configuration
        self._explicit = False
        self._clock: int | None = None
        self._since_clock: dict[int, int] = {}
        self._poller = RequestPoller(config.run_dir, since_ns=self.started_ns)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._hb_step: int | None = None
        self._hb_where: str | None = None
        self._hb_saving: int | None = None
        self._hb_at = 0.0
        # The heartbeat is written from the hook thread, the training thread (start, exit) and signal
        # paths: one writer at a time, so the due-check and the write are one step.
        self._hb_lock = threading.Lock()
        self._rate_marks: collections.deque[tuple[float, int]] = collections.deque(maxlen=RATE_MARKS)
        self._last_dump = -1e9
        self._prev_excepthook = sys.excepthook
        self._prev_sigterm: Any = None
        self._exited = False
        self._term_lock = threading.Lock()
        self._main_sigterm = False
        # On the way out (interpreter exit begun): a SIGTERM then only ends the rank
        self._exiting = False
        self._in_exit_hook = False  # the main thread is in the exception hook, writing the evidence
        self._sigterm_pending = False  # a SIGTERM came meanwhile: the exception hook ends the rank when done
        self._sigterm_seen = False  # a SIGTERM the job's own handler took: the rank's end says so
        self._jobs_sigterm_once = threading.Lock()
        self._deadline_armed = False
        self.life = LifeRecorder(config.run_dir, self.log, lambda: self.step, lambda: self.last_step_ns)
        self.streams: dict[str, SafeStream] = {}
        self.last_words: LastWords | None = None
        self.dump_signal: int | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        try:  # a full or read-only run directory costs the rank's output, never the rank
            self.streams = guard_std_streams()
        except Exception as exc:
            self.log.error("guarding stdout/stderr", exc)
        if self.rank is not None:
            self._setup_outputs()
        self._install_exit_paths()
        call_after_import("torch.optim.optimizer", self._register_optimizer_hook)
        self.life.install(self.config.time_ddp)
        self._thread = threading.Thread(target=self._poll_loop, name="scope-hook", daemon=True)
        self._thread.start()

    def _setup_outputs(self) -> None:
        """Per-rank files; needs the rank (from the environment, or later from torch.distributed)."""
        assert self.rank is not None
        run_dir, rank = self.config.run_dir, self.rank
        self.log.prefix = f"rank={rank} pid={self.pid}"
        self.log.open(rank_dir(run_dir, rank) / "hook.log")
        self.log.info(f"hook active: run_dir={run_dir} host={self.host} config={self.config}")
        if self.streams:  # the rank's output goes to files in the run directory: keep room for its last words
            self.last_words = LastWords(rank_dir(run_dir, rank) / ".scope-last-words")
            try:
                self.last_words.hold()
            except Exception as exc:
                self.log.error("keeping room for the rank's last words", exc)
        cfg = self.config
        self.windows = ProfilerWindows(
            traces_dir(run_dir, rank),
            rank,
            self.log,
            start=cfg.profile_start,
            every=cfg.profile_every,
            active=cfg.profile_active,
            flops=cfg.profile_flops,
            memory=cfg.profile_memory,
        )
        if cfg.memory_snapshot_entries > 0:
            from scope.collectors.hook.memsnap import MemorySnapshots

            self.memory = MemorySnapshots(rank_dir(run_dir, rank) / "memory", self.log, cfg.memory_snapshot_entries)
        self.dumper = Dumper(fr_dir(run_dir, rank), stacks_dir(run_dir, rank), self.log, rank, cfg.dump_timeout_s)
        if threading.current_thread() is threading.main_thread():
            self._install_sigterm()
        self.dumper.register_faulthandler(signal.SIGUSR2, "faulthandler.txt")  # `kill -USR2 PID` by hand
        # The watchdog's own signal is one the job does not use (its SIGUSR2 handler must never fire).
        self.dump_signal = pick_dump_signal()
        if self.dump_signal is not None:
            self.dumper.register_faulthandler(self.dump_signal, "faulthandler.txt")
        self.dumper.register_faulthandler(signal.SIGTERM, "sigterm.txt")
        self.life.start(rank)  # before the first heartbeat: it reads the previous attempt's last one
        self.write_heartbeat(force=True)

    def _install_exit_paths(self) -> None:
        import atexit

        atexit.register(self._on_exit)
        _call_before_threads_are_joined(self._on_shutdown_start)
        sys.excepthook = self._excepthook
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._forked)

    def _install_sigterm(self) -> None:
        """On SIGTERM (torchrun ending the survivors of a failure), dump first, then die as before."""
        previous = signal.getsignal(signal.SIGTERM)
        if previous is signal.SIG_IGN:
            return
        self._prev_sigterm = previous
        signal.signal(signal.SIGTERM, self._on_sigterm)

    def _register_optimizer_hook(self, module: ModuleType) -> None:
        try:
            module.register_optimizer_step_post_hook(self.on_optimizer_step)
            self.log.info("optimizer step hook registered")
        except Exception as exc:
            self.log.error("registering the optimizer step hook", exc)

    # -- the step clock (training thread) ------------------------------------------------------
    def on_optimizer_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if not self.active or self._explicit:
            return
        try:
            key = id(optimizer)
            if self._clock is None:
                self._clock = key
            if key != self._clock:
                # Several optimizers: the first one is the clock; if it stopped stepping (it was
                # replaced, e.g. after loading a checkpoint), the busiest other one takes over.
                count = self._since_clock.get(key, 0) + 1
                self._since_clock[key] = count
                if count < CLOCK_HANDOVER:
                    return
                self._clock = key
            self._since_clock.clear()
            self._advance()
        except Exception as exc:
            self.log.error("optimizer step hook", exc)

    def explicit_step(self) -> None:
        """`scope.collectors.hook.step()`: the job marks its steps itself; optimizer steps stop counting."""
        if not self.active:
            return
        self._explicit = True
        try:
            self._advance()
        except Exception as exc:
            self.log.error("step()", exc)

    def _advance(self) -> None:
        if self.memory is not None and not self.memory.tried:
            self.memory.arm()
        self.step += 1
        self.last_step_ns = time.time_ns()
        windows = self.windows
        if windows is not None and self.step >= windows.next_boundary:
            windows.on_boundary(self.step)

    # -- the hook thread ----------------------------------------------------------------------
    def _poll_loop(self) -> None:
        while not self._stop.wait(self.config.poll_s):
            if not self.active:
                return
            try:
                self._tick()
            except Exception as exc:
                self.log.error("hook thread", exc)
            self.life.hook_cpu_ns = time.thread_time_ns()  # this thread's own cost, in the attempt's end record

    def _tick(self) -> None:
        if self.rank is None:
            self._resolve_rank()
            return
        self._detect_backend()
        self.write_heartbeat()
        self.life.tick()
        dumper = self.dumper
        self._keep_seeing_sigterm()
        if dumper is not None and dumper.signal_arrived(signal.SIGTERM):
            self._sigterm_seen_by_thread()
            return
        signalled = dumper is not None and dumper.signal_arrived(signal.SIGUSR2)
        if dumper is not None and self.dump_signal is not None and dumper.signal_arrived(self.dump_signal):
            signalled = True
        # The watchdog writes its dump request before it signals: read requests first, so one
        # event gives one dump, named after its reason.
        for request in self._poller.poll(force=signalled):
            self._handle(request)
        if signalled and time.monotonic() - self._last_dump > DUMP_DEDUP_S:
            self.dump("sigusr2")

    def _handle(self, request: Request) -> None:
        self.log.info(f"control request {request.id}: {request.to_dict()}")
        if request.kind == "profile" and self.windows is not None:
            self.windows.request(request.steps, request.at_step, request.id, self.step)
        elif request.kind == "dump":
            self.dump(request.reason or "request")
        elif request.kind == "memory_snapshot" and self.rank is not None:
            if self.memory is None:
                from scope.collectors.hook.memsnap import MemorySnapshots

                self.memory = MemorySnapshots(rank_dir(self.config.run_dir, self.rank) / "memory", self.log, 0)
                self.memory.tried = True  # asked for once: no history is armed behind the job's back
            self.memory.on_request()

    def _resolve_rank(self) -> None:
        """No rank variable: torch.distributed's rank once initialized; a job that trains without
        it (one process) is rank 0."""
        dist = _initialized_dist()
        if dist is not None:
            self.rank = dist.get_rank()
        elif self.step > 0:
            self.rank = 0
        else:
            return
        self._setup_outputs()

    def _detect_backend(self) -> None:
        if self.backend is None and (dist := _initialized_dist()) is not None:
            self.backend = str(dist.get_backend())

    def dump(self, reason: str, *, stacks: bool = True) -> list[Path]:
        if self.dumper is None:
            return []
        self._last_dump = time.monotonic()
        return self.dumper.dump(reason, stacks=stacks, fr=self._used_distributed())

    def _used_distributed(self) -> bool:
        """Whether there is a Flight Recorder worth dumping (torch imports torch.distributed anyway)."""
        self._detect_backend()
        return self.backend is not None

    def write_heartbeat(self, force: bool = False) -> None:
        if self.rank is None:
            return
        with self._hb_lock:
            now = time.monotonic()
            changed = self.step != self._hb_step
            due = now - self._hb_at >= (self.config.heartbeat_s if changed else HEARTBEAT_REFRESH_S)
            where = None if changed else self._stalled_where()
            saving = self.life.saving_ns
            if not (force or due or (where is not None and self._hb_where is None) or saving != self._hb_saving):
                return  # a stall, and a checkpoint save's start and end, are said at once
            self._hb_step, self._hb_at, self._hb_where, self._hb_saving = self.step, now, where, saving
            self._rate_marks.append((now, self.step))
            try:
                _write_json(heartbeat_path(self.config.run_dir, self.rank), {**self.heartbeat(), "where": where})
            except Exception as exc:
                self.log.error("writing heartbeat.json", exc)

    def heartbeat(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "local_rank": self.local_rank,
            "host": self.host,
            "pid": self.pid,
            "step": self.step,
            "time_ns": self.last_step_ns,
            "started_ns": self.started_ns,
            "written_ns": time.time_ns(),
            "state": self.state,
            "backend": self.backend,
            "profiling": bool(self.windows is not None and self.windows.recording),
            "steps_per_s": self._step_rate(),
            "global_step": self.life.global_step,
            "attempt": self.life.attempt,
            "output_dropped": dropped(self.streams),
            "dump_signal": self._free_dump_signal(),
            "coll": self.life.collectives.last_entered(),
            "saving_ns": self.life.saving_ns,  # a checkpoint save in progress since then
            "saved_ns": self.life.saved_ns,  # the last one ended then
        }

    def _stalled_where(self) -> str | None:
        """Where the training thread stands once its step stalled (5 of its steps, at least 2 s): the live
        detector names a hang's culprit by it. Never looked at while the job steps."""
        if self.last_step_ns is None:
            return None
        rate = self._step_rate()
        stalled_s = (time.time_ns() - self.last_step_ns) / 1e9
        if stalled_s < max(2.0, 5.0 / rate if rate else 10.0):
            return None
        try:
            return main_thread_site()
        except Exception:
            return None

    def _free_dump_signal(self) -> int | None:
        """The dump signal while it is still the hook's: a job that later installs its own handler for
        it takes it back, and the watchdog then sends no signal at all."""
        signum = self.dump_signal
        try:
            return int(signum) if signum is not None and signal.getsignal(signum) in (signal.SIG_DFL, None) else None
        except (ValueError, OSError):
            return None

    def _step_rate(self) -> float | None:
        """Recent steps per second (start-up excluded), for `scope attach` to pick a common step."""
        marks = [m for m in self._rate_marks if m[1] > 0]
        if len(marks) < 2 or marks[-1][0] <= marks[0][0]:
            return None
        return round((marks[-1][1] - marks[0][1]) / (marks[-1][0] - marks[0][0]), 3)

    # -- endings ------------------------------------------------------------------------------
    def _on_exit(self) -> None:
        if not self.active or self._exited:
            return
        self._exiting = True
        self._exited = True
        self._stop.set()
        try:
            if self.windows is not None:
                self.windows.finish(self.step)
            if self.state == "running":
                self.state = "exited"  # also after a SIGTERM the job's own handler took: it chose to end
            for stream in self.streams.values():
                stream.flush()  # what the disk refuses now is counted in the last heartbeat
            self._say_refused()
            self.write_heartbeat(force=True)
            self.life.end(self.state, "SIGTERM" if self._sigterm_seen else None)
            self.dump("exit", stacks=False)
            self.log.info(f"exit after {self.step} steps")
        except Exception as exc:
            self.log.error("exit", exc)
        self._leave_sigterm_to_the_default()
        self.log.close()

    def _say_refused(self) -> bool:
        """Give back the room kept for the last words; when the disk refused output, say how much in hook.log
        (room it now has) and return True."""
        freed = self.last_words.give_back() if self.last_words is not None else False
        said = refused_summary(self.streams)
        if said is not None:
            self.log.info(said)
        return freed and said is not None

    def _excepthook(self, etype: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
        # On the main thread this is the rank's uncaught exception (a thread's error forwarded here ends
        # nothing; a job that calls it by hand on the main thread and goes on loses the SIGTERM dump only)
        if threading.current_thread() is not threading.main_thread():
            self._record_uncaught(etype, value, tb)
            return
        self._in_exit_hook = True
        try:
            self._record_uncaught(etype, value, tb)
        finally:
            self._in_exit_hook = False
            self._leave_sigterm_to_the_default()

    def _record_uncaught(self, etype: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
        printed = False
        try:
            if self.active and dropped(self.streams) and self._say_refused():
                # the disk is full: the traceback goes first, into the room just given back, before the error
                # file, heartbeat and dumps below take it
                printed = True
                self._prev_excepthook(etype, value, tb)
            if self.active and not issubclass(etype, KeyboardInterrupt):
                self.state = "exception"
                self.log.info(f"uncaught {etype.__name__}: {value}")
                write_error_file(etype, value, tb)
                self.write_heartbeat(force=True)
                self.life.end("exception")
                self.dump("exception")
                if self.memory is not None:
                    self.memory.dump("exception")
                self._finish_window()
        except Exception as exc:
            self.log.error("exception hook", exc)
        if not printed:
            self._prev_excepthook(etype, value, tb)

    def _on_shutdown_start(self) -> None:
        """The interpreter starts to exit (main thread, before it joins the job's non-daemon threads and
        before the atexit handlers, the job's included; only threading exit callbacks registered after the
        hook's, such as concurrent.futures' executor join, run before it): the rank is on its way out."""
        self._exiting = True
        self._leave_sigterm_to_the_default()

    def _leave_sigterm_to_the_default(self) -> None:
        """The rank is on its way out and its evidence is written: from now on SIGTERM ends it at once, as it
        would without the hook, and a SIGTERM that arrived meanwhile ends it now. Otherwise the signal is
        only a flag for a Python handler that may never run again: in a clean-clone CI run (2026-12-07) two
        ranks exiting on a closed gloo connection got torchrun's SIGTERM, the hook began a dump that never
        finished, and torchrun SIGKILLed them 30 s later."""
        if not self.active or self.dumper is None or threading.current_thread() is not threading.main_thread():
            return
        if not self._sigterm_is_ours() or self._job_handles_sigterm():
            return  # the job's own SIGTERM handler decides, as it would without the hook
        fatal = self.dumper.make_sigterm_fatal()
        if self._sigterm_pending:
            self.log.info("SIGTERM arrived while exiting: ending now")
            self.log.close()
            if fatal:
                os.kill(os.getpid(), signal.SIGTERM)
            die_by_sigterm()

    def _on_sigterm(self, signum: int, frame: FrameType | None) -> None:
        """Main-thread SIGTERM handler (runs when the main thread is in Python code)."""
        # Called by the interpreter, the caller's frame is the one the signal interrupted (None: no Python
        # frame under it); called by a handler of the job's (one that put the old handler back, then called
        # it), it is that handler's.
        try:
            caller: FrameType | None = sys._getframe(1)
        except ValueError:
            caller = None
        if caller is not frame or self._job_handles_sigterm():
            self._dump_for_the_jobs_handler()
            if callable(self._prev_sigterm):
                self._prev_sigterm(signum, frame)
            return
        self._main_sigterm = True  # only where this handler ends the rank: the hook thread leaves it to it
        if self._in_exit_hook:  # the exception hook is writing the evidence: it ends the rank when done
            self._sigterm_pending = True
            self._arm_sigterm_deadline()
            return
        self._arm_sigterm_deadline()
        try:
            self._dump_before_termination()
            self._finish_window()
        finally:  # a KeyboardInterrupt raised meanwhile must not turn the SIGTERM into one the job survives
            # Die of the same signal, so the launcher still sees "killed by SIGTERM".
            if threading.current_thread() is threading.main_thread():
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                os.kill(os.getpid(), signal.SIGTERM)
            die_by_sigterm()

    def _sigterm_seen_by_thread(self) -> None:
        """SIGTERM arrived while the main thread is blocked (say, in a collective): dump from the hook
        thread, then end the process as SIGTERM would have, instead of waiting for the launcher's
        SIGKILL."""
        if self._job_handles_sigterm():
            self._dump_for_the_jobs_handler()
            return  # the job's own handler decides, whenever its main thread gets to run it
        self._arm_sigterm_deadline()
        if self._exiting or self._in_exit_hook:  # its evidence is written (or being written): only the ending
            self.log.info("SIGTERM while the rank is exiting: not dumping again")
        else:
            self._dump_before_termination()
        deadline = time.monotonic() + MAIN_SIGTERM_GRACE_S
        while time.monotonic() < deadline:
            if self._main_sigterm:
                return  # the main thread is handling it (and saving a profiler window): let it
            time.sleep(0.05)
        self.log.close()
        die_by_sigterm()

    def _sigterm_is_ours(self) -> bool:
        try:
            return bool(signal.getsignal(signal.SIGTERM) == self._on_sigterm)
        except (ValueError, OSError):
            return False

    def _job_handles_sigterm(self) -> bool:
        """Whether the job decides what SIGTERM does (the hook then only dumps): a handler that was there
        before the hook, which the hook chains to; one the job installed after it, which may call the
        hook's in its turn (Lightning's composes with the handler it found, then stops at the next step:
        ending the rank there would undo the job's choice; without the hook it goes on); or SIGTERM
        ignored, as the job was started."""
        if callable(self._prev_sigterm):
            return True
        try:
            current = signal.getsignal(signal.SIGTERM)
        except (ValueError, OSError):
            return False
        return current is signal.SIG_IGN or (callable(current) and current != self._on_sigterm)

    def _keep_seeing_sigterm(self) -> None:
        """A job that took SIGTERM's handler and put the hook's back (Lightning at teardown, or a save that
        defers SIGTERM for a moment) replaced faulthandler's C-level handler on the way: register it again,
        or a SIGTERM that comes while the main thread is blocked in C goes unseen until the launcher's
        SIGKILL."""
        if self.dumper is None or self._exiting or not self._sigterm_is_ours():
            return
        if self.dumper.sigterm_stacks_replaced():
            self.dumper.register_sigterm_stacks_again()

    def _dump_for_the_jobs_handler(self) -> None:
        """SIGTERM under the job's own handler: stacks, Flight Recorder and memory as the signal came, once;
        the rank's end is recorded when (and if) it ends."""
        if not self.active or not self._jobs_sigterm_once.acquire(blocking=False):
            return  # never released: one dump per process
        self._sigterm_seen = True
        try:
            self.log.info("SIGTERM: dumping; the job's own handler decides what follows")
            self.write_heartbeat(force=True)
            self.dump("sigterm")
            if self.memory is not None:
                self.memory.dump("sigterm")
        except Exception as exc:
            self.log.error("SIGTERM handling", exc)

    def _arm_sigterm_deadline(self) -> None:
        """The rank would have died of this SIGTERM at once without the hook: bound how long the hook keeps
        it (C-level, so a wedged dump or a frozen thread cannot stretch it to the launcher's SIGKILL). Once:
        a later SIGTERM never pushes it back."""
        if not self.active or self.dumper is None or self._deadline_armed or self._job_handles_sigterm():
            return
        self._deadline_armed = True
        self.dumper.arm_exit_deadline(SIGTERM_DEADLINE_S)

    def _dump_before_termination(self) -> None:
        # Held during the dump: whoever comes second waits for it, but never longer than a dump may take.
        if not self._term_lock.acquire(timeout=self.config.dump_timeout_s + 1.0):
            return
        try:
            if self._exited:
                return
            self._exited = True
            if self.active:
                self.state = "terminated"
                self.log.info("SIGTERM: dumping before exit")
                self.write_heartbeat(force=True)
                self.life.end("terminated", "SIGTERM")
                self.dump("sigterm")
                if self.memory is not None:  # a peer's OOM ends this rank: its memory as it was
                    self.memory.dump("sigterm")
        except Exception as exc:
            self.log.error("SIGTERM handling", exc)
        finally:
            self._term_lock.release()

    def _finish_window(self) -> None:
        """Keep the steps a profiler window caught before the job ended (training thread only)."""
        if self.active and self.windows is not None:
            self.windows.finish(self.step)

    def _forked(self) -> None:
        """A forked child (a DataLoader worker) is not the rank: it stays silent."""
        self.active = False
        self._exited = True
        if self.dumper is not None:
            self.dumper.unregister_faulthandlers()


def _call_before_threads_are_joined(fn: Any) -> None:
    """threading's own exit callbacks run as the interpreter starts to exit, before it joins non-daemon
    threads and before atexit's handlers (the job's, registered after the hook's, run first)."""
    register = getattr(threading, "_register_atexit", None)
    if register is not None:
        with contextlib.suppress(RuntimeError):  # already shutting down
            register(fn)


def _initialized_dist() -> Any:
    """torch.distributed once the job initialized it; never imports it (nor races its import)."""
    dist = sys.modules.get("torch.distributed")
    is_initialized = getattr(dist, "is_initialized", None)  # absent while torch is still importing
    try:
        return dist if is_initialized is not None and is_initialized() else None
    except Exception:
        return None


_TMP_SERIAL = itertools.count()


def _write_json(path: Path, data: dict[str, Any]) -> None:
    """Atomic replace through a temporary name unique to this write (pid, thread, serial): two writers
    never rename each other's file away (the race that logged FileNotFoundError in hook.log).

    When the disk refuses the new file (full), the temporary is removed and the old file is overwritten
    in place: its blocks exist already, so the heartbeat keeps beating and the watchdog sees no false
    hang. A reader may then see a torn beat once; it skips it."""
    text = json.dumps(data)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.{next(_TMP_SERIAL)}.tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if not _overwrite_in_place(path, text):
            raise


def _overwrite_in_place(path: Path, text: str) -> bool:
    try:
        with open(path, "r+b") as fh:
            old = fh.seek(0, os.SEEK_END)
            fh.seek(0)
            fh.write(text.encode().ljust(old))  # padded with spaces: still one JSON value, no truncate
        return True
    except OSError:
        return False
