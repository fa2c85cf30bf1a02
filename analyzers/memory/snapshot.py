"""One allocator snapshot analyzed: its timeline replayed, the peak attributed to the stacks that held it,
and the reserve split into what is allocated, internal free and external free.

Replay: the trace entries of a device change the allocated level (`alloc` adds, `free_completed` removes;
`free_requested` where a trace has no `free_completed` at all). A block freed in the trace but never
allocated in it was allocated before recording began, as was a block still active in the segments whose
allocation the trace does not hold: both count from the start (PyTorch's memory viewer does the same).

Fragmentation, as PyTorch's `_memory_viz segsum` splits it: reserved = the segments' sizes; internal free
= active blocks' size beyond what was requested (rounding); external free = inactive blocks inside the
segments. Expandable segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True) map and unmap pages of
one growing segment, so external free stops being stranded in segments of the wrong size: what they could
give back is at most the external free, and the share of it that no single free block can serve (the
external free minus the largest free block) is what the cache cannot hand to one large request today.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
from scope.analyzers.memory.frames import op_of

from scope.memory_columns import CODE, Trace
from scope.memory_snapshot import Frame, Snapshot

# Frames inside these paths are the framework's, not the user's: a site is the first frame outside them.
FRAMEWORK_PATHS = ("/torch/", "/site-packages/", "/dist-packages/", "<frozen", "runpy.py", "/lib/python3")
# C and C++ frames (recorded with `_record_memory_history(stacks="all")`: the allocator, the dispatcher,
# the interpreter) are never the user's site: torch's symbolizer names their file by its base name, or
# not at all ('??', '')
NATIVE_SUFFIXES = (".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".cu", ".cuh", ".o", ".so")
# the backward node a C++ frame runs: torch::autograd::generated::BmmBackward0::apply(...)
AUTOGRAD_NODE = re.compile(r"torch::autograd::generated::([A-Za-z0-9_]+Backward[0-9]*)::apply")
TOP_SITES = 10
BEFORE_RECORDING = "(allocated before recording)"


@dataclass
class Replay:
    device: int
    levels: np.ndarray  # allocated bytes after each entry (levels[0]: before the first)
    times_us: np.ndarray  # -1 where the entry has no time
    initial_bytes: int  # held by blocks allocated before recording
    peak_bytes: int
    peak_entry: int  # index of the entry after which the peak is reached (-1: before any)
    live_at_peak: dict[int, tuple[int, int]]  # addr -> (size, stack)
    oom_entries: list[tuple[int, int]] = field(default_factory=list)  # (entry index, size requested)
    # the addresses in live_at_peak allocated before recording (Mosaic's "static" memory, when none of
    # them is freed in the trace after the peak): their stacks, if any, are older than the trace
    before_at_peak: frozenset[int] = frozenset()

    def peak_by_stack(self) -> dict[tuple[int, bool], tuple[int, int]]:
        """The blocks live at the peak grouped by the stack that allocated them and whether they were
        allocated before recording: (stack, before) -> (bytes, blocks), in the order first seen."""
        by_stack: dict[tuple[int, bool], tuple[int, int]] = {}
        for addr, (size, stack) in self.live_at_peak.items():
            key = (stack, addr in self.before_at_peak)
            nbytes, blocks = by_stack.get(key, (0, 0))
            by_stack[key] = (nbytes + size, blocks + 1)
        return by_stack


def replay(snap: Snapshot, device: int) -> Replay:
    """The allocated level after every entry, in array operations (a million entries in well under a
    second): each free is matched to the previous event at its address, found by sorting the events by
    (address, position)."""
    trace = snap.traces[device] if device < len(snap.traces) else Trace.from_rows([])
    n, act, size = len(trace), trace.action, trace.size
    free = CODE["free_completed"] if (act == CODE["free_completed"]).any() else CODE["free_requested"]
    ev = np.flatnonzero((act == CODE["alloc"]) | (act == free))
    ev = ev[np.lexsort((ev, trace.addr[ev]))]  # by address, then position
    addr, is_alloc = trace.addr[ev], act[ev] == CODE["alloc"]
    same = np.zeros(len(ev), dtype=bool)
    same[1:] = addr[1:] == addr[:-1]
    after_alloc = np.zeros(len(ev), dtype=bool)
    after_alloc[1:] = same[1:] & is_alloc[:-1]
    delta = np.zeros(n, dtype=np.int64)
    delta[ev[is_alloc]] = size[ev[is_alloc]]
    matched = np.flatnonzero(~is_alloc & after_alloc)
    delta[ev[matched]] = -size[ev[matched - 1]]
    # a free first at its address: its block was allocated before recording (and is freed here)
    early = ev[~is_alloc & ~same]
    delta[early] = -size[early]
    # the next event at the same address ends a block's life (a free, or an alloc that replaces it)
    end = np.full(len(ev), n, dtype=np.int64)
    end[:-1] = np.where(same[1:], ev[1:], n)
    before = {int(trace.addr[i]): (int(size[i]), int(trace.stack[i]), int(i)) for i in early}
    allocated = set(addr[is_alloc].tolist())
    for seg in snap.segments:
        if seg.device == device:
            for b in seg.blocks:
                if b.active and b.address not in allocated and b.address not in before:
                    before[b.address] = (b.size, b.stack, n)
    initial = sum(s for s, _, _ in before.values())
    levels = np.empty(n + 1, dtype=np.int64)
    levels[0] = initial
    np.cumsum(delta, out=levels[1:])
    levels[1:] += initial
    peak_at = int(np.argmax(levels[1:])) if n and levels[1:].max() > initial else -1
    live = {a: (s, st) for a, (s, st, freed_at) in before.items() if freed_at > peak_at}
    before_live = set(live)
    alive = is_alloc & (ev <= peak_at) & (end > peak_at)
    for i in ev[alive].tolist():
        live[int(trace.addr[i])] = (int(size[i]), int(trace.stack[i]))
    ooms = [(int(i), int(size[i])) for i in np.flatnonzero(act == CODE["oom"])]
    peak = int(levels[peak_at + 1])
    return Replay(device, levels, trace.time_us, initial, peak, peak_at, live, ooms, frozenset(before_live))


def is_native(frame: Frame) -> bool:
    """A C/C++ frame: no file, a C/C++ or object file, or line 0 in a file that is not Python source."""
    filename = frame[0]
    return filename in ("??", "") or filename.endswith(NATIVE_SUFFIXES) or (not frame[1] and ".py" not in filename)


def site_of(stack: tuple[Frame, ...]) -> str:
    """The first frame of the user's code (the framework's and C++ frames skipped), as 'name file:line'.
    A stack of C++ frames only (the autograd engine's own thread runs the backward with no Python on
    it) is named by its autograd node and ATen op: `BmmBackward0 > aten::bmm`."""
    for frame in stack:
        if not is_native(frame) and not any(p in frame[0] for p in FRAMEWORK_PATHS):
            filename, line, name = frame
            return f"{name} {filename}:{line}"
    if any(not is_native(f) for f in stack):  # Python frames, all the framework's: the innermost one
        filename, line, name = next(f for f in stack if not is_native(f))
        return f"{name} {filename}:{line}"
    node = next((m.group(1) for f in stack if (m := AUTOGRAD_NODE.search(f[2]))), "")
    named = " > ".join(x for x in (node, op_of(stack)) if x)
    if named:
        return f"{named} (C++ frames only)"
    if stack:
        filename, line, name = stack[0]
        return f"{name} {filename}:{line}"
    return "(no stack recorded)"


def phase_of(stack: tuple[Frame, ...]) -> str:
    """forward, backward or optimizer, from the stack's own frames; 'unknown' where they do not say."""
    names = [(f[0], f[2]) for f in stack]
    if any("backward" in n or "autograd" in fn or AUTOGRAD_NODE.search(n) for fn, n in names):
        return "backward"
    if any("/optim/" in fn or (n in ("step", "_init_group") and "optim" in fn) for fn, n in names):
        return "optimizer"
    if any(n == "forward" or n.endswith("_forward") for _, n in names):
        return "forward"
    return "unknown"


