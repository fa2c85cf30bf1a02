"""Read CUDA caching-allocator snapshots (torch.cuda.memory._dump_snapshot pickles), never trusting them.

A snapshot is a pickle, so it is read with the Flight Recorder's refusing unpickler (no global can load:
only dicts, lists, strings and numbers come out) and refused when its shared references would expand far
past its size (a pickle bomb), or when the file is larger than `max_bytes`.

Two formats are read into one model:
  - 2023 (torch 2.0): blocks carry no address (it follows from the segment's and the sizes before it)
    and keep their stack in `history` [{addr, real_size, frames}]; trace entries have no time.
  - current (torch >= 2.1): blocks carry `address` and `frames`; trace entries `time_us`; segments
    `segment_pool_id` and `is_expandable`; the snapshot may hold `external_annotations` and
    `allocator_settings`.
Stacks are kept once each (Snapshot.stacks) and referred to by index, as snapshots repeat them.
"""

from __future__ import annotations

import io
import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scope.errors import ScopeError
from scope.flight_recorder import _expands_within, _NoGlobalsUnpickler

# Larger snapshots are refused rather than unpickled (a pickle's objects take several times its bytes).
MAX_SNAPSHOT_BYTES = 2 << 30
EXPAND_BASE = 2_000_000
EXPAND_PER_BYTE = 8
ACTIVE_STATES = ("active_allocated", "active_pending_free", "active_awaiting_free")

Frame = tuple[str, int, str]  # filename, line, function


@dataclass
class Block:
    address: int
    size: int
    requested_size: int
    state: str
    stack: int  # index into Snapshot.stacks (-1: none recorded)

    @property
    def active(self) -> bool:
        return self.state in ACTIVE_STATES


@dataclass
class Segment:
    device: int
    address: int
    total_size: int
    stream: int
    segment_type: str
    is_expandable: bool
    blocks: list[Block]


@dataclass
class Snapshot:
    path: Path
    format: str  # "2023" or "current"
    segments: list[Segment]
    # per device: (action, addr, size, time_us or -1, stack index) in the allocator's order
    traces: list[list[tuple[str, int, int, int, int]]]
    stacks: list[tuple[Frame, ...]] = field(default_factory=list)
    annotations: list[dict[str, Any]] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)

    def entries(self) -> int:
        return sum(len(t) for t in self.traces)


def looks_like_snapshot(head: bytes) -> bool:
    """A pickle whose first keys are a snapshot's (`segments` / `device_traces`)."""
    return head[:1] == b"\x80" and (b"segments" in head[:96] or b"device_traces" in head[:96])


def load_snapshot(path: Path | str, max_bytes: int = MAX_SNAPSHOT_BYTES) -> Snapshot:
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise ScopeError(f"{path}: memory snapshot of {size:,} bytes refused (more than {max_bytes:,})")
        data = path.read_bytes()
    except OSError as exc:
        raise ScopeError(f"{path}: cannot read memory snapshot ({exc.strerror or exc})") from None
    raw = _unpickle(path, data)
    if isinstance(raw, list):  # torch 1.x: _snapshot() was the segment list alone
        raw = {"segments": raw, "device_traces": []}
    if not isinstance(raw, dict) or not isinstance(raw.get("segments"), list):
        got = type(raw).__name__ if not isinstance(raw, dict) else f"keys {sorted(map(str, raw))[:6]}"
        raise ScopeError(f"{path}: not a memory snapshot (expected a dict with 'segments', got {got})")
    try:
        return _build(path, raw)
    except (TypeError, ValueError, AttributeError, KeyError, IndexError, RecursionError, OverflowError) as exc:
        raise ScopeError(f"{path}: malformed memory snapshot ({type(exc).__name__}: {str(exc)[:100]})") from None


