"""Reading scope's own records back, guarded and bounded: the hook's attempts, progress and checkpoint
records, heartbeats, the launcher's attempt records and control files.

A run directory is a shared folder: anyone (or any accident) can leave a FIFO where a record should be
(its reader blocks for ever), a link to /dev/zero (its reader never ends), a file of gigabytes, or a
record whose values are of the wrong type or size (`"attempt": 1000000000000` made a reader allocate a
list that long). Every reader here therefore:

  - opens only regular files, without blocking (O_NONBLOCK: a FIFO is never waited on) and checks the
    opened file itself (fstat), so what was swapped in after a listing is caught too;
  - reads no further than a byte limit, and no line longer than MAX_LINE_BYTES;
  - keeps only records whose values have the type and range their schema says; the others are counted
    and named in one warning per file, and the rest of the file still counts.

Standard library only: the in-process hook uses it on the job's own imports.
"""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

# A record file of scope's: a heartbeat is under 1 KB, a week of progress lines about 150 MB.
MAX_RECORDS_BYTES = 256 << 20
MAX_JSON_BYTES = 1 << 20
MAX_LINE_BYTES = 64 << 10
PARSE_BATCH = 2048
_BAD = object()

# Value ranges: nanosecond times and sizes fit in int64; a step count beyond 2**53 is no real job's
# (nor exact as a float); attempts, ranks, pids and world sizes stay far below these bounds.
INT64 = (1 << 63) - 1
STEPS = 1 << 53
ATTEMPTS = 1 << 20
RANKS = 1 << 24
PIDS = 1 << 31

_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a folder"),
)


class NotRegular(OSError):
    """The path is not a regular file (a FIFO, a device, a socket, a folder): never read."""

    def __init__(self, path: Path | str, what: str) -> None:
        super().__init__(f"{path}: {what}, not a regular file; skipped (only regular files are read)")
        self.what = what


def open_regular(path: Path | str) -> int:
    """A read-only fd on PATH when it is a regular file (links followed); NotRegular or OSError otherwise.
    Never blocks: a FIFO opened with O_NONBLOCK returns at once, and is then refused by its fstat."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise NotRegular(path, next((what for test, what in _KINDS if test(mode)), "not a regular file"))
    return fd


def read_bytes(path: Path | str, limit: int = MAX_JSON_BYTES) -> bytes | None:
    """PATH's bytes when it is a regular file of at most LIMIT bytes; None otherwise (or unreadable)."""
    try:
        fd = open_regular(path)
    except OSError:
        return None
    try:
        chunks, got = [], 0
        while got <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    return None if got > limit else b"".join(chunks)


def read_json(path: Path | str, limit: int = MAX_JSON_BYTES) -> dict[str, Any] | None:
    """The JSON object in a small regular file (a heartbeat, a node record); None for anything else."""
    raw = read_bytes(path, limit)
    if raw is None:
        return None
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


# -- schemas: the values a record may hold --------------------------------------------------------------
Check = Callable[[Any], bool]


def integer(lo: int, hi: int, *, optional: bool = True) -> Check:
    """An int in [lo, hi] (a bool is not one; None where OPTIONAL)."""

    def ok(v: Any) -> bool:
        if v is None:
            return optional
        return type(v) is int and lo <= v <= hi

    return ok


def number(lo: float, hi: float, *, optional: bool = True) -> Check:
    """A finite int or float in [lo, hi] (never NaN or infinity)."""

    def ok(v: Any) -> bool:
        if v is None:
            return optional
        return type(v) in (int, float) and math.isfinite(v) and lo <= v <= hi

    return ok


def text(*, optional: bool = True) -> Check:
    return lambda v: isinstance(v, str) or (optional and v is None)


def one_of(*values: Any) -> Check:
    return lambda v: v in values


def list_of(schema: dict[str, Check]) -> Check:
    """A list of objects that each pass SCHEMA (the launcher's per-rank rows)."""
    return lambda v: isinstance(v, list) and all(isinstance(x, dict) and _bad_field(x, schema) is None for x in v)


NS = integer(0, INT64)
STEP = integer(0, STEPS)
STEP_SET = integer(0, STEPS, optional=False)  # present, then a number (progress lines are read with int())
ATTEMPT = integer(0, ATTEMPTS, optional=False)

HOOK_ATTEMPT = {
    "event": one_of("start", "end", "previous"),
    "attempt": ATTEMPT,
    "pid": integer(0, PIDS),
    "time_ns": NS,
    "proc_start_ns": NS,
    "written_ns": NS,
    "last_step_ns": NS,
    "step": STEP,
    "global_step": STEP,
    "world_size": integer(0, RANKS),
    "nodes": integer(0, RANKS),
    "state": text(),
    "signal": text(),
}
PROGRESS = {"step": STEP_SET, "global_step": STEP_SET, "t_ns": NS, "attempt": ATTEMPT, "data_ns": NS}
CHECKPOINT = {
    "op": one_of("save", "load"),
    "api": text(),
    "path": text(),
    "step": STEP,
    "global_step": STEP,
    "attempt": ATTEMPT,
    "start_ns": NS,
    "dur_ns": NS,
    "last_step_ns": NS,
    "bytes": NS,
    "background_ns": NS,
    "checkpoint": lambda v: v is None or isinstance(v, bool),
}
LAUNCH_RANK = {"rank": integer(0, RANKS), "pid": integer(0, PIDS), "exit_code": integer(-(1 << 31), 1 << 31)}
LAUNCH_ATTEMPT = {"start_ns": NS, "end_ns": NS, "world_size": integer(0, RANKS), "ranks": list_of(LAUNCH_RANK)}
HEARTBEAT = {
    "rank": integer(0, RANKS, optional=False),
    "step": STEP_SET,
    "global_step": STEP,
    "pid": integer(0, PIDS),
    "time_ns": NS,
    "written_ns": NS,
    "started_ns": NS,
    "attempt": integer(0, ATTEMPTS),
    "steps_per_s": number(0, 1e12),
    "state": text(),
    "host": text(),
}


