"""A snapshot's trace as columns, and its stacks interned: what a million-entry snapshot costs in memory
is then a few arrays, not a million dicts each holding a list of 30 frames.

Trace: per device, the entries in the allocator's order as numpy columns (action code, addr, size,
time_us, stack handle). Stacks: every distinct frame once (filename, line, function), every distinct
stack once (a run of frame ids). The native reader (scope.ingest._native.read_snapshot) fills both
while it reads the pickle; without it, the pure-Python path fills them from unpickled objects.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

# The trace's actions, in the native reader's code order; the last stands for any other value.
ACTIONS = (
    "alloc",
    "free_requested",
    "free_completed",
    "segment_alloc",
    "segment_free",
    "oom",
    "snapshot",
    "segment_map",
    "segment_unmap",
    "?",
)
CODE = {name: i for i, name in enumerate(ACTIONS)}
OTHER = len(ACTIONS) - 1

Frame = tuple[str, int, str]  # filename, line, function
Entry = tuple[str, int, int, int, int]  # action, addr, size, time_us (-1: none), stack handle (-1: none)


@dataclass
class Trace:
    """One device's trace entries as columns."""

    action: np.ndarray  # uint8 codes into ACTIONS
    addr: np.ndarray  # int64
    size: np.ndarray  # int64
    time_us: np.ndarray  # int64, -1 where the entry has none
    stack: np.ndarray  # int32 stack handle, -1 where none

    @classmethod
    def from_rows(cls, rows: list[tuple[int, int, int, int, int]]) -> Trace:
        cols = list(zip(*rows, strict=True)) if rows else [(), (), (), (), ()]
        return cls(
            np.array(cols[0], dtype=np.uint8),
            np.array(cols[1], dtype=np.int64),
            np.array(cols[2], dtype=np.int64),
            np.array(cols[3], dtype=np.int64),
            np.array(cols[4], dtype=np.int32),
        )

    def __len__(self) -> int:
        return len(self.action)

    def __getitem__(self, i: int) -> Entry:
        return (
            ACTIONS[self.action[i]],
            int(self.addr[i]),
            int(self.size[i]),
            int(self.time_us[i]),
            int(self.stack[i]),
        )

    def __iter__(self) -> Iterator[Entry]:
        for i in range(len(self)):
            yield self[i]


class Stacks:
    """Distinct frames and stacks; a stack handle is an index into the stacks. From the native reader: its
    interned tables. On the pure-Python path: one handle per frames list (a list shared by several entries
    is one handle), its frames read when first asked for, each paid for by PAY (the pickle-bomb budget)."""

    def __init__(self, pay: Callable[[int], None] | None = None) -> None:
        self.frames: list[Frame] = []
        self.frame_ids = np.zeros(0, dtype=np.int32)  # all stacks' frame ids, one run after another
        self.offsets = np.zeros(1, dtype=np.int64)  # stack i: frame_ids[offsets[i]:offsets[i + 1]]
        self._pay = pay
        self._lists: list[list[Any]] = []  # pure-Python path: the frames lists, unread
        self._by_list: dict[int, int] = {}
        self._frame_of: dict[int, Frame] = {}
        self._read: dict[int, tuple[Frame, ...]] = {}

    @classmethod
    def from_native(cls, out: dict[str, Any]) -> Stacks:
        stacks = cls()
        stacks.frames = out["frames"]
        stacks.frame_ids = np.frombuffer(out["stack_frames"], dtype=np.int32)
        stacks.offsets = np.frombuffer(out["stack_offsets"], dtype=np.int64)
        return stacks

    def count(self) -> int:
        return len(self.offsets) - 1 + len(self._lists)

    def intern(self, frames: list[Any]) -> int:
        """The handle of a frames list (pure-Python path); its frames are read when asked for."""
        handle = self._by_list.get(id(frames))
        if handle is None:
            handle = self._by_list[id(frames)] = self.count()
            self._lists.append(frames)  # kept: its id() stays its own
        return handle

    def get(self, handle: int) -> tuple[Frame, ...]:
        """The frames of a stack handle, innermost first (() for -1)."""
        if handle < 0 or handle >= self.count():
            return ()
        found = self._read.get(handle)
        if found is None:
            built = len(self.offsets) - 1
            if handle < built:
                ids = self.frame_ids[self.offsets[handle] : self.offsets[handle + 1]].tolist()
                found = tuple(self.frames[i] for i in ids)
            else:
                found = self._read_list(self._lists[handle - built])
            self._read[handle] = found
        return found

    def _read_list(self, frames: list[Any]) -> tuple[Frame, ...]:
        """A field of the wrong type is never converted (a container there could be a bomb's root): it
        reads as '?' / -1. A frame dict shared by several lists is read once."""
        if self._pay is not None:
            self._pay(len(frames))
        out = []
        for f in frames:
            if type(f) is dict:
                frame = self._frame_of.get(id(f))
                if frame is None:
                    line = f.get("line")
                    frame = (_text(f.get("filename")), line if type(line) is int else -1, _text(f.get("name")))
                    self._frame_of[id(f)] = frame
                out.append(frame)
        return tuple(out)


def native_traces(out: dict[str, Any], device_lists: list[Any]) -> list[Trace]:
    """The native reader's rows split per device: device i's rows are those appended to its list."""
    action = np.frombuffer(out["action"], dtype=np.uint8)
    owner = np.frombuffer(out["owner"], dtype=np.int32)
    cols = [np.frombuffer(out[k], dtype=np.int64) for k in ("addr", "size", "time_us")]
    stack = np.frombuffer(out["stack"], dtype=np.int32)
    owner_of = {id(lst): i for i, lst in enumerate(out["owners"])}
    traces = []
    for lst in device_lists:
        k = owner_of.get(id(lst), -1) if type(lst) is list else -1
        pick = owner == k if k >= 0 else np.zeros(len(owner), dtype=bool)
        if k >= 0 and len(out["owners"]) == 1:
            traces.append(Trace(action, cols[0], cols[1], cols[2], stack))  # one device: no copy
        else:
            traces.append(Trace(action[pick], cols[0][pick], cols[1][pick], cols[2][pick], stack[pick]))
    return traces


def python_trace(entries: list[Any], stack_of: Any) -> Trace:
    """Unpickled entry dicts as a Trace (the pure-Python path); dicts without an action are dropped, as
    the native reader drops them."""
    rows = []
    for e in entries:
        if type(e) is not dict or "action" not in e:
            continue
        action = e.get("action")
        code = CODE.get(action, OTHER) if type(action) is str else OTHER
        rows.append(
            (
                code,
                _int(e.get("addr"), 0),
                _int(e.get("size"), 0),
                _int(e.get("time_us"), -1),
                stack_of(e.get("frames")),
            )
        )
    return Trace.from_rows(rows)


def _text(value: Any) -> str:
    return value if type(value) is str else "?"


def _int(value: Any, default: int) -> int:
    return value if type(value) is int and -(2**63) <= value < 2**63 else default