@dataclass
class Site:
    """Where part of the peak was allocated: the user's frame, the bytes and blocks live there at the peak."""

    site: str
    bytes: int
    blocks: int
    phase: str
    stack: tuple[Frame, ...]


def peak_sites(snap: Snapshot, rep: Replay, top: int = TOP_SITES) -> list[Site]:
    """The stacks that held the peak, grouped by site, largest first. Blocks from before recording with
    no stack (a model's weights, loaded before the history was turned on) are a site of their own."""
    by_site: dict[str, Site] = {}
    # largest stack first: a site keeps the stack that holds most of it
    for (stack, before), (nbytes, blocks) in sorted(rep.peak_by_stack().items(), key=lambda kv: -kv[1][0]):
        frames = snap.stack(stack)
        name = site_of(frames) if frames or not before else BEFORE_RECORDING
        site = by_site.setdefault(name, Site(name, 0, 0, phase_of(frames), frames))
        site.bytes += nbytes
        site.blocks += blocks
    return sorted(by_site.values(), key=lambda r: -r.bytes)[:top]


@dataclass
class Reserve:
    reserved: int
    allocated: int
    requested: int
    internal_free: int
    external_free: int
    largest_free_block: int
    segments: int
    expandable: bool

    @property
    def stranded(self) -> int:
        """External free no single free block can serve: what one large request cannot get from the cache."""
        return max(0, self.external_free - self.largest_free_block)


