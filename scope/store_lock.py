"""One writer per store (flock on `.scope-store.lock`), and a waiter that is never left waiting blind.

The holder writes its PID and command into the lock file. A second `scope analyze` (or compare, or the
dashboard) waits for it, saying who it waits for; a holder that is stopped (SIGSTOP, Ctrl-Z: state T in
/proc) will never let go, so after STOPPED_GRACE_S of it the waiter stops with an error naming the PID and
how to resume or end it, as it does after LOCK_TIMEOUT_S of any wait ($SCOPE_LOCK_TIMEOUT_S). A stopped
holder made the next analysis wait for ever without a word."""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from scope.errors import ScopeError


class StoreBusy(ScopeError):
    """The store's holder will not let go (stopped, or past the wait): the analysis stops here, not only
    its traces (a post-mortem of the logs would wait for the same store to save into)."""

    stops_analysis = True


LOCK_NAME = ".scope-store.lock"
LOCK_TIMEOUT_S = 3600.0  # an ingest of 16,384 ranks takes ~9 minutes; an hour of waiting is a stuck holder
STOPPED_GRACE_S = 5.0
POLL_S = 0.2

# One holder per store per process (threads of the dashboard and its re-analysis); flock across processes.
_held: dict[str, tuple[threading.RLock, list[int]]] = {}
_held_guard = threading.Lock()


@contextmanager
def store_lock(root: Path, on_wait: Callable[[str], Any] | None = None) -> Iterator[None]:
    """Hold the store while ingesting, analyzing and saving: a second `scope analyze` (or the dashboard's
    re-analysis) of the same store waits, then reuses what the first wrote; no store is ever published by
    two writers at once. Re-entrant within a process; released when the holder exits, even on SIGKILL."""
    key = str(Path(root).resolve())
    with _held_guard:
        rlock, depth = _held.setdefault(key, (threading.RLock(), [0]))
    with rlock:
        if depth[0]:
            depth[0] += 1
            try:
                yield
            finally:
                depth[0] -= 1
            return
        fd = os.open(Path(root) / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if _acquire(fd, Path(root), on_wait):
                _say_holder(fd)
            depth[0] = 1
            try:
                yield
            finally:
                depth[0] = 0
        finally:
            os.close(fd)  # closing releases the flock


def _acquire(fd: int, root: Path, on_wait: Callable[[str], Any] | None) -> bool:
    """Take the lock, waiting as the module says; False on a file system without locks (go ahead)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        pass
    except OSError:  # a file system without locks (some NFS set-ups): go ahead unlocked
        return False
    holder = _holder(fd)
    if on_wait is not None:
        on_wait(f"{root}: another scope process ({_who(holder)}) is writing this store; waiting for it")
    limit = float(os.environ.get("SCOPE_LOCK_TIMEOUT_S") or LOCK_TIMEOUT_S)
    start = time.monotonic()
    stopped_since: float | None = None
    while True:
        time.sleep(POLL_S)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            pass
        now = time.monotonic()
        holder = _holder(fd) or holder
        stopped = holder is not None and _state(holder[0]) == "T"
        stopped_since = (stopped_since or now) if stopped else None
        if stopped_since is not None and now - stopped_since >= STOPPED_GRACE_S:
            pid = holder[0] if holder else "?"
            raise StoreBusy(
                f"{root}: the scope process holding this store ({_who(holder)}) is stopped; resume it "
                f"(kill -CONT {pid}) or end it (kill {pid}), then run again"
            )
        if now - start >= limit:
            raise StoreBusy(
                f"{root}: waited {limit:g} s for the scope process holding this store ({_who(holder)}); "
                "end it or run again later ($SCOPE_LOCK_TIMEOUT_S sets the wait)"
            )


def _say_holder(fd: int) -> None:
    """This process's PID and command, in the lock file, for whoever waits for it."""
    text = f"{os.getpid()} {' '.join(sys.argv)[:200]}\n".encode(errors="replace")
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.pwrite(fd, text, 0)


def _holder(fd: int) -> tuple[int, str] | None:
    try:
        text = os.pread(fd, 512, 0).decode(errors="replace").strip()
        pid, _, command = text.partition(" ")
        return int(pid), command
    except (OSError, ValueError):
        return None


def _who(holder: tuple[int, str] | None) -> str:
    if holder is None:
        return "PID unknown: an older scope"
    return f"PID {holder[0]}" + (f": {holder[1]}" if holder[1] else "")


def _state(pid: int) -> str:
    """The process's state letter from /proc (R, S, D, T, Z...; '' where there is no /proc)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rpartition(")")[2].split()[0] if ")" in stat else ""