def _bad_field(record: dict[str, Any], schema: dict[str, Check]) -> str | None:
    """The first field whose value the schema refuses (missing fields are the reader's business)."""
    for name, ok in schema.items():
        if name in record and not ok(record[name]):
            return name
    return None


def checked(record: Any, schema: dict[str, Check]) -> str | None:
    """Why RECORD is not one the schema allows ('not an object', 'attempt'), or None when it is."""
    if not isinstance(record, dict):
        return "not an object"
    return _bad_field(record, schema)  # an absent field is the reader's default (attempt 0, no time)


class RecordFile:
    """One JSON-lines record file read as a stream: iterate for its valid records; afterwards, `warning()`
    says what was skipped (unreadable lines, impossible values, the part past the byte limit)."""

    def __init__(self, path: Path | str, schema: dict[str, Check], limit: int = MAX_RECORDS_BYTES) -> None:
        self.path, self.schema, self.limit = Path(path), schema, limit
        self.read = 0
        self.unreadable = 0
        self.impossible: dict[str, int] = {}
        self.truncated = False
        self.skipped: str | None = None  # why the whole file was not read (not a regular file)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        try:
            fd = open_regular(self.path)
        except NotRegular as exc:
            self.skipped = str(exc)
            return
        except OSError:
            return
        with os.fdopen(fd, "rb") as fh:
            batch: list[bytes] = []
            for line in self._lines(fh):
                batch.append(line)
                if len(batch) >= PARSE_BATCH:
                    yield from self._parse_batch(batch)
                    batch = []
            yield from self._parse_batch(batch)

    def _lines(self, fh: Any) -> Iterator[bytes]:
        """The file's non-empty lines, each at most MAX_LINE_BYTES, up to the byte limit."""
        left = self.limit
        while True:
            line = fh.readline(min(MAX_LINE_BYTES + 1, left + 1))
            if not line:
                return
            left -= len(line)
            if left < 0:
                self.truncated = True
                return
            if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
                self.unreadable += 1
                left -= _skip_line(fh, left)
                continue
            if line.strip():
                yield line

    def _parse_batch(self, batch: list[bytes]) -> Iterator[dict[str, Any]]:
        """Many lines in one parse (as one JSON array: ten times faster than line by line); line by line
        when that fails or does not give one value a line, so one bad line costs only itself."""
        if not batch:
            return
        try:
            values = json.loads(b"[" + b",".join(batch) + b"]")
        except (ValueError, RecursionError):
            values = None
        if not isinstance(values, list) or len(values) != len(batch):
            values = [self._parse(line) for line in batch]
        for record in values:
            if record is _BAD:
                continue
            why = checked(record, self.schema)
            if why is not None:
                self.impossible[why] = self.impossible.get(why, 0) + 1
                continue
            self.read += 1
            yield record

    def _parse(self, line: bytes) -> Any:
        try:
            return json.loads(line)
        except (ValueError, RecursionError):  # a line cut by a crash or a full disk; a 5,000-digit number
            self.unreadable += 1
            return _BAD

    def warning(self) -> str | None:
        if self.skipped:
            return self.skipped
        parts = []
        if self.unreadable:
            parts.append(f"{self.unreadable} unreadable line(s) skipped")
        if self.impossible:
            fields = ", ".join(f"{n} with an impossible {f}" for f, n in sorted(self.impossible.items()))
            parts.append(f"record(s) skipped: {fields}")
        if self.truncated:
            parts.append(f"only its first {self.limit >> 20} MiB read")
        return f"{self.path}: {'; '.join(parts)}" if parts else None


def _skip_line(fh: Any, left: int) -> int:
    """Read past the rest of an over-long line; the bytes consumed (never more than LEFT + 1)."""
    used = 0
    while used <= left:
        chunk = fh.readline(min(1 << 20, left + 1 - used))
        used += len(chunk)
        if not chunk or chunk.endswith(b"\n"):
            break
    return used


def read_records(
    path: Path | str, schema: dict[str, Check], warnings: list[str] | None = None, limit: int = MAX_RECORDS_BYTES
) -> list[dict[str, Any]]:
    """Every valid record of a JSON-lines file (a small one: attempts, checkpoints); what was skipped is
    appended to WARNINGS."""
    reader = RecordFile(path, schema, limit)
    out = list(reader)
    said = reader.warning()
    if said and warnings is not None:
        warnings.append(said)
    return out
