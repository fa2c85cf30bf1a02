"""Checkpoint saves and loads as the hook sees them: torch.save / torch.load to a file and
torch.distributed.checkpoint (save, load, async_save), written to RUN/ranks/<r>/checkpoints.jsonl.

On the job's thread a wrapped call costs two clock reads, a dict lookup and one append to a queue:
nothing is read or written there (a loop of 4,000 small torch.load calls was 13-53x slower when every
load flushed the queue and re-read the growing checkpoints.jsonl). One background thread sizes the files,
decides what each load was and writes the records.

What counts as a checkpoint load. torch.load is also how research code reads its data (thousands of small
`.pt` shards, from the training loop); those are not checkpoints, and goodput must not bill them as
checkpoint time or take one for a resume. A torch.load counts when
  - it reads a file this job saved: by this process, by an earlier attempt of this rank, or by rank 0
    (one rank writes the checkpoint, all of them load it), or
  - it comes before this process's first step and reads at least CHECKPOINT_MIN_BYTES: the starting
    weights of a fine-tuning run, a checkpoint from another job.
Anything else (a small file, or a file the job did not save, read while training) is data; those loads are
counted in hook.log, not recorded. DCP calls are checkpoints by their API.

What counts as a resume. Only a load before this process's first step of a file an earlier attempt (or rank
0) saved: the global step then continues from that save's step. A load later in the run (the best weights
saved at step 10 loaded back at step 20, an EMA swap) changes no step count and starts no attempt.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from scope.recordio import CHECKPOINT, read_records

CHECKPOINTS = "checkpoints.jsonl"
DCP_FUNCTIONS = ("save", "load", "async_save", "save_state_dict", "load_state_dict")
# The smallest file a load before the first step is taken for a checkpoint by its size alone: a model's
# weights are megabytes; a data shard of a few samples is kilobytes.
CHECKPOINT_MIN_BYTES = 1 << 20
# Paths of saves remembered for the rule above: a job saving more distinct files than this keeps the first.
MAX_SAVED_PATHS = 100_000
# Records written per batch by the writer thread (one open of the file per batch, not per record).
WRITE_BATCH = 512


class CheckpointRecorder:
    """Owned by LifeRecorder (`owner`): its rank, attempt, step clock, base (global step offset), and the
    guarded appender `owner.append_lines(name, lines)`."""

    def __init__(self, owner: Any) -> None:
        self.owner = owner
        self.saved: dict[str, int] = {}  # path -> global step of the last save the job made to it
        self.data_loads = 0  # torch.load calls taken for data, not checkpoints
        self._queue: queue.Queue[dict[str, Any]] = queue.Queue()
        self._writer: threading.Thread | None = None

    # -- start: what earlier attempts saved (read once, before the job's first step) ------------------------
    def remember_earlier_saves(self, paths: list[Path], warnings: list[str]) -> None:
        for path in paths:
            for rec in read_records(path, CHECKPOINT, warnings, limit=64 << 20):
                if rec.get("op") == "save" and isinstance(rec.get("path"), str):
                    self._remember(rec["path"], rec.get("global_step"))

    def _remember(self, path: str, global_step: Any) -> None:
        if isinstance(global_step, int) and (path in self.saved or len(self.saved) < MAX_SAVED_PATHS):
            self.saved[path] = global_step

    # -- wrapping ---------------------------------------------------------------------------------------
    def wrap_torch(self, module: ModuleType) -> None:
        for name in ("save", "load"):
            original = getattr(module, name, None)
            if callable(original) and not getattr(original, "_scope_wrapped", False):
                setattr(module, name, self._wrapper(original, name, f"torch.{name}", file_only=True))
        torch = __import__("sys").modules.get("torch")
        for name in ("save", "load"):  # torch may have bound the originals already
            if torch is not None and getattr(torch, name, None) is not None:
                with contextlib.suppress(Exception):
                    if not getattr(getattr(torch, name), "_scope_wrapped", False):
                        setattr(torch, name, getattr(module, name))

    def wrap_dcp(self, module: ModuleType) -> None:
        for name in DCP_FUNCTIONS:
            original = getattr(module, name, None)
            if callable(original) and not getattr(original, "_scope_wrapped", False):
                op = "load" if "load" in name else "save"
                setattr(module, name, self._wrapper(original, op, f"dcp.{name}", file_only=False))
        self.owner.log.info("checkpoint calls wrapped (torch.distributed.checkpoint)")

    def _wrapper(self, original: Callable[..., Any], op: str, api: str, file_only: bool) -> Callable[..., Any]:
        recorder, owner, clock = self, self.owner, time.time_ns

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            if getattr(_NESTING, "depth", 0) or owner.rank is None or os.getpid() != owner.pid:
                return original(*args, **kwargs)  # nested, before the rank is known, or a forked worker
            path = _target_path(api, args, kwargs)
            if file_only and path is None:
                return original(*args, **kwargs)
            _NESTING.depth = 1
            step = owner._step()
            start = clock()
            if op == "save":
                owner.saving_ns = start  # the live detector waits for a save, and leaves its steps out
            try:
                result = original(*args, **kwargs)
            finally:
                _NESTING.depth = 0
                if op == "save":
                    owner.saved_ns = clock()
                    owner.saving_ns = None
                    owner.save_ns += owner.saved_ns - start
            recorder._record(op, api, path, step, start, clock() - start, result)
            return result

        wrapped._scope_wrapped = True  # type: ignore[attr-defined]
        wrapped.__wrapped__ = original  # type: ignore[attr-defined]
        wrapped.__doc__ = original.__doc__
        wrapped.__name__ = getattr(original, "__name__", "wrapped")
        return wrapped

    def _record(self, op: str, api: str, path: str | None, step: int, start: int, dur: int, result: Any) -> None:
        """The job's thread: the record is built and queued; the only other work is the resume below."""
        try:
            owner = self.owner
            if op == "load" and step == 0 and path is not None and path in self.saved:
                owner.base = self.saved[path]  # a resume: the step it continues from, by the save's record
                owner.log.info(f"resumed from {path}: global step {owner.base}")
            elif op == "save" and path is not None:
                self._remember(path, owner.base + step)
            record = {
                "op": op,
                "api": api,
                "path": path,
                "step": step,
                "global_step": owner.base + step,
                "attempt": owner.attempt,
                "start_ns": start,
                "dur_ns": dur,
                "last_step_ns": owner._last_step_ns(),
                "bytes": None,
            }
            if api == "dcp.async_save" and hasattr(result, "add_done_callback"):
                record["background_ns"] = None
                result.add_done_callback(lambda _f, r=record: self._async_done(r))
                return
            self._queue.put(record)
            if self._writer is None:
                self._writer = threading.Thread(target=self._drain, name="scope-checkpoints", daemon=True)
                self._writer.start()
        except Exception as exc:
            self.owner.log.error(f"recording {api}", exc)

    # -- the writer thread -------------------------------------------------------------------------------
    def _drain(self) -> None:
        while True:
            batch = [self._queue.get()]
            with contextlib.suppress(queue.Empty):
                while len(batch) < WRITE_BATCH:
                    batch.append(self._queue.get_nowait())
            try:
                lines = [rec for rec in (self._sized(r) for r in batch) if rec is not None]
                if lines:
                    self.owner.append_records(CHECKPOINTS, lines)
            except Exception as exc:
                self.owner.log.error("writing checkpoint records", exc)
            finally:
                for _ in batch:
                    self._queue.task_done()

    def _sized(self, record: dict[str, Any]) -> dict[str, Any] | None:
        """The record with its size, or None for a torch.load that read data, not a checkpoint."""
        record["bytes"] = _size(record["path"])
        if record["api"] == "torch.load" and not self._is_checkpoint_load(record):
            self.data_loads += 1
            if self.data_loads in (1, 1000, 100_000):
                self.owner.log.info(f"{self.data_loads} torch.load call(s) taken for data, not checkpoints")
            return None
        return record

    def _is_checkpoint_load(self, record: dict[str, Any]) -> bool:
        if record["path"] in self.saved:
            return True
        return record["step"] == 0 and (record["bytes"] or 0) >= CHECKPOINT_MIN_BYTES

    def _async_done(self, record: dict[str, Any]) -> None:
        record["background_ns"] = time.time_ns() - record["start_ns"] - record["dur_ns"]
        record["bytes"] = _size(record["path"])
        self.owner.append_records(CHECKPOINTS, [record])

    def flush(self, timeout_s: float = 5.0) -> None:
        """Before the process ends: the records still queued (bounded wait; the job must not hang on us)."""
        deadline = time.monotonic() + timeout_s
        while self._queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.01)


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
