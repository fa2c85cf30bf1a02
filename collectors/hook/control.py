"""Triggers for a running job: one small JSON file per request under `RUN/control/`.

Writers (`scope attach`, the launcher's hang watchdog) drop a file; every rank's hook polls the
folder (one `stat` per second, a listing only when it changed) and acts on each request once.
Requests:

    {"kind": "profile", "steps": K, "at_step": N or null, "id": ..., "created_ns": ...}
        profile K steps, starting at step N (all ranks then cover the same steps) or as soon as
        possible when N is null or already passed.
    {"kind": "dump", "reason": "hang", "id": ..., "created_ns": ...}
        dump the Python stacks of all threads and the Flight Recorder buffer now.
    {"kind": "memory_snapshot", "id": ..., "created_ns": ...}
        write the CUDA allocator's snapshot now (ranks/<r>/memory/; with its history when
        --memory-snapshot-on-oom armed one, else the segments alone).

Files are written under a dot-name and renamed, so a reader never sees half a request.

Whatever else lands in the folder must not stall or slow a rank: only regular files (never a FIFO or
a device) no bigger than MAX_REQUEST_BYTES and newer than the process are opened, without blocking,
and each file (name, size, mtime) is looked at once.
"""

from __future__ import annotations

import json
import os
import stat
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scope.rundir import control_dir

KINDS = ("profile", "dump", "memory_snapshot")
MAX_REQUEST_BYTES = 64 << 10  # a request is a few hundred bytes; anything bigger is not one
RELIST_S = 5.0
POLL_MIN_S = 1.0
# File mtimes can lag the writer's clock a little (coarse timestamps on shared file systems).
STALE_SLACK_NS = 2_000_000_000


@dataclass
class Request:
    kind: str
    id: str
    created_ns: int
    steps: int = 0
    at_step: int | None = None
    reason: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Request:
        at_step = data.get("at_step")
        return cls(
            kind=str(data["kind"]),
            id=str(data.get("id", "")),
            created_ns=int(data.get("created_ns", 0)),
            steps=int(data.get("steps", 0) or 0),
            at_step=int(at_step) if at_step is not None else None,
            reason=str(data.get("reason", "")),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "id": self.id, "created_ns": self.created_ns}
        if self.kind == "profile":
            out.update(steps=self.steps, at_step=self.at_step)
        if self.reason:
            out["reason"] = self.reason
        return out


def write_request(run_dir: Path, kind: str, **fields: Any) -> Path:
    """Drop one request file; returns its path."""
    if kind not in KINDS:
        raise ValueError(f"unknown control request kind {kind!r}")
    folder = control_dir(run_dir)
    folder.mkdir(parents=True, exist_ok=True)
    now = time.time_ns()
    req_id = f"{kind}-{now}-{uuid.uuid4().hex[:6]}"
    request = Request(kind=kind, id=req_id, created_ns=now, **fields)
    path = folder / f"{req_id}.json"
    tmp = folder / f".{req_id}.tmp"
    tmp.write_text(json.dumps(request.to_dict()))
    os.replace(tmp, path)
    return path


def list_request_files(run_dir: Path) -> list[Path]:
    folder = control_dir(run_dir)
    try:
        names = sorted(e.name for e in os.scandir(folder) if e.name.endswith(".json"))
    except OSError:
        return []
    return [folder / n for n in names if not n.startswith(".")]


def _candidate(path: Path) -> os.stat_result | None:
    """lstat of a file worth opening: regular (not a FIFO, device or link) and small."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st if stat.S_ISREG(st.st_mode) and st.st_size <= MAX_REQUEST_BYTES else None


def read_request(path: Path) -> Request | None:
    """The request in `path`, or None when it is not one (a stray file is ignored, not fatal). Opened
    without blocking or following a link, and read no further than MAX_REQUEST_BYTES."""
    if _candidate(path) is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped for something else since the lstat
                return None
            raw = os.read(fd, MAX_REQUEST_BYTES + 1)
        finally:
            os.close(fd)
        if len(raw) > MAX_REQUEST_BYTES:
            return None
        data = json.loads(raw)
        if not isinstance(data, dict) or data.get("kind") not in KINDS:
            return None
        return Request.from_dict(data)
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return None


class RequestPoller:
    """Remembers which requests a process already handled; cheap when nothing changed."""

    def __init__(self, run_dir: Path, since_ns: int) -> None:
        self.run_dir = Path(run_dir)
        self.since_ns = since_ns  # requests older than the process are not for it
        self._seen: set[str] = set()
        self._mtime_ns: int | None = None
        self._listed_at = 0.0
        self._polled_at = -1e9

    def poll(self, force: bool = False) -> list[Request]:
        """New requests; one `stat` a second at most (thousands of ranks may share the folder)."""
        now = time.monotonic()
        if not force and now - self._polled_at < POLL_MIN_S:
            return []
        self._polled_at = now
        try:
            mtime = os.stat(control_dir(self.run_dir)).st_mtime_ns
        except OSError:
            return []
        # A folder's mtime can be coarse (1 s on some shared file systems): list anyway now and then.
        if not force and mtime == self._mtime_ns and now - self._listed_at < RELIST_S:
            return []
        self._mtime_ns = mtime
        self._listed_at = now
        fresh = []
        for path in list_request_files(self.run_dir):
            st = _candidate(path)
            if st is None or st.st_mtime_ns < self.since_ns - STALE_SLACK_NS:
                continue  # not a request file, or one from before this process: never opened
            key = f"{path.name}:{st.st_size}:{st.st_mtime_ns}"
            if key in self._seen:
                continue
            self._seen.add(key)  # looked at once, request or not
            request = read_request(path)
            if request is not None and request.created_ns >= self.since_ns:
                fresh.append(request)
        return fresh
