"""The job's life as one rank sees it: attempts, step progress, checkpoint saves and loads.

Three append-only JSON-lines files per rank (RUN/ranks/<r>/), read by `scope goodput`
(analyzers/goodput/records.py):

    attempts.jsonl     {"event": "start", "attempt", "pid", "time_ns", "proc_start_ns", "restart_count",
                        "world_size", "nodes"}
                       {"event": "previous", ...the last heartbeat the previous process of this rank left}
                       {"event": "end", "state", "step", "global_step", "time_ns", "last_step_ns", "signal",
                        "cpu_ns" (the process's CPU time), "hook_cpu_ns" (the hook thread's)}
    progress.jsonl     {"step", "global_step", "t_ns", "attempt", "data_ns", "cpu_ns", "wait_ns", "span_ns"}: the
                       time the step completed, written from the hook thread when the step moved (at most once
                       per poll, never from the job's thread); `data_ns` is the time the training thread waited
                       for its next batch since the line before (DataLoader iterators' __next__: two clock reads
                       and one add per batch); `cpu_ns` / `wait_ns` its CPU time and run-queue wait over the
                       `span_ns` since the line before (collectors/hook/where.py, read by the hook thread);
                       `comm_ns` {group: ns} in collectives and `coll` [[group, op, calls, bytes, ns, seq]]
                       since the line before (collectors/hook/collectives.py); `ckpt_ns` the time in checkpoint
                       saves since the line before
    checkpoints.jsonl  {"op": "save"|"load", "api", "path", "step", "global_step", "attempt", "start_ns",
                       "dur_ns", "bytes", "background_ns"}

Checkpoint calls are wrapped by collectors/hook/checkpoints.py (what counts as a checkpoint load, and as a
resume, is said there). Every record file is read guarded (scope.recordio: regular files only, without
blocking, bounded) and appended to without blocking: a FIFO where a record belongs must not stop the job.
"""

from __future__ import annotations

import json
import os
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from scope.collectors.hook.checkpoints import CHECKPOINTS, CheckpointRecorder
from scope.collectors.hook.collectives import CollectiveTimer
from scope.collectors.hook.ddp_reducer import DdpReducerTimer
from scope.collectors.hook.importwatch import call_after_import
from scope.collectors.hook.where import MainThreadClock

from scope.recordio import HOOK_ATTEMPT, read_json, read_records
from scope.rundir import heartbeat_path, rank_dir

