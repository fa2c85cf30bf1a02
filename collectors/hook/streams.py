"""A rank's stdout and stderr when they go to files in the run directory: a write the disk refuses
(full, read-only, over quota) drops the text and counts it instead of raising into the job.

Python raises OSError from `print` when its file cannot take the bytes; torchrun points each rank's
stdout and stderr at files under RUN/ranks/<rank>/, so without this a full run directory kills the
job it only records. The streams keep their own small buffer and write with os.write, so nothing
refused is retried forever or raised at interpreter exit (which would make the rank exit 120).
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
import sys
import threading
from pathlib import Path
from typing import Any

BUFFER_BYTES = 8192


class _Bytes:
    """`stream.buffer` for code that writes bytes (sys.stdout.buffer.write)."""

    def __init__(self, owner: SafeStream) -> None:
        self._owner = owner

    def write(self, data: bytes | bytearray | memoryview) -> int:
        return self._owner.write_bytes(bytes(data))

    def flush(self) -> None:
        self._owner.flush()

    def fileno(self) -> int:
        return self._owner.fileno()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._owner, name)


class SafeStream(io.TextIOBase):
    def __init__(self, name: str, fd: int, encoding: str, errors: str, line_buffering: bool) -> None:
        super().__init__()
        self.name = name
        self._fd = fd
        self._encoding = encoding
        self._errors = errors
        self.line_buffering = line_buffering
        self._buf = bytearray()
        self._text: list[str] = []
        self._pending = 0
        self._lock = threading.RLock()
        self.buffer = _Bytes(self)
        self.dropped_bytes = 0
        self.dropped_writes = 0
        self.first_error: str | None = None

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._encoding

    @property
    def errors(self) -> str:  # type: ignore[override]
        return self._errors

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        if type(text) is not str and not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        # Kept as given, encoded once per flush (print() writes twice a line). No lock here: list.append
        # is atomic under the GIL, and the flush (locked) takes whatever is there.
        self._text.append(text)
        self._pending += len(text)
        if self._pending >= BUFFER_BYTES or (self.line_buffering and "\n" in text):
            self.flush()
        return len(text)

    def write_bytes(self, data: bytes, newline: bool = False) -> int:
        with self._lock:
            self._encode_text()
            self._buf += data
            if newline or len(self._buf) >= BUFFER_BYTES:
                self._flush_locked()
        return len(data)

    def flush(self) -> None:
        with self._lock:
            self._flush_locked()

    def _encode_text(self) -> None:
        n = len(self._text)
        if n:
            taken = self._text[:n]
            del self._text[:n]  # a write racing this appends after the n taken: it stays for the next flush
            self._pending = 0
            self._buf += "".join(taken).encode(self._encoding, self._errors)

    def _flush_locked(self) -> None:
        self._encode_text()
        while self._buf:
            try:
                written = os.write(self._fd, self._buf)
            except InterruptedError:
                continue
            except OSError as exc:  # ENOSPC, EROFS, EDQUOT, EIO...: the text is lost, the job is not
                self.dropped_bytes += len(self._buf)
                self.dropped_writes += 1
                self.first_error = self.first_error or f"{exc.strerror or exc}"
                self._buf.clear()
                return
            del self._buf[:written]

    def reconfigure(
        self,
        *,
        encoding: str | None = None,
        errors: str | None = None,
        newline: str | None = None,
        line_buffering: bool | None = None,
        write_through: bool | None = None,
    ) -> None:
        """As TextIOWrapper.reconfigure (jobs call `sys.stdout.reconfigure(line_buffering=True)`)."""
        self.flush()  # text written so far keeps the encoding it was written under
        self._encoding = encoding or self._encoding
        self._errors = errors or self._errors
        if line_buffering is not None:
            self.line_buffering = line_buffering
        if write_through:
            self.line_buffering = True

    def close(self) -> None:  # the job closing sys.stdout must not close the fd under the launcher
        with contextlib.suppress(Exception):
            self.flush()

    def stats(self) -> dict[str, Any]:
        return {"dropped_bytes": self.dropped_bytes, "dropped_writes": self.dropped_writes, "error": self.first_error}


def _to_file(stream: Any) -> int | None:
    """The fd of a stream that writes to a regular file (what torchrun gives a rank), else None."""
    try:
        fd = stream.fileno()
        return fd if stat.S_ISREG(os.fstat(fd).st_mode) else None
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return None


def guard_std_streams() -> dict[str, SafeStream]:
    """Swap sys.stdout / sys.stderr for SafeStreams where they write to regular files; returns them."""
    guarded: dict[str, SafeStream] = {}
    for name in ("stdout", "stderr"):
        current = getattr(sys, name, None)
        if current is None or isinstance(current, SafeStream):
            continue
        fd = _to_file(current)
        if fd is None:
            continue
        with contextlib.suppress(Exception):
            current.flush()
        line_buffering = bool(getattr(current, "line_buffering", False)) or name == "stderr"
        safe = SafeStream(
            f"<{name}>",
            fd,
            getattr(current, "encoding", None) or "utf-8",
            getattr(current, "errors", None) or "strict",
            line_buffering,
        )
        setattr(sys, name, safe)
        guarded[name] = safe
    return guarded


def dropped(streams: dict[str, SafeStream]) -> dict[str, Any]:
    """What the guarded streams could not write, for the heartbeat and run.json (empty when nothing)."""
    return {name: s.stats() for name, s in streams.items() if s.dropped_bytes}


# Room kept on the run directory's disk for a rank's last words: a traceback is a few KiB. A full disk took
# the job's own traceback with the rest of its output; given back just before the traceback is printed, this
# room takes it (and torchrun's tee shows it on the terminal from the file).
LAST_WORDS_BYTES = 64 << 10


class LastWords:
    """A file of LAST_WORDS_BYTES held from the start; `give_back()` frees it (idempotent, never raises)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.held = False

    def hold(self) -> None:
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK, 0o600)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(f"{self.path} is not a regular file")
            try:
                os.posix_fallocate(fd, 0, LAST_WORDS_BYTES)
            except (AttributeError, OSError):  # a file system without fallocate: real zeros take the blocks
                os.write(fd, b"\0" * LAST_WORDS_BYTES)
            self.held = True
        finally:
            os.close(fd)

    def give_back(self) -> bool:
        """Free the room; whether there was any."""
        if not self.held:
            return False
        self.held = False
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        return True


def refused_summary(streams: dict[str, SafeStream]) -> str | None:
    """'the disk refused 17.9 MB of this rank's output (stderr 17.5 MB, stdout 0.4 MB): No space left on
    device', or None when nothing was refused. hook.log carries it; `scope diagnose` reads it there."""
    refused = {name: s for name, s in streams.items() if s.dropped_bytes}
    if not refused:
        return None
    total = sum(s.dropped_bytes for s in refused.values())
    parts = ", ".join(f"{name} {s.dropped_bytes / 1e6:.1f} MB" for name, s in refused.items())
    error = next((s.first_error for s in refused.values() if s.first_error), "refused")
    return f"the disk refused {total / 1e6:.1f} MB of this rank's output ({parts}): {error}"
