"""Follow a run directory as the hook writes it: progress lines and heartbeats, into detector feeds.

Per rank, `ranks/<r>/progress.jsonl` is read from where the last poll stopped (a line not yet ended waits
for the next poll) and `ranks/<r>/heartbeat.json` is read whole. Guarded as every reader of a run the
job may be filling: regular files only (a FIFO or a device there would block the reader), at most
MAX_READ bytes a file a poll, lines over MAX_LINE or not JSON counted as dropped and skipped; a rank
folder that vanishes costs only itself.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scope.live.samples import Heartbeat, StepSample

MAX_READ = 1 << 20
MAX_LINE = 1 << 14
MAX_BEAT = 1 << 16


def read_regular(path: Path | str, offset: int = 0, limit: int = MAX_READ) -> bytes | None:
    """Up to `limit` bytes of a regular file from `offset`; None when it is not one (or is gone)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.pread(fd, limit, offset)
    except OSError:
        return None
    finally:
        os.close(fd)


@dataclass
class _RankFile:
    offset: int = 0
    partial: bytes = b""
    prev: dict[str, Any] | None = None  # the last progress line, for step deltas


@dataclass
class RunTail:
    run_dir: Path
    dropped: int = 0
    files: dict[int, _RankFile] = field(default_factory=dict)
    _paths_of: dict[int, tuple[str, str]] = field(default_factory=dict)

    def ranks(self) -> list[int]:
        out = []
        try:
            with os.scandir(self.run_dir / "ranks") as it:
                for entry in it:
                    if entry.name.isdigit() and entry.is_dir(follow_symlinks=False):
                        out.append(int(entry.name))
        except OSError:
            return []
        return sorted(out)

    def poll(self) -> tuple[list[StepSample], list[Heartbeat]]:
        samples: list[StepSample] = []
        beats: list[Heartbeat] = []
        for rank in self.ranks():
            progress, heartbeat = self._paths(rank)
            samples += self._progress(rank, progress)
            beat = self._beat(rank, heartbeat)
            if beat is not None:
                beats.append(beat)
        return samples, beats

    def _paths(self, rank: int) -> tuple[str, str]:
        """The rank's progress and heartbeat files (built once: pathlib's joins cost more than the reads)."""
        paths = self._paths_of.get(rank)
        if paths is None:
            folder = self.run_dir / "ranks" / str(rank)
            paths = self._paths_of[rank] = (str(folder / "progress.jsonl"), str(folder / "heartbeat.json"))
        return paths

    def _progress(self, rank: int, path: str) -> list[StepSample]:
        state = self.files.setdefault(rank, _RankFile())
        data = read_regular(path, state.offset)
        if not data:
            return []
        state.offset += len(data)
        lines = (state.partial + data).split(b"\n")
        state.partial = lines.pop()
        if len(state.partial) > MAX_LINE:
            state.partial, self.dropped = b"", self.dropped + 1
        out = []
        for raw in lines:
            record = self._parse(raw)
            if record is None:
                continue
            sample = to_sample(rank, state.prev, record)
            state.prev = record
            if sample is not None:
                out.append(sample)
        return out

    def _parse(self, raw: bytes) -> dict[str, Any] | None:
        if not raw.strip():
            return None
        try:
            record = json.loads(raw) if len(raw) <= MAX_LINE else None
        except ValueError:
            record = None
        if not isinstance(record, dict) or not isinstance(record.get("step"), int) or not _num(record.get("t_ns")):
            self.dropped += 1
            return None
        return record

    def _beat(self, rank: int, path: str) -> Heartbeat | None:
        data = read_regular(path, 0, MAX_BEAT)
        if not data:
            return None
        try:
            beat = json.loads(data)  # a torn beat (the hook rewrites it in place on a full disk) waits a poll
        except ValueError:
            return None
        return to_heartbeat(rank, beat) if isinstance(beat, dict) else None