def reserve(snap: Snapshot, device: int) -> Reserve:
    """The reserve split like segsum: allocated, internal free (rounding), external free (inactive blocks)."""
    reserved = allocated = requested = internal = external = largest = count = 0
    expandable = False
    for seg in snap.segments:
        if seg.device != device:
            continue
        count += 1
        reserved += seg.total_size
        expandable |= seg.is_expandable
        for b in seg.blocks:
            if b.active:
                allocated += b.size
                requested += b.requested_size
                internal += max(0, b.size - b.requested_size)
            else:
                external += b.size
                largest = max(largest, b.size)
    return Reserve(reserved, allocated, requested, internal, external, largest, count, expandable)


def open_annotations(snap: Snapshot, device: int, time_us: int) -> list[str]:
    """The annotations open at TIME_US on DEVICE, outermost first: the snapshot's external_annotations
    (record_function ranges recorded with the history: START / END, with time_us), which place the peak
    in a phase or a step the stacks alone do not name."""
    if time_us < 0:
        return []
    open_: list[str] = []
    marks = [a for a in snap.annotations if a.get("device", device) == device and isinstance(a.get("time_us"), int)]
    for mark in sorted(marks, key=lambda a: a["time_us"]):
        if mark["time_us"] > time_us:
            break
        name = str(mark.get("name", "?"))
        if mark.get("stage") == "START":
            open_.append(name)
        elif mark.get("stage") == "END" and name in open_:
            del open_[len(open_) - 1 - open_[::-1].index(name)]
    return open_


def phase_of_annotations(names: list[str]) -> str:
    """forward / backward / optimizer from the innermost open annotation that says one; '' otherwise."""
    for name in reversed(names):
        low = name.lower()
        for word, phase in (("backward", "backward"), ("optim", "optimizer"), ("forward", "forward")):
            if word in low:
                return phase
    return ""


def devices_of(snap: Snapshot) -> list[int]:
    found = {s.device for s in snap.segments} | {i for i, t in enumerate(snap.traces) if t}
    return sorted(found)
