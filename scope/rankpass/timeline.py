"""Per-rank time breakdown per step (the map stage of analyzers/breakdown.py).

Reads one rank's events, never more. Every quantity is the length of an interval set inside the
step window W (the ProfilerStep on the CPU), and the sets partition W, so
compute + exposed comm + exposed memcpy + idle = step time holds exactly.

GPU ranks (kernels in the trace): compute = union of compute kernels; exposed comm = comm kernels
not under compute; overlapped comm = comm under compute; exposed memcpy/memset = copies under
neither; idle = GPU idle time in W (host-bound gaps).

CPU ranks (gloo: no kernels): the training thread (the one that records ProfilerStep) computes when
its innermost event is an operator, except inside communication ops (c10d::*, waits) and the
uninstrumented time of the op that launches a collective (a DDP comm hook's Python: the
communication path, kept as `comm_launch_us`); an annotation's own time is not compute. Its gaps
while a collective of this rank is in flight on gloo's worker threads are blocked communication;
other gaps are idle (Python, data loading). Overlapped comm = in-flight time while the thread
computes.

Exposed communication splits into waiting for peers (inside this rank's wait intervals from the
cross-rank matching: own start to the latest peer's start) and transfer (the rest).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from scope.ingest.classify import GPU_CATS
from scope.rankpass import intervals as iv
from scope.rankpass.arrays import Ev, training_thread
from scope.store import Store

GPU_KINDS = ("compute", "comm", "memcpy", "memset")
EVENT_COLUMNS = ["name", "cat", "kind", "ts_ns", "dur_ns", "thread", "coll_op"]
BREAKDOWN_COLUMNS = [
    "rank",
    "step",
    "step_us",
    "compute_us",
    "exposed_comm_us",
    "exposed_comm_wait_us",
    "exposed_comm_transfer_us",
    "overlapped_comm_us",
    "memcpy_us",
    "idle_us",
    "comm_launch_us",
    "comm_us",
    "start_ns",
    "end_ns",
    "timeline",
]
_PARENT_SCAN = 4096


@dataclass
class RankJob:
    """Picklable: what one worker needs for one rank."""

    store_root: str
    rank: int
    wait_starts: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    wait_ends: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    # The peer each wait interval waits for (-1: not known), and the intervals of this rank's
    # collectives whose group is only partly traced (the step budget's comm_unknown).
    wait_peers: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    unknown_starts: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    unknown_ends: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))


@dataclass
class Sets:
    """A rank's interval sets on the run clock (ns)."""

    timeline: str  # "gpu" | "cpu"
    compute: iv.Spans
    exposed: iv.Spans  # exposed communication
    launch: iv.Spans  # communication path on the training thread (CPU), part of `exposed`
    overlapped: iv.Spans
    memcpy: iv.Spans  # exposed copies
    comm: iv.Spans  # all communication time, exposed or not
    span: tuple[int, int]


def step_windows(store_root: str, rank: int, sets: Sets, steps: pd.DataFrame | None = None) -> pd.DataFrame:
    """The rank's ProfilerStep windows (`steps`: its steps partition, when the caller has read it); one
    window over the whole trace (step -1) without steps."""
    if steps is None:
        path = Store(store_root, {}).part_path("steps", rank)
        steps = pq.read_table(path).to_pandas() if path.exists() else pd.DataFrame()
    if not steps.empty:
        return steps[["step", "start_ns", "end_ns"]]
    lo, hi = sets.span
    return pd.DataFrame({"step": [-1], "start_ns": [lo], "end_ns": [hi]})


