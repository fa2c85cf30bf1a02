"""`hook.log`: what the in-process hook did, and every error it caught.

The hook must never disturb the job, so this logger never raises either. When the log file cannot
be written, one line goes to stderr (so the user learns why the run directory stays empty) and the
rest is dropped.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import TextIO


class HookLog:
    def __init__(self) -> None:
        self._fh: TextIO | None = None
        self._lock = threading.Lock()
        self._pending: list[str] = []  # lines logged before the file is known
        self._seen_errors: set[str] = set()  # repeated errors are logged once
        self._warned = False
        self.prefix = f"pid={os.getpid()}"

    def open(self, path: Path) -> bool:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # without blocking, and only a regular file: a FIFO named hook.log must not stop the job
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK, 0o644)
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                os.close(fd)
                raise OSError(f"{path} is not a regular file")
            os.set_blocking(fd, True)
            fh = open(fd, "a", buffering=1)  # noqa: SIM115 - lives as long as the process
        except OSError as exc:
            self._warn_stderr(f"cannot write {path}: {exc}; the scope hook keeps running without a log")
            return False
        with self._lock:
            self._fh = fh
            for line in self._pending:
                fh.write(line)
            self._pending.clear()
        return True

    def info(self, message: str) -> None:
        self._write(f"{_stamp()} {self.prefix} {message}\n")

    def error(self, what: str, exc: BaseException | None = None) -> None:
        """Log an error caught in the hook; the same error from the same place is logged once."""
        try:
            detail = f"{type(exc).__name__}: {exc}" if exc is not None else ""
            key = f"{what}|{detail}"
            if key in self._seen_errors:
                return
            self._seen_errors.add(key)
            text = f"{_stamp()} {self.prefix} ERROR {what}: {detail}\n"
            if exc is not None and exc.__traceback__ is not None:
                text += "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            self._write(text)
        except Exception:
            pass

    def close(self) -> None:
        with self._lock:
            if self._fh is not None:
                with contextlib.suppress(OSError):
                    self._fh.close()
                self._fh = None

    def _write(self, text: str) -> None:
        try:
            with self._lock:
                if self._fh is None:
                    if len(self._pending) < 200:
                        self._pending.append(text)
                    return
                self._fh.write(text)
        except Exception:
            pass

    def _warn_stderr(self, message: str) -> None:
        if self._warned:
            return
        self._warned = True
        with contextlib.suppress(Exception):
            sys.stderr.write(f"[scope hook] {message}\n")


def _stamp() -> str:
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z"
