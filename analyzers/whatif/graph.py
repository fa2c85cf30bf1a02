"""The dependency model of one training step, built from an operation-level timeline.

Nodes are what the replay schedules: a compute op, or one communication (every participant's op of a
collective, or a send with its recv). A node waits for, on each stream of each participant, the latest
earlier op that had finished when the participant's op started in the trace (ops of one stream always
wait for their predecessor). So the model keeps the program's order and its real waits, and drops the
time an op spent waiting for a peer: that part is recomputed by the replay.

Steps whose ops form the same sequence on every worker share one graph (a template), and their
durations are columns of one matrix: the replay of all of them, and of every what-if, is one pass.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from scope.ingest.optypes import op_type

# Ops that start within this much (seconds) of a predecessor's end are taken to have waited for it:
# timer resolution and launch jitter make a dependent op appear to start a few tens of µs early.
OVERLAP_TOLERANCE_S = 5e-4


@dataclass
class StepGraph:
    """One template: nodes in topological order, their dependencies, durations per step."""

    steps: np.ndarray  # step numbers (columns)
    node_type: np.ndarray  # attribution name per node (object)
    node_comm: np.ndarray  # bool: the node's duration is a transfer
    dep_ptr: np.ndarray  # CSR over nodes: deps of node n are dep_idx[dep_ptr[n]:dep_ptr[n+1]]
    dep_idx: np.ndarray
    part_ptr: np.ndarray  # CSR over nodes: participating worker ids
    part_worker: np.ndarray
    duration: np.ndarray  # (n_nodes, n_steps) compute time or transfer time, seconds
    base_time: np.ndarray  # (n_steps,) the traced step time, launch delays included
    dep_lag: np.ndarray | None = None  # per dependency (as dep_idx): time from its end to when it counts
    op_frame: pd.DataFrame | None = None  # the template's ops (worker, dp_rank, stage, optype, ids)
    op_node: np.ndarray | None = None  # the node of each op of op_frame

    @property
    def n_nodes(self) -> int:
        return len(self.node_type)


def prepare(ops: pd.DataFrame) -> pd.DataFrame:
    """Worker ids, op attributes and the sort order every later stage relies on."""
    ops = ops[ops["duration"].notna() & ops["start_ts"].notna()].copy()
    ops["optype"] = ops["optype"].astype(str)
    n_stages = int(ops["stage"].max()) + 1
    flat = ops["dp_rank"].to_numpy(np.int64) * n_stages + ops["stage"].to_numpy(np.int64)
    ops["worker"] = pd.factorize(flat, sort=True)[0]  # workers numbered in (DP rank, stage) order
    types = {name: op_type(name) for name in ops["optype"].unique()}
    ops["stream"] = ops["optype"].map({n: t.stream for n, t in types.items()})
    ops["end_ts"] = ops["start_ts"].astype("float64") + ops["duration"].astype("float64")
    ops = ops.sort_values(["step", "worker", "start_ts", "end_ts", "optype"], kind="stable").reset_index(drop=True)
    # k-th op of its type on its worker in a step: collectives and send/recv pairs match on it.
    ops["occurrence"] = (
        ops.sort_values(["step", "worker", "optype", "seq_id", "start_ts"])
        .groupby(["step", "worker", "optype"])
        .cumcount()
    )
    return ops


def _op_keys(ops: pd.DataFrame) -> np.ndarray:
    """An op's identity across steps: (worker, type, occurrence) as one integer."""
    codes = pd.Categorical(ops["optype"], categories=sorted(ops["optype"].unique())).codes.astype(np.int64)
    return (ops["worker"].to_numpy(np.int64) * 4096 + codes) * 1_000_000 + ops["occurrence"].to_numpy(np.int64)


