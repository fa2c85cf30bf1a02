"""The replay: every node starts when all it waits for have ended, and lasts its (given) duration.

Columns are independent what-ifs (a step with its traced durations, the ideal step, a step with only
one worker's ops traced and the rest ideal, ...): one pass over the graph replays all of them. The pass
goes level by level (a node's level is one more than its deepest dependency), so each level is a few
numpy operations over all its nodes and columns, not a Python loop over nodes.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from scope.analyzers.whatif.graph import StepGraph

# Cells (nodes x columns) replayed per pass: bounds memory at a few arrays of this many floats.
CHUNK_CELLS = 4_000_000


@dataclass
class Levels:
    """Per level: its nodes and, for k = 0, 1, ..., the positions (in the level) of the nodes that have a
    k-th dependency and that dependency; max over k is then a few vector operations."""

    nodes: list[np.ndarray]
    kth: list[list[tuple[np.ndarray, np.ndarray, np.ndarray | None]]]  # (where, dependency, its lag)


def levels(graph: StepGraph) -> Levels:
    cached = getattr(graph, "_levels", None)
    if cached is not None:
        return cached
    ptr, idx = graph.dep_ptr, graph.dep_idx
    depth = np.zeros(graph.n_nodes, dtype=np.int64)
    for n in range(graph.n_nodes):  # nodes are in topological order
        if ptr[n + 1] > ptr[n]:
            depth[n] = depth[idx[ptr[n] : ptr[n + 1]]].max() + 1
    out = Levels([], [])
    order = np.argsort(depth, kind="stable")
    bounds = np.searchsorted(depth[order], np.arange(depth.max() + 2 if graph.n_nodes else 1))
    for lo, hi in itertools.pairwise(bounds):
        nodes = order[lo:hi]
        counts = ptr[nodes + 1] - ptr[nodes]
        kth = []
        for k in range(int(counts.max()) if len(nodes) else 0):
            where = np.flatnonzero(counts > k)
            edge = ptr[nodes[where]] + k
            lag = None if graph.dep_lag is None else graph.dep_lag[edge][:, None]
            kth.append((where, idx[edge], lag))
        out.nodes.append(nodes)
        out.kth.append(kth)
    graph._levels = out  # type: ignore[attr-defined]
    return out


def chunk_columns(graph: StepGraph) -> int:
    return max(1, CHUNK_CELLS // max(1, graph.n_nodes))


def replay(graph: StepGraph, durations: np.ndarray) -> np.ndarray:
    """Step time of each column of `durations` (n_nodes x n_columns): the latest end of any node."""
    n_cols = durations.shape[1]
    out = np.empty(n_cols)
    step = chunk_columns(graph)
    for lo in range(0, n_cols, step):
        out[lo : lo + step] = _replay_chunk(graph, durations[:, lo : lo + step])
    return out


def _replay_chunk(graph: StepGraph, durations: np.ndarray) -> np.ndarray:
    if graph.n_nodes == 0:
        return np.zeros(durations.shape[1])
    return node_ends(graph, durations).max(axis=0)


def node_ends(graph: StepGraph, durations: np.ndarray) -> np.ndarray:
    """The end time of every node in every column (n_nodes x n_columns)."""
    lv = levels(graph)
    end = np.empty_like(durations)
    end[lv.nodes[0]] = durations[lv.nodes[0]]  # level 0 waits for nothing
    for nodes, kth in zip(lv.nodes[1:], lv.kth[1:], strict=True):
        _, first, lag = kth[0]  # every node of a level past 0 has a first dependency
        ready = end[first] if lag is None else end[first] + lag
        for where, deps, lag in kth[1:]:
            ready[where] = np.maximum(ready[where], end[deps] if lag is None else end[deps] + lag)
        end[nodes] = ready + durations[nodes]
    return end


def dag(n: int, edges: list[tuple[int, int, float]]) -> StepGraph | None:
    """A graph of `n` nodes from (dependency, node, lag) edges, for replays that build their own model
    (a pipeline's actions); None when the edges have a cycle (an order that cannot run)."""
    users: list[list[int]] = [[] for _ in range(n)]
    indeg = np.zeros(n, dtype=np.int64)
    for src, dst, _ in edges:
        users[src].append(dst)
        indeg[dst] += 1
    order, ready = [], [i for i in range(n) if indeg[i] == 0]
    while ready:
        i = ready.pop()
        order.append(i)
        for u in users[i]:
            indeg[u] -= 1
            if indeg[u] == 0:
                ready.append(u)
    if len(order) < n:
        return None
    rank = np.empty(n, dtype=np.int64)
    rank[np.asarray(order, dtype=np.int64)] = np.arange(n)
    by_node: list[list[tuple[int, float]]] = [[] for _ in range(n)]
    for src, dst, lag in edges:
        by_node[int(rank[dst])].append((int(rank[src]), float(lag)))
    return StepGraph(
        steps=np.zeros(1, dtype=np.int64),
        node_type=np.full(n, "", dtype=object),
        node_comm=np.zeros(n, dtype=bool),
        dep_ptr=np.cumsum([0] + [len(d) for d in by_node]),
        dep_idx=np.asarray([d for ds in by_node for d, _ in ds], dtype=np.int64),
        dep_lag=np.asarray([lag for ds in by_node for _, lag in ds], dtype=np.float64),
        part_ptr=np.zeros(n + 1, dtype=np.int64),
        part_worker=np.zeros(0, dtype=np.int64),
        duration=np.zeros((n, 1)),
        base_time=np.zeros(1),
        op_node=rank,
    )