ATTEMPTS = "attempts.jsonl"
PROGRESS = "progress.jsonl"
# How long the first progress line waits for the checkpoint loads queued before it (a resume sets the
# global step it carries); on the hook thread, never the job's.
RESUME_WAIT_S = 1.0
# The hook reads its own records once, at start, on the job's thread: a rank's attempts are a few lines.
HOOK_READ_BYTES = 16 << 20
_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def process_start_ns() -> int | None:
    """When this process was created (Linux /proc), so initialization counts from the real start, imports
    included, not from when the hook got to run."""
    try:
        with open("/proc/self/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        # The process's age from /proc/uptime (1/100 s), not btime + starttime: btime is whole seconds, so
        # that sum put a start up to 1 s early, before the previous attempt's last step on a requeue.
        with open("/proc/uptime") as fh:
            uptime_s = float(fh.read().split()[0])
        age_s = max(0.0, uptime_s - int(fields[19]) / _CLK_TCK)
        return time.time_ns() - int(age_s * 1e9)
    except (OSError, ValueError, IndexError):
        return None


class LifeRecorder:
    """Owned by the Hook; every method swallows its errors into the hook log."""

    def __init__(
        self, run_dir: Path, log: Any, step: Callable[[], int], last_step_ns: Callable[[], int | None]
    ) -> None:
        self.run_dir = run_dir
        self.rank: int | None = None  # known once the hook knows its rank; nothing is recorded before
        self.pid = os.getpid()
        self.log = log
        self._step = step
        self._last_step_ns = last_step_ns
        self.attempt = 0
        self.base = 0  # global step = base + local step (set by a load that resumes a saved step)
        self._written_step: int | None = None
        self._ended = False
        self.hook_cpu_ns = 0  # the hook thread's CPU time, as it last read it
        self.data_wait_ns = 0  # the training thread's time in DataLoader __next__, ever growing
        self.save_ns = 0  # the job's time in checkpoint saves, ever growing (collectors/hook/checkpoints.py)
        self.saving_ns: int | None = None  # when the save in progress started
        self.saved_ns: int | None = None  # when the last save ended
        self._written_save_ns = 0
        self._written_data_ns = 0
        self._lock = threading.Lock()
        self.checkpoints = CheckpointRecorder(self)
        self.clock = MainThreadClock()
        self.collectives = CollectiveTimer(log)
        self.ddp = DdpReducerTimer(log)
        self._written_clock = (time.monotonic_ns(), self.clock.read())

    @property
    def dir(self) -> Path:
        return rank_dir(self.run_dir, self.rank or 0)

    # -- files ------------------------------------------------------------------------------
    def _append(self, name: str, record: dict[str, Any]) -> None:
        self.append_records(name, [record])

    def append_records(self, name: str, records: list[dict[str, Any]]) -> None:
        """Append to a record file of this rank: without blocking (a FIFO there has no reader, or one that
        is not ours), and only to a regular file."""
        if self.rank is None:
            return
        try:
            data = "".join(json.dumps(r) + "\n" for r in records).encode()
            with self._lock:
                fd = os.open(self.dir / name, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK, 0o644)
                try:
                    if not stat.S_ISREG(os.fstat(fd).st_mode):
                        raise OSError(f"{self.dir / name}: not a regular file; scope's records are not written")
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view) :]
                finally:
                    os.close(fd)
        except Exception as exc:
            self.log.error(f"writing {name}", exc)

    def _read(self, name: str) -> list[dict[str, Any]]:
        warnings: list[str] = []
        out = read_records(self.dir / name, HOOK_ATTEMPT, warnings, HOOK_READ_BYTES)
        for said in warnings:
            self.log.info(said)
        return out

    @property
    def global_step(self) -> int:
        return self.base + self._step()

    # -- attempts -----------------------------------------------------------------------------
    def start(self, rank: int) -> None:
        self.rank, pid = rank, self.pid
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            starts = [r for r in self._read(ATTEMPTS) if r.get("event") == "start"]
            self.attempt = len(starts)
            previous = read_json(heartbeat_path(self.run_dir, self.rank))
            if previous and previous.get("pid") != pid and starts:
                self._append(ATTEMPTS, {"event": "previous", "attempt": self.attempt - 1, **previous})
            record = {
                "event": "start",
                "attempt": self.attempt,
                "pid": pid,
                "time_ns": time.time_ns(),
                "proc_start_ns": process_start_ns(),
                "restart_count": os.environ.get("TORCHELASTIC_RESTART_COUNT"),
                "slurm_restart_count": os.environ.get("SLURM_RESTART_COUNT"),
                # the group this attempt ran in: a change between attempts is an elastic membership change
                "world_size": _env_int("WORLD_SIZE"),
                "nodes": _env_int("GROUP_WORLD_SIZE"),
            }
            self._append(ATTEMPTS, record)
            self._remember_saves()
        except Exception as exc:
            self.log.error("recording the attempt start", exc)

    def _remember_saves(self) -> None:
        """The checkpoints earlier attempts of this rank (and rank 0) saved: a load of one before the first
        step is a resume. Read once, guarded and bounded, before the job trains."""
        if not self.attempt and self.rank == 0:
            return
        paths = [self.dir / CHECKPOINTS]
        if self.rank != 0:
            paths.append(rank_dir(self.run_dir, 0) / CHECKPOINTS)
        warnings: list[str] = []
        self.checkpoints.remember_earlier_saves(paths, warnings)
        for said in warnings:
            self.log.info(said)

    def end(self, state: str, signal_name: str | None = None) -> None:
        if self.rank is None or self._ended:
            return
        self._ended = True
        self.checkpoints.flush()
        step = self._step()
        self.tick()
        self._append(
            ATTEMPTS,
            {
                "event": "end",
                "attempt": self.attempt,
                "state": state,
                "step": step,
                "global_step": self.base + step,
                "time_ns": time.time_ns(),
                "last_step_ns": self._last_step_ns(),
                "signal": signal_name,
                # what the process and the hook thread used: the job's side of benchmarks/live.py --overhead
                "cpu_ns": time.process_time_ns(),
                "hook_cpu_ns": self.hook_cpu_ns,
            },
        )

    def tick(self) -> None:
        """From the hook thread: one progress line when the step moved since the last one."""
        step, t_ns = self._step(), self._last_step_ns()
        if self.rank is None or step == self._written_step or t_ns is None:
            return
        if self._written_step is None:
            self.checkpoints.flush(RESUME_WAIT_S)  # loads before the first step may set the global step
        self._written_step = step
        waited = self.data_wait_ns  # one read: the training thread only ever adds to it
        record = {"step": step, "global_step": self.base + step, "t_ns": t_ns, "attempt": self.attempt}
        if waited != self._written_data_ns:
            record["data_ns"] = waited - self._written_data_ns
            self._written_data_ns = waited
        saved = self.save_ns
        if saved != self._written_save_ns:
            record["ckpt_ns"] = saved - self._written_save_ns
            self._written_save_ns = saved
        self._add_clock(record)
        self._add_collectives(record)
        self._append(PROGRESS, record)

    def _add_clock(self, record: dict[str, Any]) -> None:
        """The training thread's CPU time and run-queue wait since the line before (live stragglers)."""
        now, clock = time.monotonic_ns(), self.clock.read()
        then, before = self._written_clock
        if clock is not None and before is not None:
            record.update(cpu_ns=clock[0] - before[0], wait_ns=clock[1] - before[1], span_ns=now - then)
        self._written_clock = (now, clock)

    def _add_collectives(self, record: dict[str, Any]) -> None:
        """Time in collectives since the line before: per group, and per (group, op) calls, bytes, ns, seq."""
        try:
            per_group, rows = self.collectives.since_last()
        except Exception as exc:
            self.log.error("reading the collective timers", exc)
            return
        if per_group:
            record.update(comm_ns=per_group, coll=rows)
        if self.collectives.dropped:
            record["coll_dropped"] = self.collectives.dropped

    # -- checkpoints ---------------------------------------------------------------------------
    def install(self, time_ddp: bool = False) -> None:
        call_after_import("torch.serialization", self.checkpoints.wrap_torch)
        call_after_import("torch.distributed.checkpoint", self.checkpoints.wrap_dcp)
        call_after_import("torch.utils.data.dataloader", self._wrap_dataloader)
        call_after_import("torch.distributed", self.collectives.wrap)
        if time_ddp:
            call_after_import("torch.nn.parallel.distributed", self.ddp.wrap)

    # -- data stalls ---------------------------------------------------------------------------
    def _wrap_dataloader(self, module: ModuleType) -> None:
        """Time every DataLoader iterator's __next__ called from the main thread (the base class's: the
        single- and multi-process iterators only override _next_data). A batch that is ready costs two clock
        reads and a thread id."""
        cls = getattr(module, "_BaseDataLoaderIter", None)
        original = getattr(cls, "__next__", None)
        if cls is None or not callable(original) or getattr(original, "_scope_wrapped", False):
            return
        recorder, clock, ident = self, time.perf_counter_ns, threading.get_ident
        # The training loop's thread: a prefetching thread of the job's own waits for batches without
        # stalling training.
        main = threading.main_thread().ident

        def __next__(it: Any) -> Any:
            t0 = clock()
            try:
                return original(it)
            finally:
                if ident() == main:
                    recorder.data_wait_ns += clock() - t0

        __next__._scope_wrapped = True  # type: ignore[attr-defined]
        __next__.__wrapped__ = original  # type: ignore[attr-defined]
        cls.__next__ = __next__
        self.log.info("DataLoader waits timed (data stalls)")

    def flush(self, timeout_s: float = 5.0) -> None:
        self.checkpoints.flush(timeout_s)


def _env_int(name: str) -> int | None:
    value = os.environ.get(name, "")
    return int(value) if value.isdigit() else None
