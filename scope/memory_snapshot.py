"""Read CUDA caching-allocator snapshots (torch.cuda.memory._dump_snapshot pickles), never trusting them.

A snapshot is a pickle, so it is read with the Flight Recorder's refusing unpickler (no global can load:
only dicts, lists, strings and numbers come out), refused when the file is larger than `max_bytes`, and
walked at a fixed depth on a budget proportional to its size (_Walk): shared references that would
expand far past its size (a pickle bomb) are refused there, in time linear in the file, and no field of
the wrong type is ever converted (a container's str() could be the bomb).

Two formats are read into one model:
  - 2023 (torch 2.0): blocks carry no address (it follows from the segment's and the sizes before it)
    and keep their stack in `history` [{addr, real_size, frames}]; trace entries have no time.
  - current (torch >= 2.1): blocks carry `address` and `frames`; trace entries `time_us`; segments
    `segment_pool_id` and `is_expandable`; the snapshot may hold `external_annotations` and
    `allocator_settings`.
Stacks are referred to by a handle and turned into frames only when asked (Snapshot.stack): the analysis
needs the stacks of the blocks live at the peak, a small part of a long trace's.

Reading: the native core (scope.ingest._native.read_snapshot) runs the pickle's opcodes itself, refusing
any that could name a global, and streams the trace into columns with the stacks interned, so a
million-entry snapshot takes a few hundred MB, not several GB. Without the native core the refusing
unpickler loads the whole pickle and the same columns are made from its objects.
"""

from __future__ import annotations

import io
import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scope.errors import ScopeError
from scope.flight_recorder import _NoGlobalsUnpickler
from scope.memory_columns import Frame, Stacks, Trace, native_traces, python_trace

# Larger snapshots are refused rather than unpickled (a pickle's objects take several times its bytes).
MAX_SNAPSHOT_BYTES = 2 << 30
# The walk's budget: each list element it visits takes at least one byte of the pickle (a memo reference is
# two), and the walk visits each list at most twice, so a real snapshot stays well inside.
EXPAND_BASE = 100_000
EXPAND_PER_BYTE = 2
ACTIVE_STATES = ("active_allocated", "active_pending_free", "active_awaiting_free")

__all__ = ["Block", "Frame", "Segment", "Snapshot", "Trace", "load_snapshot", "looks_like_snapshot"]


@dataclass
class Block:
    address: int
    size: int
    requested_size: int
    state: str
    stack: int  # handle for Snapshot.stack (-1: none recorded)

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
    traces: list[Trace]  # per device, in the allocator's order
    annotations: list[dict[str, Any]] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    stacks: Stacks = field(default_factory=Stacks, repr=False)

    def entries(self) -> int:
        return sum(len(t) for t in self.traces)

    def stack(self, handle: int) -> tuple[Frame, ...]:
        """The frames of a stack handle (innermost first), read on first use."""
        return self.stacks.get(handle)


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
    budget = EXPAND_BASE + EXPAND_PER_BYTE * len(data)
    native = _native_read(path, data, budget)
    raw = native["root"] if native is not None else _unpickle(path, data)
    del data  # the pickle's bytes are no longer needed: the peak is the columns, not both
    if isinstance(raw, list):  # torch 1.x: _snapshot() was the segment list alone
        raw = {"segments": raw, "device_traces": []}
    if not isinstance(raw, dict) or not isinstance(raw.get("segments"), list):
        got = type(raw).__name__ if not isinstance(raw, dict) else f"keys {sorted(map(str, raw))[:6]}"
        raise ScopeError(f"{path}: not a memory snapshot (expected a dict with 'segments', got {got})")
    try:
        return _build(path, raw, budget, native)
    except (TypeError, ValueError, AttributeError, KeyError, IndexError, RecursionError, OverflowError) as exc:
        raise ScopeError(f"{path}: malformed memory snapshot ({type(exc).__name__}: {str(exc)[:100]})") from None


def _native_read(path: Path, data: bytes, budget: int) -> dict[str, Any] | None:
    """The native reader's output, None without the native core (or SCOPE_NATIVE=0)."""
    from scope.ingest.dispatch import native_enabled

    if not data or data[:1] != b"\x80" or not native_enabled():
        return None  # said by _unpickle, in the same words either way
    from scope.ingest import _native

    try:
        out: dict[str, Any] = _native.read_snapshot(data, budget)
    except ValueError as exc:
        text = str(exc)
        if "pickle bomb" in text:
            raise ScopeError(f"{path}: memory snapshot refused: {text}") from None
        if "truncated" in text:
            raise ScopeError(f"{path}: truncated or corrupt memory snapshot pickle ({text})") from None
        raise ScopeError(f"{path}: unsafe or corrupt memory snapshot pickle ({text})") from None
    return out


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
    return obj


