"""The job's life as one rank sees it: attempts, step progress, checkpoint saves and loads.

Three append-only JSON-lines files per rank (RUN/ranks/<r>/), read by `scope goodput`
(analyzers/goodput/records.py):

    attempts.jsonl     {"event": "start", "attempt", "pid", "time_ns", "proc_start_ns", "restart_count",
                        "world_size", "nodes"}
                       {"event": "previous", ...the last heartbeat the previous process of this rank left}
                       {"event": "end", "state", "step", "global_step", "time_ns", "last_step_ns", "signal"}
    progress.jsonl     {"step", "global_step", "t_ns", "attempt", "data_ns", "cpu_ns", "wait_ns", "span_ns"}: the
                       time the step completed, written from the hook thread when the step moved (at most once
                       per poll, never from the job's thread); `data_ns` is the time the training thread waited
                       for its next batch since the line before (DataLoader iterators' __next__: two clock reads
                       and one add per batch); `cpu_ns` / `wait_ns` its CPU time and run-queue wait over the
                       `span_ns` since the line before (collectors/hook/where.py, read by the hook thread)
    checkpoints.jsonl  {"op": "save"|"load", "api", "path", "step", "global_step", "attempt", "start_ns",
                       "dur_ns", "bytes", "background_ns"}

Checkpoint calls are wrapped (torch.save / torch.load to a file, torch.distributed.checkpoint save / load /
async_save): two clock reads and one small append per call, nothing per step. A call nested in another
(DCP writes with torch.save) is the outer one's. The step a load resumes is the step this rank's earlier
attempt saved to the same path: from then on `global_step` counts from it.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from scope.collectors.hook.importwatch import call_after_import
from scope.collectors.hook.where import MainThreadClock

from scope.rundir import heartbeat_path, rank_dir

ATTEMPTS = "attempts.jsonl"
PROGRESS = "progress.jsonl"
CHECKPOINTS = "checkpoints.jsonl"
DCP_FUNCTIONS = ("save", "load", "async_save", "save_state_dict", "load_state_dict")
_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def process_start_ns() -> int | None:
    """When this process was created (Linux /proc), so initialization counts from the real start, imports
    included, not from when the hook got to run."""
    try:
        with open("/proc/self/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        with open("/proc/stat") as fh:
            btime = next(int(line.split()[1]) for line in fh if line.startswith("btime"))
        return int((btime + int(fields[19]) / _CLK_TCK) * 1e9)
    except (OSError, ValueError, IndexError, StopIteration):
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
        self.data_wait_ns = 0  # the training thread's time in DataLoader __next__, ever growing
        self._written_data_ns = 0
        self._queue: queue.Queue[dict[str, Any]] = queue.Queue()
        self._writer: threading.Thread | None = None
        self._lock = threading.Lock()
        self.clock = MainThreadClock()
        self._written_clock = (time.monotonic_ns(), self.clock.read())

    @property
    def dir(self) -> Path:
        return rank_dir(self.run_dir, self.rank or 0)

    # -- files ------------------------------------------------------------------------------
    def _append(self, name: str, record: dict[str, Any]) -> None:
        if self.rank is None:
            return
        try:
            with self._lock, open(self.dir / name, "a") as fh:
                fh.write(json.dumps(record) + "\n")
        except Exception as exc:
            self.log.error(f"writing {name}", exc)

    def _read(self, name: str) -> list[dict[str, Any]]:
        out = []
        with contextlib.suppress(OSError):
            for line in (self.dir / name).read_text().splitlines():
                with contextlib.suppress(ValueError):
                    out.append(json.loads(line))
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
            previous = _read_json(heartbeat_path(self.run_dir, self.rank))
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
        except Exception as exc:
            self.log.error("recording the attempt start", exc)

    def end(self, state: str, signal_name: str | None = None) -> None:
        if self.rank is None or self._ended:
            return
        self._ended = True
        self.flush()
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
            },
        )

    def tick(self) -> None:
        """From the hook thread: one progress line when the step moved since the last one."""
        step, t_ns = self._step(), self._last_step_ns()
        if self.rank is None or step == self._written_step or t_ns is None:
            return
        self._written_step = step
        waited = self.data_wait_ns  # one read: the training thread only ever adds to it
        record = {"step": step, "global_step": self.base + step, "t_ns": t_ns, "attempt": self.attempt}
        if waited != self._written_data_ns:
            record["data_ns"] = waited - self._written_data_ns
            self._written_data_ns = waited
        self._add_clock(record)
        self._append(PROGRESS, record)

    def _add_clock(self, record: dict[str, Any]) -> None:
        """The training thread's CPU time and run-queue wait since the line before (live stragglers)."""
        now, clock = time.monotonic_ns(), self.clock.read()
        then, before = self._written_clock
        if clock is not None and before is not None:
            record.update(cpu_ns=clock[0] - before[0], wait_ns=clock[1] - before[1], span_ns=now - then)
        self._written_clock = (now, clock)

    # -- checkpoints ---------------------------------------------------------------------------
    def install(self) -> None:
        call_after_import("torch.serialization", self._wrap_torch)
        call_after_import("torch.distributed.checkpoint", self._wrap_dcp)
        call_after_import("torch.utils.data.dataloader", self._wrap_dataloader)

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

    def _wrap_torch(self, module: ModuleType) -> None:
        for name, op in (("save", "save"), ("load", "load")):
            original = getattr(module, name, None)
            if callable(original) and not getattr(original, "_scope_wrapped", False):
                setattr(module, name, self._wrapper(original, op, f"torch.{name}", file_only=True))
        torch = __import__("sys").modules.get("torch")
        for name in ("save", "load"):  # torch may have bound the originals already
            if torch is not None and getattr(torch, name, None) is not None:
                with contextlib.suppress(Exception):
                    if not getattr(getattr(torch, name), "_scope_wrapped", False):
                        setattr(torch, name, getattr(module, name))

    def _wrap_dcp(self, module: ModuleType) -> None:
        for name in DCP_FUNCTIONS:
            original = getattr(module, name, None)
            if callable(original) and not getattr(original, "_scope_wrapped", False):
                op = "load" if "load" in name else "save"
                setattr(module, name, self._wrapper(original, op, f"dcp.{name}", file_only=False))
        self.log.info("checkpoint calls wrapped (torch.distributed.checkpoint)")

    def _wrapper(self, original: Callable[..., Any], op: str, api: str, file_only: bool) -> Callable[..., Any]:
        local = threading.local()
        recorder = self

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            if getattr(_NESTING, "depth", 0) or recorder.rank is None or os.getpid() != recorder.pid:
                return original(*args, **kwargs)  # nested, before the rank is known, or a forked worker
            path = _target_path(api, args, kwargs)
            if file_only and path is None:
                return original(*args, **kwargs)
            _NESTING.depth = 1
            step = recorder._step()
            start = time.time_ns()
            try:
                result = original(*args, **kwargs)
            finally:
                _NESTING.depth = 0
                local.dur = time.time_ns() - start
            recorder._record(op, api, path, step, start, local.dur, result)
            return result

        wrapped._scope_wrapped = True  # type: ignore[attr-defined]
        wrapped.__wrapped__ = original  # type: ignore[attr-defined]
        wrapped.__doc__ = original.__doc__
        wrapped.__name__ = getattr(original, "__name__", "wrapped")
        return wrapped

    def _record(self, op: str, api: str, path: str | None, step: int, start: int, dur: int, result: Any) -> None:
        try:
            if op == "load" and path is not None:
                self._resume_from(path, step)
            record = {
                "op": op,
                "api": api,
                "path": path,
                "step": step,
                "global_step": self.base + step,
                "attempt": self.attempt,
                "start_ns": start,
                "dur_ns": dur,
                "last_step_ns": self._last_step_ns(),
                "bytes": None,
            }
            if api == "dcp.async_save" and hasattr(result, "add_done_callback"):
                record["background_ns"] = None
                result.add_done_callback(lambda _f, r=record: self._async_done(r))
                return
            self._later(record)
        except Exception as exc:
            self.log.error(f"recording {api}", exc)

    def _later(self, record: dict[str, Any]) -> None:
        """Sizing a checkpoint (a DCP folder of many files, maybe on a network file system) and writing the
        record happen on one background thread, in order: the training thread only reads two clocks."""
        self._queue.put(record)
        if self._writer is None:
            self._writer = threading.Thread(target=self._drain, name="scope-checkpoints", daemon=True)
            self._writer.start()

    def _drain(self) -> None:
        while True:
            record = self._queue.get()
            try:
                record["bytes"] = _size(record["path"])
                self._append(CHECKPOINTS, record)
            except Exception as exc:
                self.log.error("writing a checkpoint record", exc)
            finally:
                self._queue.task_done()

    def flush(self, timeout_s: float = 5.0) -> None:
        """Before the process ends: the records still queued (bounded wait; the job must not hang on us)."""
        deadline = time.monotonic() + timeout_s
        while self._queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.01)

    def _async_done(self, record: dict[str, Any]) -> None:
        record["background_ns"] = time.time_ns() - record["start_ns"] - record["dur_ns"]
        record["bytes"] = _size(record["path"])
        self._append(CHECKPOINTS, record)

    def _resume_from(self, path: str, step: int) -> None:
        """A load of a path this rank saved earlier: the global step continues from that save's step."""
        self.flush(1.0)  # a save of this process may still be queued
        saves = [r for r in self._read(CHECKPOINTS) if r.get("op") == "save" and r.get("path") == path]
        if not saves and self.rank != 0:  # one rank writes the checkpoint, every rank loads it
            saves = [
                r
                for r in _jsonl(rank_dir(self.run_dir, 0) / CHECKPOINTS)
                if r.get("op") == "save" and r.get("path") == path
            ]
        if saves:
            self.base = int(saves[-1].get("global_step", 0)) - step
            self.log.info(f"resumed from {path}: global step {self.base + step}")


_NESTING = threading.local()


def _target_path(api: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    """The file or folder a checkpoint call writes or reads (None for a buffer or stream)."""
    if api.startswith("torch."):
        target = kwargs.get("f", args[1] if api == "torch.save" and len(args) > 1 else args[0] if args else None)
    else:
        target = kwargs.get("checkpoint_id") or kwargs.get("storage_writer") or kwargs.get("storage_reader")
        target = getattr(target, "path", target)
    if isinstance(target, (str, os.PathLike)):
        return os.fspath(target)
    return None


def _size(path: str | None) -> int | None:
    if not path:
        return None
    try:
        p = Path(path)
        if p.is_file():
            return p.stat().st_size
        if p.is_dir():
            return sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
    except OSError:
        return None
    return None


def _jsonl(path: Path) -> list[dict[str, Any]]:
    out = []
    with contextlib.suppress(OSError):
        for line in path.read_text().splitlines():
            with contextlib.suppress(ValueError):
                out.append(json.loads(line))
    return out


def _env_int(name: str) -> int | None:
    value = os.environ.get(name, "")
    return int(value) if value.isdigit() else None


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