def breakdown_rows(rank: int, sets: Sets, waits: iv.Spans, win: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(breakdown_columns(rank, sets, waits, win))[BREAKDOWN_COLUMNS]


def breakdown_columns(rank: int, sets: Sets, waits: iv.Spans, win: pd.DataFrame) -> dict[str, np.ndarray]:
    """breakdown_rows as columns (what the per-rank pass sends: a frame a rank cost more than its rows)."""
    lo = win["start_ns"].to_numpy(dtype=np.int64)
    hi = win["end_ns"].to_numpy(dtype=np.int64)

    def us(spans: iv.Spans) -> np.ndarray:
        return iv.lengths_in_windows(spans, lo, hi) / 1e3

    step_us = (hi - lo) / 1e3
    compute, exposed, memcpy = us(sets.compute), us(sets.exposed), us(sets.memcpy)
    wait = us(iv.intersect(iv.subtract(sets.exposed, sets.launch), waits))
    return {
        "rank": np.full(lo.size, rank, dtype=np.int64),
        "step": win["step"].to_numpy(),
        "step_us": step_us,
        "compute_us": compute,
        "exposed_comm_us": exposed,
        "exposed_comm_wait_us": wait,
        "exposed_comm_transfer_us": exposed - wait,
        "overlapped_comm_us": us(sets.overlapped),
        "memcpy_us": memcpy,
        "idle_us": step_us - compute - exposed - memcpy,
        "comm_launch_us": us(sets.launch),
        "comm_us": us(sets.comm),
        "start_ns": lo,
        "end_ns": hi,
        "timeline": np.full(lo.size, sets.timeline, dtype=object),
    }


def has_gpu(events: pd.DataFrame | Ev) -> bool:
    if isinstance(events, Ev):
        return bool((events.in_cats(GPU_CATS) & events.is_kind(*GPU_KINDS)).any())
    return bool((is_in(events["cat"], GPU_CATS) & is_in(events["kind"], GPU_KINDS)).any())


def is_in(column: pd.Series, values: tuple[str, ...] | frozenset[str]) -> np.ndarray:
    """Which rows hold one of the values: on a categorical (as the store gives names and kinds), a lookup
    of each code in a table of its categories (Series.isin on one cost ~0.5 ms a rank and column)."""
    if not isinstance(column.dtype, pd.CategoricalDtype):
        return column.isin(values).to_numpy()
    hit = np.array([c in values for c in column.cat.categories] + [False], dtype=bool)
    return hit[column.cat.codes.to_numpy()]  # code -1 (missing) reads the extra False


def _spans(df: pd.DataFrame) -> iv.Spans:
    ts = df["ts_ns"].to_numpy(dtype=np.int64)
    return iv.union(ts, ts + df["dur_ns"].to_numpy(dtype=np.int64))


def _span_of(events: pd.DataFrame) -> tuple[int, int]:
    if events.empty:
        return 0, 0
    ts = events["ts_ns"].to_numpy(dtype=np.int64)
    return int(ts.min()), int((ts + events["dur_ns"].to_numpy(dtype=np.int64)).max())


def gpu_sets(events: pd.DataFrame | Ev) -> Sets:
    # masks and arrays, not frames: a selection of the frame per kind cost more than the interval sets
    ev = events if isinstance(events, Ev) else Ev.of(events)
    gpu = ev.in_cats(GPU_CATS)
    ts, end = ev.ts, ev.end

    def spans(*kinds: str) -> iv.Spans:
        mask = gpu & ev.is_kind(*kinds)
        return iv.union(ts[mask], end[mask])

    compute, comm, copies = spans("compute"), spans("comm"), spans("memcpy", "memset")
    on_gpu = gpu & ev.is_kind(*GPU_KINDS)
    return Sets(
        timeline="gpu",
        compute=compute,
        exposed=iv.subtract(comm, compute),
        launch=iv.EMPTY,
        overlapped=iv.intersect(comm, compute),
        memcpy=iv.subtract(copies, iv.join(compute, comm)),
        comm=comm,
        span=(int(ts[on_gpu].min()), int(end[on_gpu].max())) if on_gpu.any() else (0, 0),
    )


def main_thread(events: pd.DataFrame) -> int | None:
    """The training thread (arrays.training_thread) of a frame."""
    kind = events["kind"]
    return training_thread(
        events["thread"].to_numpy(dtype=np.int64),
        events["dur_ns"].to_numpy(dtype=np.int64),
        (kind == "step").to_numpy(dtype=bool),
        (kind == "cpu_op").to_numpy(dtype=bool),
    )


def _is_comm_op(df: pd.DataFrame) -> np.ndarray:
    op = df["coll_op"].astype(object)
    return ((op.notna() & (op != "")) | (df["kind"] == "comm")).to_numpy()


def cpu_sets(events: pd.DataFrame) -> Sets:
    thread = main_thread(events)
    on_main = events["thread"] == thread
    # The thread's call tree (operators and annotations) orders the ops; only operators count as busy.
    tree = events[on_main & events["kind"].isin(("cpu_op", "comm", "annotation"))]
    tree = tree.sort_values(["ts_ns", "dur_ns"], ascending=[True, False], kind="stable")
    ops = tree[tree["kind"] != "annotation"]
    comm_mask = _is_comm_op(ops)
    ts = tree["ts_ns"].to_numpy(dtype=np.int64)
    end = ts + tree["dur_ns"].to_numpy(dtype=np.int64)
    # An annotation's own time is Python (or waiting) even inside an operator: autograd runs FSDP's
    # pre-backward hooks, which wait for all-gathers, inside evaluate_function.
    annotated = _self_time(ts, end, np.flatnonzero((tree["kind"] == "annotation").to_numpy()))
    busy = iv.subtract(_spans(ops), annotated)
    comm_ops = _spans(ops[comm_mask])
    launch = iv.subtract(_launch_gaps(tree, ts, end), comm_ops)
    # Collectives running elsewhere (gloo worker threads) plus the comm ops of the training thread.
    inflight = iv.join(_spans(events[~on_main & (events["kind"] == "comm")]), comm_ops)
    compute = iv.subtract(busy, iv.join(comm_ops, launch))
    blocked = iv.subtract(inflight, busy)
    return Sets(
        timeline="cpu",
        compute=compute,
        exposed=iv.join(comm_ops, launch, blocked),
        launch=launch,
        overlapped=iv.intersect(inflight, compute),
        memcpy=iv.EMPTY,
        comm=iv.join(inflight, launch),
        span=_span_of(events[on_main] if thread is not None else events),
    )


def _launch_gaps(tree: pd.DataFrame, ts: np.ndarray, end: np.ndarray) -> iv.Spans:
    """Uninstrumented time inside the operator that directly encloses a communication op (the
    communication path: e.g. a DDP comm hook running Python before it launches the all-reduce).
    A collective directly under an annotation (FSDP::all_gather, ...) has no such path."""
    comm_mask = _is_comm_op(tree)
    is_op = (tree["kind"] == "cpu_op").to_numpy() & ~comm_mask
    parents = {p for j in np.flatnonzero(comm_mask) if (p := _parent(ts, end, int(j))) is not None and is_op[p]}
    return _self_time(ts, end, np.array(sorted(parents), dtype=np.int64))


def _self_time(ts: np.ndarray, end: np.ndarray, which: np.ndarray) -> iv.Spans:
    """Union of the given events' own time: each one minus everything nested in it (events sorted
    by start, longer first, so an event's descendants follow it up to its end)."""
    starts, ends = [], []
    for p in which:
        last = int(np.searchsorted(ts, end[p], side="left"))
        inner = iv.union(ts[p + 1 : last], np.minimum(end[p + 1 : last], end[p]))
        gaps = iv.subtract((ts[p : p + 1], end[p : p + 1]), inner)
        starts.append(gaps[0])
        ends.append(gaps[1])
    if not starts:
        return iv.EMPTY
    return iv.union(np.concatenate(starts), np.concatenate(ends))


def _parent(ts: np.ndarray, end: np.ndarray, j: int) -> int | None:
    """Innermost op enclosing op j (ops sorted by start, longer first): the latest earlier op that
    ends no earlier than j does. Scans back in growing chunks; gives up beyond a bound."""
    hi = j
    size = 64
    while hi > 0 and j - hi < _PARENT_SCAN:
        lo = max(0, hi - size)
        found = np.flatnonzero(end[lo:hi] >= end[j])
        if found.size:
            return lo + int(found[-1])
        hi = lo
        size *= 4
    return None