def step_templates(ops: pd.DataFrame) -> list[list[int]]:
    """Steps grouped by identical sets of ops (the same ops on every worker; order may jitter)."""
    key = _op_keys(ops)
    groups: dict[bytes, list[int]] = {}
    for step, idx in ops.groupby("step", sort=True).indices.items():
        groups.setdefault(np.sort(key[idx]).tobytes(), []).append(int(step))
    return list(groups.values())


def group_keys(ops: pd.DataFrame, pp: int) -> np.ndarray:
    """The node each op belongs to, as an integer per op (ops of one step)."""
    keys: list[tuple] = []
    for i, (name, dp, stage, k) in enumerate(
        zip(ops["optype"], ops["dp_rank"], ops["stage"], ops["occurrence"], strict=True)
    ):
        t = op_type(name)
        dp, stage, k = int(dp), int(stage), int(k)
        if t.group in ("pp_next", "pp_prev"):
            # One edge between adjacent stages, named by its lower stage (the wrap-around edge of
            # interleaved schedules by the last stage): both ends get the same key.
            lower = stage if t.group == "pp_next" else (stage - 1) % pp
            keys.append((t.attribute_as, dp, lower, k, False))
        elif t.group == "dp":
            keys.append((name, -1, stage, k, False))
        elif t.group == "embedding" and stage in (0, pp - 1):
            keys.append((name, dp, -1, k, False))
        elif t.group == "world":
            keys.append((name, -1, -1, k, False))
        else:
            keys.append(("self", i, 0, 0, False))
    return pd.factorize(pd.Series(keys, dtype=object))[0]


def build(ops: pd.DataFrame, steps: list[int], pp: int, tolerance: float = OVERLAP_TOLERANCE_S) -> StepGraph:
    """The graph shared by `steps` (all with one set of ops) and their durations."""
    sel = ops[ops["step"].isin(steps)]
    keys = _op_keys(sel)
    uniq, row = np.unique(keys, return_inverse=True)
    col = sel["step"].map({s: i for i, s in enumerate(steps)}).to_numpy()
    start = np.zeros((len(uniq), len(steps)))
    dur = np.zeros((len(uniq), len(steps)))
    start[row, col] = sel["start_ts"].to_numpy(np.float64)
    dur[row, col] = sel["duration"].to_numpy(np.float64)
    base = (start + dur).max(axis=0) - start.min(axis=0)
    typical_start, typical_end = np.median(start, axis=1), np.median(start + dur, axis=1)
    cols = ["worker", "dp_rank", "stage", "optype", "occurrence"]
    cols += [c for c in ("rank", "seq_id", "mc", "gmc", "mb_id") if c in sel.columns]
    first = sel.iloc[np.unique(row, return_index=True)[1]][cols]
    first = first.assign(stream=first["optype"].map(lambda n: op_type(n).stream), t0=typical_start, t1=typical_end)
    # The template's order: each worker's ops by their typical start.
    order = np.lexsort((first["optype"].to_numpy(), typical_end, typical_start, first["worker"].to_numpy()))
    first = first.iloc[order].reset_index(drop=True)
    start, dur = start[order], dur[order]
    node_of = group_keys(first, pp)
    op_deps = _op_dependencies(first, first["t0"].to_numpy(), first["t1"].to_numpy(), tolerance)
    return _assemble(first, node_of, op_deps, start, dur, np.asarray(steps), base)


def _op_dependencies(ops: pd.DataFrame, start: np.ndarray, end: np.ndarray, tol: float) -> list[list[int]]:
    """Per op: the ops (same worker) it waited for, from the typical timing of its steps."""
    deps: list[list[int]] = [[] for _ in range(len(ops))]
    streams = ops["stream"].to_numpy()
    for idx in ops.groupby("worker", sort=False).indices.values():
        by_stream: dict[str, list[int]] = {}
        for i in idx:  # ops are in start order within a worker
            stream = streams[i]
            mine: list[int] = []
            for s, earlier in by_stream.items():
                if s == stream:
                    mine.append(earlier[-1])
                    continue
                for j in reversed(earlier):
                    if end[j] <= start[i] + tol:
                        mine.append(j)
                        break
            deps[i] = mine
            by_stream.setdefault(stream, []).append(i)
    return deps