class _Walk:
    """One pass over the snapshot's plain values, at a fixed depth, paying for every element it visits from
    a budget proportional to the file's size: a pickle shares objects by reference, so a few bytes can make
    a list reached a billion times (a pickle bomb), which the budget stops. Frames lists are turned into
    stack handles by the Stacks interner (the native reader has done it already: the value is the handle)."""

    def __init__(self, path: Path, budget: int) -> None:
        self.path, self.budget, self.limit = path, budget, budget
        self.stacks = Stacks(self.pay)

    def items(self, value: Any) -> list[Any]:
        """VALUE's elements when it is a list (nothing else is walked), paid for."""
        if type(value) is not list:
            return []
        self.pay(len(value))
        return value

    def pay(self, n: int) -> None:
        self.budget -= n + 1
        if self.budget < 0:
            raise ScopeError(
                f"{self.path}: memory snapshot refused: its shared references expand past {self.limit:,} values "
                "(a pickle bomb, not a snapshot)"
            )

    def stack(self, frames: Any) -> int:
        """A handle for this frames value: the native reader's handle, or a list interned here (-1: none)."""
        if type(frames) is int:
            return frames if 0 <= frames < self.stacks.count() else -1
        if type(frames) is not list or not frames:
            return -1
        return self.stacks.intern(frames)


def _text(value: Any) -> str:
    """A string field; anything else (a container could be a bomb's root: never str() it) is '?'."""
    return value if type(value) is str else "?"


def _int(value: Any, default: int = -1) -> int:
    if type(value) is int:
        return value
    if type(value) in (float, str):
        try:
            return int(value)
        except (ValueError, OverflowError):
            return default
    return default


def _build(path: Path, raw: dict[str, Any], budget: int, native: dict[str, Any] | None) -> Snapshot:
    walk = _Walk(path, budget)
    stacks = walk.stacks = Stacks.from_native(native) if native is not None else Stacks(walk.pay)
    raw_segments = [s for s in walk.items(raw["segments"]) if type(s) is dict]
    segments = [_segment(s, walk) for s in raw_segments]
    traces_raw = raw.get("device_traces") or []
    if type(traces_raw) is not list:
        raise ValueError(f"device_traces is {type(traces_raw).__name__}, not a list")
    if native is not None:
        traces = native_traces(native, walk.items(traces_raw))
    else:
        traces = [python_trace(walk.items(dev), walk.stack) for dev in walk.items(traces_raw)]
    blocks = [b for s in raw_segments for b in walk.items(s.get("blocks")) if type(b) is dict]
    # 2023's blocks have no address and keep their stack in `history`
    old = any("history" in b for b in blocks) or (bool(blocks) and not any("address" in b for b in blocks))
    notes = raw.get("external_annotations")
    settings = raw.get("allocator_settings")
    return Snapshot(
        path=path,
        format="2023" if old else "current",
        segments=segments,
        traces=traces,
        annotations=[
            {k: v for k, v in a.items() if type(v) in (str, int, float)} for a in walk.items(notes) if type(a) is dict
        ],
        settings={k: v for k, v in settings.items() if type(v) in (str, int, float, bool)}
        if type(settings) is dict
        else {},
        stacks=stacks,
    )


def _segment(s: dict[str, Any], walk: _Walk) -> Segment:
    address = _int(s.get("address"), 0)
    blocks, at = [], address
    for b in walk.items(s.get("blocks")):
        if type(b) is not dict:
            continue
        size = _int(b.get("size"), 0)
        stack = walk.stack(b.get("frames"))
        history = walk.items(b.get("history"))
        if stack < 0 and history and type(history[-1]) is dict:
            stack = walk.stack(history[-1].get("frames"))  # 2023: the last allocation in this block
        block_addr = _int(b.get("address"), at)
        requested = _int(b.get("requested_size"), size)
        blocks.append(Block(block_addr, size, requested, _text(b.get("state")), stack))
        at = block_addr + size
    return Segment(
        device=_int(s.get("device"), 0),
        address=address,
        total_size=_int(s.get("total_size"), sum(b.size for b in blocks)),
        stream=_int(s.get("stream"), 0),
        segment_type=_text(s.get("segment_type")),
        is_expandable=s.get("is_expandable") is True,
        blocks=blocks,
    )
