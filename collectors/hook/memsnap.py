"""Snapshot-on-OOM (`scope run --memory-snapshot-on-oom [N]`; off by default, and then nothing here runs).

Armed at the rank's first optimizer step (the hook imports nothing before the job has imported torch
itself): the CUDA caching allocator records its last N events with their stacks
(torch.cuda.memory._record_memory_history(max_entries=N)) and an out-of-memory observer writes a snapshot
the moment an allocation fails, before the error unwinds the job (a job that catches it still leaves the
snapshot). The hook also writes one when the rank dies of an exception or is terminated (a peer's OOM
ends the others): RUN/ranks/<r>/memory/<nnn>-<reason>.pickle, which `scope analyze` reads.

Cost when armed: recording a stack per allocation and free (PyTorch's docs: small against the kernels
of a training step; not measured here, on a machine without a GPU) and up to N entries of host memory.
Without a CUDA device, arming says so in hook.log and does nothing.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

DEFAULT_ENTRIES = 100_000


class MemorySnapshots:
    def __init__(self, out_dir: Path, log: Any, entries: int) -> None:
        self.out_dir, self.log, self.entries = Path(out_dir), log, entries
        self.tried = False
        self.armed = False
        self._written = 0
        self._oom_dumped = False
        self._lock = threading.Lock()

    def arm(self) -> None:
        """Start recording (once; the training thread's first step)."""
        if self.tried:
            return
        self.tried = True
        torch = sys.modules.get("torch")
        try:
            if torch is None or not torch.cuda.is_available():
                self.log.info("memory snapshot on OOM: no CUDA device, not armed")
                return
            torch.cuda.memory._record_memory_history(max_entries=self.entries)
            attach = getattr(torch._C, "_cuda_attach_out_of_memory_observer", None)
            if attach is not None:
                attach(self._on_oom)
            self.armed = True
            self.log.info(f"memory snapshot on OOM armed: history of {self.entries} allocator events")
        except Exception as exc:  # an old torch, a device in a bad state: the job runs on unobserved
            self.log.error("arming the memory snapshot on OOM", exc)

    def _on_oom(self, device: int, alloc: int, device_allocated: int, device_free: int) -> None:
        self.log.info(f"out of memory on device {device}: {alloc} bytes asked, {device_free} free")
        if self.dump("oom") is not None:
            self._oom_dumped = True

    def on_request(self) -> Path | None:
        """`scope attach RUN --memory-snapshot`: a snapshot now, armed or not (then the segments alone:
        what each block holds, without the history of how it came to)."""
        torch = sys.modules.get("torch")
        try:
            available = torch is not None and torch.cuda.is_available()
        except Exception:
            available = False
        if not available:
            self.log.info("memory snapshot requested: no CUDA device, none written")
            return None
        return self._write("attach")

    def dump(self, reason: str) -> Path | None:
        """A snapshot now, when armed (an exception after the OOM's own snapshot adds none)."""
        if not self.armed or (reason == "exception" and self._oom_dumped):
            return None
        return self._write(reason)

    def _write(self, reason: str) -> Path | None:
        torch = sys.modules.get("torch")
        with self._lock:
            self._written += 1
            path = self.out_dir / f"{self._written:03d}-{reason}.pickle"
            try:
                self.out_dir.mkdir(parents=True, exist_ok=True)
                torch.cuda.memory._dump_snapshot(str(path))  # type: ignore[union-attr]
            except Exception as exc:
                self.log.error(f"memory snapshot ({reason})", exc)
                return None
        self.log.info(f"memory snapshot written: {path}")
        return path