def _assemble(
    ops: pd.DataFrame,
    node_of: np.ndarray,
    op_deps: list[list[int]],
    start: np.ndarray,
    dur: np.ndarray,
    steps: np.ndarray,
    base: np.ndarray,
) -> StepGraph:
    n_nodes = int(node_of.max()) + 1 if len(node_of) else 0
    members: list[list[int]] = [[] for _ in range(n_nodes)]
    for i, n in enumerate(node_of):
        members[n].append(i)
    node_deps = [sorted({int(node_of[j]) for i in m for j in op_deps[i]} - {n}) for n, m in enumerate(members)]
    node_deps = _drop_implied(node_deps)
    topo = _topological(node_deps)
    rank = np.empty(n_nodes, dtype=np.int64)
    rank[topo] = np.arange(n_nodes)
    deps_sorted = [sorted(int(rank[d]) for d in node_deps[n]) for n in topo]
    members = [members[n] for n in topo]
    workers = ops["worker"].to_numpy()
    duration = np.empty((n_nodes, start.shape[1]))
    node_type = np.empty(n_nodes, dtype=object)
    node_comm = np.zeros(n_nodes, dtype=bool)
    names = ops["optype"].to_numpy()
    for n, m in enumerate(members):
        t = op_type(names[m[0]])
        node_type[n] = t.attribute_as
        node_comm[n] = t.kind == "comm"
        if len(m) == 1:
            duration[n] = dur[m[0]]
        else:  # the latest participant to start did not wait: its time is the transfer
            latest = np.argmax(start[m], axis=0)
            duration[n] = dur[m][latest, np.arange(start.shape[1])]
    return StepGraph(
        op_frame=ops,
        op_node=rank[node_of],
        steps=steps,
        node_type=node_type,
        node_comm=node_comm,
        dep_ptr=np.cumsum([0] + [len(d) for d in deps_sorted]),
        dep_idx=np.asarray([d for ds in deps_sorted for d in ds], dtype=np.int64),
        part_ptr=np.cumsum([0] + [len(set(workers[m])) for m in members]),
        part_worker=np.asarray([w for m in members for w in sorted(set(workers[m]))], dtype=np.int64),
        duration=np.maximum(duration, 0.0),
        base_time=base,
    )


def _drop_implied(deps: list[list[int]]) -> list[list[int]]:
    """Drop a dependency that another dependency of the same node already waits for (it changes no
    replayed time, and the replay's cost is its number of dependencies)."""
    sets = [set(d) for d in deps]
    out = []
    for d in deps:
        if len(d) < 2:
            out.append(d)
            continue
        implied = set().union(*(sets[k] for k in d))
        out.append([k for k in d if k not in implied])
    return out


def _topological(deps: list[list[int]]) -> list[int]:
    """Kahn's order; a cycle (a trace whose matching contradicts its timing) is cut at its earliest node."""
    n = len(deps)
    indeg = np.array([len(d) for d in deps])
    users: list[list[int]] = [[] for _ in range(n)]
    for i, ds in enumerate(deps):
        for d in ds:
            users[d].append(i)
    ready = [i for i in range(n) if indeg[i] == 0]
    out: list[int] = []
    done = np.zeros(n, dtype=bool)
    while len(out) < n:
        if not ready:  # cycle: release the first unfinished node
            i = int(np.flatnonzero(~done)[0])
            deps[i] = [d for d in deps[i] if done[d]]
            indeg[i] = 0
            ready.append(i)
        i = ready.pop()
        if done[i]:
            continue
        done[i] = True
        out.append(i)
        for u in users[i]:
            indeg[u] -= 1
            if indeg[u] == 0 and not done[u]:
                ready.append(u)
    return out