def _num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def to_sample(rank: int, prev: dict[str, Any] | None, rec: dict[str, Any]) -> StepSample | None:
    """A progress line against the line before: seconds per step over the steps between them. The first
    line of an attempt has no line before it (start-up is no step)."""
    if prev is None or prev.get("attempt") != rec.get("attempt"):
        return None
    steps = rec["step"] - prev["step"]
    wall = (rec["t_ns"] - prev["t_ns"]) / 1e9
    if steps <= 0 or wall <= 0:
        return None
    step_s = wall / steps
    # CPU time and run-queue wait cover the hook's own interval (poll to poll): as shares of it, per step.
    span = float(rec["span_ns"]) if _num(rec.get("span_ns")) else 0.0
    cpu = float(rec["cpu_ns"]) if _num(rec.get("cpu_ns")) else None
    wait = float(rec["wait_ns"]) if _num(rec.get("wait_ns")) else 0.0
    compute = cpu / span * step_s if span > 0 and cpu is not None else None
    host = wait / span * step_s if span > 0 else 0.0
    data = rec["data_ns"] / 1e9 / steps if _num(rec.get("data_ns")) else 0.0
    comm, ops = _collectives(rec, steps)
    return StepSample(
        rank=rank,
        step=int(rec["step"]),
        t=rec["t_ns"] / 1e9,
        step_s=step_s,
        steps=steps,
        data_s=data,
        host_s=host,
        compute_s=compute,
        comm=comm,
        ops=ops,
        ckpt_s=rec["ckpt_ns"] / 1e9 / steps if _num(rec.get("ckpt_ns")) else 0.0,
    )


def _collectives(rec: dict[str, Any], steps: int) -> tuple[dict[str, float], dict[str, str]]:
    """Seconds per step in each group's collectives, and per group the op that took the most of it with its
    bytes per call and the group's last sequence number ("all_reduce 2.1 MB, up to #312": the Flight
    Recorder's collective_seq_id counts the same calls only where the job issues all from Python), from
    the hook's `comm_ns` and `coll` (malformed parts skipped)."""
    raw = rec.get("comm_ns")
    comm = {str(g): ns / 1e9 / steps for g, ns in raw.items() if _num(ns) and ns >= 0} if isinstance(raw, dict) else {}
    best: dict[str, tuple[float, str]] = {}
    rows = rec.get("coll")
    for row in rows if isinstance(rows, list) else []:
        if not (isinstance(row, list) and len(row) >= 5 and all(_num(x) for x in row[2:5]) and row[2] > 0):
            continue
        group, op, calls, size, ns = str(row[0]), str(row[1]), row[2], row[3], row[4]
        seq = f", up to #{row[5]}" if len(row) > 5 and isinstance(row[5], int) else ""  # the group's sequence number
        if ns > best.get(group, (-1.0, ""))[0]:
            best[group] = (ns, f"{op} {_size(size / calls)}{seq}")
    return comm, {g: what for g, (_, what) in best.items()}


def _size(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"


def to_heartbeat(rank: int, beat: dict[str, Any]) -> Heartbeat:
    written, step_t = beat.get("written_ns"), beat.get("time_ns")
    return Heartbeat(
        rank=rank,
        written=float(written) / 1e9 if _num(written) and written is not None else 0.0,
        step=int(beat["step"]) if isinstance(beat.get("step"), int) else 0,
        step_t=float(step_t) / 1e9 if _num(step_t) and step_t is not None else None,
        state=str(beat.get("state", "running")),
        host=str(beat.get("host", "")),
        where=beat["where"] if isinstance(beat.get("where"), str) else None,
        coll=beat["coll"] if isinstance(beat.get("coll"), dict) else None,
        saving_since=float(beat["saving_ns"]) / 1e9 if _num(beat.get("saving_ns")) else None,
        saved_at=float(beat["saved_ns"]) / 1e9 if _num(beat.get("saved_ns")) else None,
    )