def _unpickle(path: Path, data: bytes) -> Any:
    if not data:
        raise ScopeError(f"{path}: empty memory snapshot")
    if data[:1] != b"\x80":
        raise ScopeError(f"{path}: not a pickle (a memory snapshot is written by torch.cuda.memory._dump_snapshot)")
    try:
        obj = _NoGlobalsUnpickler(io.BytesIO(data)).load()
    except pickle.UnpicklingError as exc:
        raise ScopeError(f"{path}: unsafe or corrupt memory snapshot pickle ({exc})") from None
    except Exception as exc:  # no global can load, so any other failure is damage
        raise ScopeError(f"{path}: truncated or corrupt memory snapshot pickle ({type(exc).__name__})") from None
    limit = EXPAND_BASE + EXPAND_PER_BYTE * len(data)
    if not _expands_within(obj, limit):
        raise ScopeError(
            f"{path}: memory snapshot refused: its shared or cyclic references expand past {limit:,} values "
            f"from {len(data):,} bytes (a pickle bomb, not a snapshot)"
        )
    return obj


class _Stacks:
    """Each distinct stack once; frames as (filename, line, name)."""

    def __init__(self) -> None:
        self.index: dict[tuple[Frame, ...], int] = {}
        self.stacks: list[tuple[Frame, ...]] = []

    def of(self, frames: Any) -> int:
        if not isinstance(frames, list) or not frames:
            return -1
        key = tuple(
            (str(f.get("filename", "?")), _int(f.get("line")), str(f.get("name", "?")))
            for f in frames
            if isinstance(f, dict)
        )
        found = self.index.get(key)
        if found is None:
            found = self.index[key] = len(self.stacks)
            self.stacks.append(key)
        return found


def _int(value: Any, default: int = -1) -> int:
    if type(value) is int:
        return value
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _build(path: Path, raw: dict[str, Any]) -> Snapshot:
    stacks = _Stacks()
    segments = [_segment(s, stacks) for s in raw["segments"] if isinstance(s, dict)]
    traces_raw = raw.get("device_traces") or []
    if not isinstance(traces_raw, list):
        raise ValueError(f"device_traces is {type(traces_raw).__name__}, not a list")
    traces = [
        [_entry(e, stacks) for e in dev if isinstance(e, dict)] if isinstance(dev, list) else [] for dev in traces_raw
    ]
    blocks = [b for s in raw["segments"] if isinstance(s, dict) for b in s.get("blocks") or [] if isinstance(b, dict)]
    # 2023's blocks have no address and keep their stack in `history`
    old = any("history" in b for b in blocks) or (bool(blocks) and not any("address" in b for b in blocks))
    notes = raw.get("external_annotations")
    settings = raw.get("allocator_settings")
    return Snapshot(
        path=path,
        format="2023" if old else "current",
        segments=segments,
        traces=traces,
        stacks=stacks.stacks,
        annotations=[a for a in notes if isinstance(a, dict)] if isinstance(notes, list) else [],
        settings=settings if isinstance(settings, dict) else {},
    )


def _segment(s: dict[str, Any], stacks: _Stacks) -> Segment:
    address = _int(s.get("address"), 0)
    blocks, at = [], address
    for b in s.get("blocks") or []:
        if not isinstance(b, dict):
            continue
        size = _int(b.get("size"), 0)
        frames = b.get("frames")
        history = b.get("history")
        if not frames and isinstance(history, list) and history and isinstance(history[-1], dict):
            frames = history[-1].get("frames")  # 2023: the last allocation in this block
        block_addr = _int(b.get("address"), at)
        blocks.append(
            Block(block_addr, size, _int(b.get("requested_size"), size), str(b.get("state", "")), stacks.of(frames))
        )
        at = block_addr + size
    return Segment(
        device=_int(s.get("device"), 0),
        address=address,
        total_size=_int(s.get("total_size"), sum(b.size for b in blocks)),
        stream=_int(s.get("stream"), 0),
        segment_type=str(s.get("segment_type", "")),
        is_expandable=bool(s.get("is_expandable", False)),
        blocks=blocks,
    )


def _entry(e: dict[str, Any], stacks: _Stacks) -> tuple[str, int, int, int, int]:
    return (
        str(e.get("action", "")),
        _int(e.get("addr"), 0),
        _int(e.get("size"), 0),
        _int(e.get("time_us")),
        stacks.of(e.get("frames")),
    )
