"""The graph core: a DAG of timed work across ranks, its longest path, and its re-solve under edits.

A node is one piece of work on one lane of one rank (a CPU thread or a GPU stream): (rank, lane, op,
start, duration), start and duration in µs on the aligned clock. An edge says "dst cannot start before
src has ended, plus lag": the lag is time the model keeps but does not attribute to a node (the host's
untraced time between two ops of a thread, a kernel's launch latency). A node with no edge in starts at
its observed start (its anchor).

Solving is level by level (a node's level is one more than its deepest dependency): per level a few
numpy operations over all its in-edges, so a graph of a million nodes solves in seconds and a what-if
edit (new durations, same structure) re-solves the cached plan without rebuilding anything.

Causality: an edge whose src observably ended later than its dst started (by more than the tolerance)
contradicts the clocks the times came from. Such edges are counted and reported (`conflicts`), never
bent: the replay honours the edge, so the contradiction shows up as replayed time, not as a silent fix.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

EDGE_KINDS = ("program", "launch", "sync", "collective", "p2p", "dataloader")
PROGRAM, LAUNCH, SYNC, COLLECTIVE, P2P, DATALOADER = range(len(EDGE_KINDS))
# Classes of the zero-length nodes that only carry structure (a collective's arrivals and its barrier).
STRUCTURAL = ("arrive", "barrier")
# An edge contradicts causality when its src ended this much (µs) after its dst started: timer
# resolution and the profiler's own rounding make µs-level overlaps of dependent ops normal.
CONFLICT_TOLERANCE_US = 2.0


@dataclass
class Graph:
    """Nodes (parallel arrays) and edges (src, dst, lag µs, kind)."""

    rank: np.ndarray
    lane: np.ndarray  # object: "thread 12", "stream 7", "dp0/stage1", ...
    name: np.ndarray  # object: the op
    cls: np.ndarray  # object: the op's class (compute, comm, launch, sync, dataloader, host, ...)
    stage: np.ndarray  # pipeline stage, -1 unknown
    start: np.ndarray  # observed start, µs
    dur: np.ndarray  # µs
    src: np.ndarray
    dst: np.ndarray
    lag: np.ndarray
    kind: np.ndarray  # int8, index into EDGE_KINDS
    _plan: Plan | None = field(default=None, repr=False)

    @property
    def n_nodes(self) -> int:
        return len(self.dur)

    def plan(self) -> Plan:
        if self._plan is None:
            self._plan = make_plan(self)
        return self._plan


class Builder:
    """Collects nodes and edges one at a time (lists), then packs them into a Graph."""

    def __init__(self) -> None:
        self.nodes: tuple[list, ...] = ([], [], [], [], [], [], [])
        self.edges: tuple[list, ...] = ([], [], [], [])

    def node(self, rank: int, lane: str, name: str, cls: str, start: float, dur: float, stage: int = -1) -> int:
        for column, value in zip(self.nodes, (rank, lane, name, cls, stage, start, dur), strict=True):
            column.append(value)
        return len(self.nodes[0]) - 1

    def edge(self, src: int, dst: int, kind: int, lag: float = 0.0) -> None:
        for column, value in zip(self.edges, (src, dst, lag, kind), strict=True):
            column.append(value)

    def barrier(self, arrivals: list[int], completions: list[int], kind: int = COLLECTIVE) -> int:
        """A collective or a send/recv pair: every completion waits for the last of the arrivals. One
        zero-length node in between (n + n edges, not n x n: a world-wide collective has thousands)."""
        starts = self.nodes[5]
        at = max(starts[a] for a in arrivals)
        b = self.node(-1, "", "", "barrier", at, 0.0)
        for a in arrivals:
            self.edge(a, b, kind)
        for c in completions:
            self.edge(b, c, kind)
        return b

    def build(self, residual: bool = True) -> Graph:
        """The graph; with `residual`, every edge's lag also carries its dst's residual (below)."""
        rank, lane, name, cls, stage, start, dur = self.nodes
        src, dst, lag, kind = self.edges
        g = graph(rank, lane, name, cls, stage, start, dur, src, dst, lag, kind)
        if residual:
            g.lag = g.lag + residuals(g)[g.dst]
        return g


def residuals(g: Graph) -> np.ndarray:
    """Per node, the time between its last dependency's end (plus the edge's own lag) and its observed
    start: the host's untraced time before an op, a kernel's launch latency. Kept on the node's in-edges,
    so the replay of the observed durations gives back the observed starts, and a what-if moves a node
    by what its dependencies move. Negative where an edge contradicts the clocks: 0 then, and the edge
    is counted by `conflicts`."""
    ready = np.full(g.n_nodes, -np.inf)
    np.maximum.at(ready, g.dst, g.start[g.src] + g.dur[g.src] + g.lag)
    out = np.where(np.isfinite(ready), g.start - ready, 0.0)
    return np.clip(out, 0.0, None)


def graph(rank, lane, name, cls, stage, start, dur, src, dst, lag, kind) -> Graph:  # type: ignore[no-untyped-def]
    """A Graph from columns (any sequences)."""
    return Graph(
        rank=np.asarray(rank, dtype=np.int64),
        lane=np.asarray(lane, dtype=object),
        name=np.asarray(name, dtype=object),
        cls=np.asarray(cls, dtype=object),
        stage=np.asarray(stage, dtype=np.int64),
        start=np.asarray(start, dtype=np.float64),
        dur=np.asarray(dur, dtype=np.float64),
        src=np.asarray(src, dtype=np.int64),
        dst=np.asarray(dst, dtype=np.int64),
        lag=np.asarray(lag, dtype=np.float64),
        kind=np.asarray(kind, dtype=np.int8),
    )


@dataclass
class Plan:
    """What solving needs that depends only on the structure: per level, its in-edges grouped by dst."""

    level_edges: list[np.ndarray]  # per level past 0: edge indices sorted by dst
    level_heads: list[np.ndarray]  # per level past 0: where each dst's run of edges begins
    level_dst: list[np.ndarray]  # per level past 0: the dst of each run
    sources: np.ndarray  # nodes without an edge in
    cut_edges: np.ndarray  # edges dropped to break cycles (each one a causality conflict)


def make_plan(g: Graph) -> Plan:
    n, src, dst = g.n_nodes, g.src, g.dst
    level = np.full(n, -1, dtype=np.int64)
    live = np.ones(len(src), dtype=bool)
    indeg = np.bincount(dst, minlength=n)
    by_src = np.argsort(src, kind="stable")
    out_ptr = np.searchsorted(src[by_src], np.arange(n + 1))
    frontier = np.flatnonzero(indeg == 0)
    cut: list[int] = []
    depth = 0
    done = 0
    while done < n:
        if not len(frontier):  # a cycle: release the waiting node observed first, dropping its open edges
            waiting = np.flatnonzero(level < 0)
            victim = waiting[np.argmin(g.start[waiting])]
            open_in = np.flatnonzero((dst == victim) & live & (level[src] < 0))
            cut += open_in.tolist()
            live[open_in] = False
            frontier = np.array([victim])
        level[frontier] = depth
        done += len(frontier)
        out = _out_edges(by_src, out_ptr, frontier)
        out = out[live[out]]
        targets = dst[out]
        np.subtract.at(indeg, targets, 1)
        frontier = np.unique(targets[(indeg[targets] == 0) & (level[targets] < 0)])
        depth += 1
    keep = np.flatnonzero(live)
    order = keep[np.lexsort((dst[keep], level[dst[keep]]))]
    bounds = np.searchsorted(level[dst[order]], np.arange(1, depth + 1))
    plan = Plan([], [], [], np.flatnonzero(np.bincount(dst[keep], minlength=n) == 0), np.asarray(cut, np.int64))
    for lo, hi in itertools.pairwise(bounds):
        edges = order[lo:hi]
        if not len(edges):
            continue
        d = dst[edges]
        heads = np.flatnonzero(np.r_[True, d[1:] != d[:-1]])
        plan.level_edges.append(edges)
        plan.level_heads.append(heads)
        plan.level_dst.append(d[heads])
    return plan


def _out_edges(by_src: np.ndarray, out_ptr: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    lo, hi = out_ptr[nodes], out_ptr[nodes + 1]
    counts = hi - lo
    if not counts.sum():
        return np.zeros(0, dtype=np.int64)
    offsets = np.repeat(lo - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
    return by_src[offsets]


@dataclass
class Solution:
    start: np.ndarray  # replayed start per node, µs
    end: np.ndarray
    pred: np.ndarray  # the edge that set each node's start, -1 where its anchor did
    path: np.ndarray  # node indices of the longest path, first to last
    t0: float  # the replayed step's start (earliest anchor)

    @property
    def length(self) -> float:
        return float(self.end.max() - self.t0) if len(self.end) else 0.0


def solve(g: Graph, dur: np.ndarray | None = None) -> Solution:
    """Every node as early as its edges allow (anchors for sources); the longest path to the last end."""
    plan = g.plan()
    dur = g.dur if dur is None else dur
    start = np.full(g.n_nodes, np.nan)
    start[plan.sources] = g.start[plan.sources]
    end = start + dur
    for edges, heads, dsts in zip(plan.level_edges, plan.level_heads, plan.level_dst, strict=True):
        ready = np.maximum.reduceat(end[g.src[edges]] + g.lag[edges], heads)
        start[dsts] = ready
        end[dsts] = ready + dur[dsts]
    pred = _binding_edges(g, plan, end, start)
    if not g.n_nodes:
        return Solution(start, end, pred, np.zeros(0, dtype=np.int64), 0.0)
    t0 = float(g.start[plan.sources].min())
    return Solution(start, end, pred, _walk(g, pred, int(np.argmax(end))), t0)


def lengths(g: Graph, dur: np.ndarray) -> np.ndarray:
    """The replayed step of every column of `dur` (nodes x columns): many what-ifs in one pass."""
    plan = g.plan()
    start = np.zeros(dur.shape)
    start[plan.sources] = g.start[plan.sources, None]
    end = start + dur
    for edges, heads, dsts in zip(plan.level_edges, plan.level_heads, plan.level_dst, strict=True):
        ready = np.maximum.reduceat(end[g.src[edges]] + g.lag[edges, None], heads, axis=0)
        end[dsts] = ready + dur[dsts]
    if not g.n_nodes:
        return np.zeros(dur.shape[1])
    return end.max(axis=0) - g.start[plan.sources].min()


def _binding_edges(g: Graph, plan: Plan, end: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Per node, its in-edge with the latest ready time (ties: the first edge added)."""
    pred = np.full(g.n_nodes, -1, dtype=np.int64)
    if not len(g.src):
        return pred
    live = np.ones(len(g.src), dtype=bool)
    live[plan.cut_edges] = False
    edges = np.flatnonzero(live)
    ready = end[g.src[edges]] + g.lag[edges]
    order = np.lexsort((-edges, ready, g.dst[edges]))
    last = np.r_[g.dst[edges][order][1:] != g.dst[edges][order][:-1], True]
    best = edges[order][last]
    pred[g.dst[best]] = best
    return pred


def _walk(g: Graph, pred: np.ndarray, last: int) -> np.ndarray:
    path = [last]
    node = last
    while pred[node] >= 0:
        node = int(g.src[pred[node]])
        path.append(node)
    return np.asarray(path[::-1], dtype=np.int64)


@dataclass
class Conflicts:
    """Edges the observed clocks contradict: src ended after dst began (beyond the tolerance)."""

    count: int
    total_us: float
    worst_us: float
    by_kind: dict[str, int]
    cut: int  # of which were dropped to break a cycle


def conflicts(g: Graph, tolerance_us: float = CONFLICT_TOLERANCE_US) -> Conflicts:
    over = g.start[g.src] + g.dur[g.src] + g.lag - g.start[g.dst]
    bad = over > tolerance_us
    kinds = g.kind[bad]
    by_kind = {EDGE_KINDS[k]: int((kinds == k).sum()) for k in np.unique(kinds)}
    worst = float(over[bad].max()) if bad.any() else 0.0
    return Conflicts(int(bad.sum()), float(over[bad].sum()), worst, by_kind, len(g.plan().cut_edges))
