"""One rank's Kineto events as graph nodes and the edges within the rank (all its steps at once).

Lanes: each CPU thread and each GPU stream. A thread's nodes are its top-level ops, cut where an
anchor runs inside them (a CUDA runtime call, a communication op, a data loader fetch, and on CPU-only
ranks c10d's enqueue), so the ops that link lanes are nodes of their own; a stream's nodes are its
kernels and copies. Edges within the rank:
- program order on each lane (within a step);
- launch: a runtime call to the GPU op with its correlation id, timed from the call's start;
- sync: a CUDA synchronize waits for the latest GPU op that ended before it returned; the training
  thread waits for an asynchronous collective (gloo's worker threads) when it sat idle until the
  collective ended and went on right after;
- enqueue: on CPU-only ranks the k-th c10d op of a step on the training thread starts the k-th gloo op.
A communication op is two nodes: its arrival (zero length, at its start) and its completion (filled in
by `assemble` from the cross-rank matching: from the last participant's arrival to its own end).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scope.analyzers.critical_path.classes import op_class
from scope.analyzers.critical_path.core import LAUNCH, PROGRAM, SYNC
from scope.analyzers.critical_path.cuda_sync import host_waits

from scope.ingest.classify import GPU_CATS
from scope.rankpass.timeline import main_thread

READ = ["event_id", "ts_ns", "dur_ns", "name", "cat", "kind", "stream", "thread", "correlation", "step", "coll_op"]
NODE_COLUMNS = ["step", "lane", "name", "cls", "start", "dur", "event_id", "role"]
# The training thread waited for a collective when it went on within this long (µs) of its end.
WAIT_RESUME_US = 1000.0
_SKIP_KINDS = ("step", "python", "other")


@dataclass
class RankPart:
    rank: int
    nodes: pd.DataFrame  # NODE_COLUMNS; role: "op", "arrive", "complete"
    edges: pd.DataFrame  # src, dst (rows of nodes), kind, lag (µs, before residuals)


class _Nodes:
    def __init__(self) -> None:
        self.rows: list[tuple] = []
        self.edges: list[tuple[int, int, int, float]] = []

    def add(self, step: int, lane: str, name: str, cls: str, start: float, dur: float, eid: int, role: str) -> int:
        self.rows.append((step, lane, name, cls, start, dur, eid, role))
        return len(self.rows) - 1

    def edge(self, src: int, dst: int, kind: int, lag: float = 0.0) -> None:
        self.edges.append((src, dst, kind, lag))


def rank_part(events: pd.DataFrame, rank: int) -> RankPart:
    ev = events[(events["step"] >= 0) & ~events["kind"].isin(_SKIP_KINDS)].copy()
    # plain object columns: the lanes are walked row by row, and Arrow-backed strings cost 10x there
    for column in ("name", "cat", "kind"):
        ev[column] = ev[column].astype(str).astype(object)
    ev["coll_op"] = ev["coll_op"].astype(object).fillna("").astype(str).astype(object)
    ev = _clip_to_steps(ev, events)
    on_gpu = ev["cat"].astype(str).isin(GPU_CATS).to_numpy() & (ev["kind"] != "annotation").to_numpy()
    out = _Nodes()
    node_of: dict[int, int] = {}  # event id -> its node (its arrival for communication)
    done_of: dict[int, int] = {}  # event id -> its last node (its completion for communication)
    gpu = ev[on_gpu]
    # cuda_sync events sit on the GPU's timeline (a stream waiting for an event): edges, not lane work
    gpu_sync = (ev["cat"].astype(str) == "cuda_sync").to_numpy()
    # old traces (2021 Kineto) write no tid on CPU ops: their thread is -1, one lane of its own
    cpu = ev[~on_gpu & ~gpu_sync]
    main = main_thread(events)
    if main is None and not cpu.empty:
        main = int(cpu.groupby("thread")["dur_ns"].sum().idxmax())
    cpu_only = gpu.empty
    if cpu_only:
        ev, on_gpu, gpu_sync = _fold_inline_transfers(ev, on_gpu, gpu_sync)
    cols = _Columns(ev)
    for lane, idx in _lanes(cols, on_gpu, "stream", ["stream", "ts_ns"]):
        _gpu_lane(out, cols, idx, lane, node_of, done_of)
    for lane, idx in _lanes(cols, ~on_gpu & ~gpu_sync, "thread", ["thread", "ts_ns", "neg_dur"]):
        _cpu_lane(out, cols, idx, lane, cpu_only, node_of, done_of)
    _launch_edges(out, ev, on_gpu, node_of)
    _sync_edges(out, ev, on_gpu, done_of)
    _stream_wait_edges(out, ev, on_gpu, gpu_sync, node_of, done_of)
    if main is not None:
        _collective_waits(out, f"thread {main}")
        if cpu_only:
            _enqueue_edges(out, f"thread {main}")
    nodes = pd.DataFrame(out.rows, columns=NODE_COLUMNS)
    edges = pd.DataFrame(out.edges, columns=["src", "dst", "kind", "lag"])
    return RankPart(rank, nodes, edges)


def rank_part_job(job: tuple[str, int]) -> RankPart:
    """rank_part of one rank of the store at `root`, for worker processes (scope.engine.map_unordered)."""
    from scope.store import Store

    root, rank = job
    return rank_part(Store.open(root).read_events(rank, columns=READ).to_pandas(), rank)


def _clip_to_steps(ev: pd.DataFrame, events: pd.DataFrame) -> pd.DataFrame:
    """Start and end (µs) of each event, cut to its step's ProfilerStep window on this rank: the step is
    that window (an optimizer annotation or an asynchronous collective running past it belongs to the
    next step's time). Events wholly outside go."""
    ev["start"] = ev["ts_ns"] / 1e3
    ev["end"] = ev["start"] + ev["dur_ns"] / 1e3
    marks = events[events["kind"] == "step"]
    if marks.empty:
        return ev
    lo = marks.groupby("step")["ts_ns"].min()
    hi = (marks["ts_ns"] + marks["dur_ns"]).groupby(marks["step"]).max()
    step = ev["step"].to_numpy()
    begin = lo.reindex(step).to_numpy(dtype=np.float64) / 1e3
    finish = hi.reindex(step).to_numpy(dtype=np.float64) / 1e3
    known = ~np.isnan(begin)
    ev["start"] = np.where(known, np.maximum(ev["start"].to_numpy(), begin), ev["start"].to_numpy())
    ev["end"] = np.where(known, np.minimum(ev["end"].to_numpy(), finish), ev["end"].to_numpy())
    return ev[~known | (ev["end"] >= ev["start"]).to_numpy()]


def _fold_inline_transfers(
    ev: pd.DataFrame, on_gpu: np.ndarray, gpu_sync: np.ndarray
) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """gloo runs a send or recv on the calling thread: its transfer ("gloo:send") starts inside the
    c10d call ("c10d::send") and outlasts it. The two become one communication op from the call's
    start (the rank's arrival) to the transfer's end, under the transfer's event id (the one the
    collectives table names); the call's row goes."""
    cpu = ~on_gpu & ~gpu_sync
    kind, coll = ev["kind"].to_numpy(), ev["coll_op"].to_numpy()
    moves = ev[cpu & (kind == "comm")]
    calls = ev[cpu & (kind == "cpu_op") & (coll != "")]
    # collectives run on gloo's worker threads: only a transfer on its caller's thread is folded
    calls = calls[calls["thread"].isin(moves["thread"].unique()).to_numpy()]
    calls = calls[calls["name"].str.startswith("c10d::").to_numpy()]
    if calls.empty or moves.empty:
        return ev, on_gpu, gpu_sync
    left = moves[["start", "thread"]].reset_index().rename(columns={"index": "row"}).sort_values("start")
    right = calls[["start", "end", "thread"]].reset_index().rename(columns={"index": "call", "start": "c_start"})
    hit = pd.merge_asof(
        left, right.sort_values("c_start"), left_on="start", right_on="c_start", by="thread", direction="backward"
    ).dropna(subset=["call"])
    hit = hit[hit["end"] >= hit["start"]].drop_duplicates("call")  # the call was still running
    if hit.empty:
        return ev, on_gpu, gpu_sync
    rows, begin = hit["row"].to_numpy(), hit["c_start"].to_numpy()
    finish = np.maximum(ev.loc[rows, "end"].to_numpy(), hit["end"].to_numpy())
    ev = ev.copy()
    ev.loc[rows, "start"], ev.loc[rows, "end"] = begin, finish
    ev.loc[rows, "ts_ns"] = np.rint(begin * 1e3).astype(np.int64)
    ev.loc[rows, "dur_ns"] = np.rint((finish - begin) * 1e3).astype(np.int64)
    keep = ~ev.index.isin(hit["call"].astype(ev.index.dtype))
    return ev[keep], on_gpu[keep], gpu_sync[keep]


class _Columns:
    """The events' columns as Python lists and numpy arrays: lanes are walked row by row."""

    def __init__(self, ev: pd.DataFrame) -> None:
        self.frame = ev.assign(neg_dur=-ev["dur_ns"])
        self.name: list[str] = ev["name"].tolist()
        self.kind: list[str] = ev["kind"].tolist()
        self.coll_op: list[str] = ev["coll_op"].tolist()
        self.step: list[int] = ev["step"].astype("int64").tolist()
        self.eid: list[int] = ev["event_id"].astype("int64").tolist()
        self.start = ev["start"].to_numpy(np.float64)
        self.end = ev["end"].to_numpy(np.float64)


def _lanes(cols: _Columns, mask: np.ndarray, key: str, order: list[str]) -> list[tuple[str, np.ndarray]]:
    """(lane name, row positions in time order) per stream or thread among the masked rows."""
    sub = cols.frame[mask]
    if sub.empty:
        return []
    rows = np.flatnonzero(mask)[np.lexsort([sub[c].to_numpy() for c in reversed(order)])]
    keys = cols.frame[key].to_numpy()[rows]
    cuts = np.flatnonzero(keys[1:] != keys[:-1]) + 1
    return [(f"{key} {keys[part[0]]}", rows[part]) for part in np.split(np.arange(len(rows)), cuts)]


def _add_op(
    out: _Nodes, cols: _Columns, i: int, lane: str, cls: str, start: float, end: float, is_comm: bool
) -> tuple[int, int]:
    """Row i as one node, or for communication as arrival + completion; (first node, last node)."""
    step, name, eid = cols.step[i], cols.name[i], cols.eid[i]
    if not is_comm:
        n = out.add(step, lane, name, cls, start, end - start, eid, "op")
        return n, n
    a = out.add(step, lane, name, "arrive", start, 0.0, eid, "arrive")
    c = out.add(step, lane, name, cls, start, end - start, eid, "complete")
    out.edge(a, c, PROGRAM)
    return a, c


def _chain(out: _Nodes, prev: tuple[int, int] | None, first: int, step: int) -> None:
    if prev is not None and prev[1] == step:
        out.edge(prev[0], first, PROGRAM)


def _gpu_lane(out: _Nodes, cols: _Columns, idx: np.ndarray, lane: str, node_of: dict, done_of: dict) -> None:
    prev: tuple[int, int] | None = None
    for i in idx.tolist():
        is_comm = cols.kind[i] == "comm"
        cls = op_class(cols.name[i], True)
        first, last = _add_op(out, cols, i, lane, cls, float(cols.start[i]), float(cols.end[i]), is_comm)
        node_of[cols.eid[i]], done_of[cols.eid[i]] = first, last
        _chain(out, prev, first, cols.step[i])
        prev = (last, cols.step[i])


def _is_anchor(cols: _Columns, idx: list[int], cpu_only: bool) -> np.ndarray:
    """Ops that get nodes of their own inside a thread's top-level ops."""
    kind, names, coll = cols.kind, cols.name, cols.coll_op
    return np.array(
        [
            kind[i] in ("runtime", "comm")
            or "DataLoader" in names[i]
            or (cpu_only and kind[i] == "cpu_op" and coll[i] != "")
            for i in idx
        ],
        dtype=bool,
    )


def _outermost(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Intervals (sorted by start, longest first on ties) not inside an earlier one."""
    if not len(start):
        return np.zeros(0, dtype=bool)
    reach = np.maximum.accumulate(end)
    return np.r_[True, start[1:] >= reach[:-1]]


def _cpu_lane(
    out: _Nodes, cols: _Columns, idx: np.ndarray, lane: str, cpu_only: bool, node_of: dict, done_of: dict
) -> None:
    """A thread's top-level ops, cut around the anchors inside them (see the module's docstring)."""
    rows = idx.tolist()
    start, end = cols.start[idx].tolist(), cols.end[idx].tolist()
    s_arr, e_arr = cols.start[idx], cols.end[idx]
    top = np.flatnonzero(_outermost(s_arr, e_arr)).tolist()
    a_idx = np.flatnonzero(_is_anchor(cols, rows, cpu_only))
    anchors = a_idx[_outermost(s_arr[a_idx], e_arr[a_idx])].tolist()
    prev: tuple[int, int] | None = None
    k = 0
    for i in top:
        row = rows[i]
        step, cursor, name = cols.step[row], start[i], cols.name[row]
        cls = op_class(name)
        while k < len(anchors) and start[anchors[k]] < end[i]:
            j = anchors[k]
            k += 1
            if start[j] < start[i]:
                continue
            if j != i and start[j] > cursor:
                piece = out.add(step, lane, name, cls, cursor, start[j] - cursor, cols.eid[row], "op")
                _chain(out, prev, piece, step)
                prev = (piece, step)
            ar = rows[j]
            a_cls = op_class(cols.name[ar])
            is_comm = cols.kind[ar] == "comm" or a_cls == "sync"
            first, last = _add_op(out, cols, ar, lane, a_cls, start[j], end[j], is_comm)
            node_of[cols.eid[ar]], done_of[cols.eid[ar]] = first, last
            _chain(out, prev, first, cols.step[ar])
            prev, cursor = (last, cols.step[ar]), end[j]
        if end[i] > cursor:
            piece = out.add(step, lane, name, cls, cursor, end[i] - cursor, cols.eid[row], "op")
            _chain(out, prev, piece, step)
            prev = (piece, step)


def _launch_edges(out: _Nodes, ev: pd.DataFrame, on_gpu: np.ndarray, node_of: dict) -> None:
    """Runtime call -> the GPU op with its correlation id, timed from the call's start."""
    corr = ev["correlation"].to_numpy()
    calls = ev[~on_gpu & (ev["kind"] == "runtime").to_numpy() & (corr > 0)]
    ops = ev[on_gpu & (corr > 0)]
    if calls.empty or ops.empty:
        return
    pairs = calls[["correlation", "event_id", "dur_ns"]].merge(
        ops[["correlation", "event_id"]], on="correlation", suffixes=("_call", "_op")
    )
    for call, op, dur in zip(pairs["event_id_call"], pairs["event_id_op"], pairs["dur_ns"], strict=True):
        if int(call) in node_of and int(op) in node_of:
            out.edge(node_of[int(call)], node_of[int(op)], LAUNCH, -float(dur) / 1e3)


def _sync_edges(out: _Nodes, ev: pd.DataFrame, on_gpu: np.ndarray, done_of: dict) -> None:
    """A blocking runtime call (cuda_sync.host_waits) returns after the GPU ops it waits for: each of
    them -> the call's completion, which then lasts from the last one's end (or the call's start, if
    later) to the call's return."""
    if not on_gpu.any():
        return
    end_of = dict(zip(ev["event_id"].astype("int64").tolist(), ev["end"].tolist(), strict=True))
    for call, ops in host_waits(ev, on_gpu):
        ops = [op for op in ops if op in done_of]
        if call not in done_of or not ops:
            continue
        c = done_of[call]
        row = out.rows[c]
        start, end = row[4], row[4] + row[5]
        begin = min(max(start, max(end_of[op] for op in ops)), end)
        out.rows[c] = (*row[:4], begin, end - begin, *row[6:])
        for op in ops:
            out.edge(done_of[op], c, SYNC)


def _stream_wait_edges(
    out: _Nodes, ev: pd.DataFrame, on_gpu: np.ndarray, gpu_sync: np.ndarray, node_of: dict, done_of: dict
) -> None:
    """cudaStreamWaitEvent: the next GPU op launched on the waiting stream (the GPU-side wait's lane)
    waits for the last GPU op launched on another stream before the event was recorded (the latest
    cudaEventRecord before the wait on the same thread). The trace names no event ids, so this is
    the launch order's reading of it."""
    corr = ev["correlation"].to_numpy()
    names = ev["name"].to_numpy()
    waits = ev[gpu_sync & (names == "Stream Wait Event") & (corr > 0)]
    if waits.empty:
        return
    ops = ev[on_gpu & (corr > 0)].sort_values("correlation")
    op_corr, op_stream, op_ids = ops["correlation"].to_numpy(), ops["stream"].to_numpy(), ops["event_id"].to_numpy()
    records = ev[(names == "cudaEventRecord") | (names == "hipEventRecord")]
    rec_corr = np.sort(records["correlation"].to_numpy())
    for c, lane in zip(waits["correlation"], waits["thread"], strict=True):
        k = np.searchsorted(rec_corr, c) - 1
        if k < 0:
            continue
        before = np.flatnonzero((op_corr < rec_corr[k]) & (op_stream != lane))
        after = np.flatnonzero((op_corr > c) & (op_stream == lane))
        if len(before) and len(after):
            src, dst = int(op_ids[before[-1]]), int(op_ids[after[0]])
            if src in done_of and dst in node_of:
                out.edge(done_of[src], node_of[dst], SYNC)


def _lane_rows(out: _Nodes, lane: str) -> np.ndarray:
    return np.asarray([i for i, r in enumerate(out.rows) if r[1] == lane], dtype=np.int64)


def _collective_waits(out: _Nodes, main: str) -> None:
    """An asynchronous collective on another CPU thread -> the training thread's next op, when that
    thread sat idle until the collective ended and went on right after (it waited for it)."""
    mine = _lane_rows(out, main)
    if not len(mine):
        return
    start = np.asarray([out.rows[i][4] for i in mine])
    end = start + np.asarray([out.rows[i][5] for i in mine])
    steps = np.asarray([out.rows[i][0] for i in mine])
    for c, row in enumerate(out.rows):
        if row[7] != "complete" or row[1] == main or not row[1].startswith("thread"):
            continue
        done = row[4] + row[5]
        k = int(np.searchsorted(start, done - 1.0))
        if k == 0 or k >= len(mine) or steps[k] != row[0]:
            continue
        if end[k - 1] <= done + 1.0 and start[k] - done <= WAIT_RESUME_US:
            out.edge(c, int(mine[k]), SYNC)


def _enqueue_edges(out: _Nodes, main: str) -> None:
    """CPU-only ranks: a c10d op on the training thread starts the next collective on the process group's
    worker threads: calls and collectives paired in order, a collective never before its call began."""
    calls = [i for i, r in enumerate(out.rows) if r[1] == main and r[2].startswith("c10d::") and r[7] == "op"]
    colls = sorted(
        (r[4], i) for i, r in enumerate(out.rows) if r[7] == "arrive" and r[1] != main and r[1].startswith("thread")
    )
    k = 0
    for begin, arrive in colls:
        if k < len(calls) and out.rows[calls[k]][4] <= begin:
            out.edge(calls[k], arrive, LAUNCH, -out.rows[calls[k]][5])  # timed from the call's start
            k += 1
