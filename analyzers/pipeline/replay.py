"""What-if replay of one pipeline step: the observed per-rank action order, with chosen durations.

Each rank runs its actions in the order it ran them; an action starts when the rank is free and its
inputs have arrived: a forward needs the previous stage's forward of the same micro-batch, a
backward (full or input) the next stage's backward of that micro-batch, a weight backward its own
input backward. An input crossing ranks arrives `latency_us` after its producer ends (the measured
hop latency: transfer plus the receiver waking up). The makespan of the replay with the measured
durations, against the one with a stage's durations set to its peers', is the gain from balancing it.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scope.analyzers.pipeline.rank import BACKWARD_OPS


@dataclass
class Replay:
    makespan_us: float
    busy_us: dict[int, float]  # rank -> compute in the replay
    phases_us: dict[int, tuple[float, float, float]]  # rank -> bubble in warm-up, steady, cool-down


def _cls(op: str) -> str:
    """Full and input backwards both hand the gradient on: one class."""
    return "BI" if op in ("B", "I") else op


def _dependency(stage: int, op: str, mb: int, last_stage: int) -> tuple[int, str, int] | None:
    """(stage, op class, micro-batch) of the action whose output this one needs."""
    if op == "F":
        return (stage - 1, "F", mb) if stage > 0 else None
    if op in ("B", "I"):
        return (stage + 1, "BI", mb) if stage < last_stage else (stage, "F", mb)
    if op == "W":
        return (stage, "BI", mb)
    return None


def replay(
    acts: pd.DataFrame, durations: np.ndarray, latency_us: float = 0.0, delays: np.ndarray | None = None
) -> Replay | None:
    """Replay one step; None when the observed order cannot run (a trace missing actions).

    `delays` (per action, us) are added to its start: with `observed_delays` the replay reproduces
    the step as it ran, so replays differing from it only in durations isolate their effect.
    The replay is the what-if engine's (analyzers/whatif/replay.py) on the actions' dependency graph.
    """
    from scope.analyzers.whatif.replay import dag, node_ends

    acts = acts.reset_index(drop=True)
    dur = np.asarray(durations, dtype=float)
    extra = np.zeros(len(acts)) if delays is None else np.asarray(delays, dtype=float)
    graph = dag(len(acts), _edges(acts, latency_us))
    if graph is None:
        return None
    assert graph.op_node is not None
    node = graph.op_node  # action i is node node[i]
    total = np.empty(len(acts))
    total[node] = extra + dur  # an action's delay holds its rank like work does, before it starts
    end = np.empty(len(acts))
    end[:] = node_ends(graph, total[:, None])[node, 0]
    return _summarize(acts, end - dur, end, acts["rank"].to_numpy())


def _edges(acts: pd.DataFrame, latency_us: float) -> list[tuple[int, int, float]]:
    """Each action waits for the one before it on its rank, and for the action producing its input
    (`latency_us` later when that ran on another rank). An input no action of the step produces is
    taken as ready."""
    last_stage = int(acts["stage"].max())
    stage, op, mb, rank = (acts[c].to_numpy() for c in ("stage", "op", "mb", "rank"))
    producer = {(int(s), _cls(str(o)), int(b)): i for i, (s, o, b) in enumerate(zip(stage, op, mb, strict=True))}
    edges: list[tuple[int, int, float]] = []
    for _, g in acts.groupby("rank"):
        queue = g.sort_values("cstart_ns", kind="stable").index.to_numpy()
        edges += [(int(a), int(b), 0.0) for a, b in itertools.pairwise(queue)]
    for i in range(len(acts)):
        key = _dependency(int(stage[i]), str(op[i]), int(mb[i]), last_stage)
        j = producer.get(key) if key is not None else None
        if j is not None and j != i:
            edges.append((j, i, latency_us if rank[j] != rank[i] else 0.0))
    return edges


def _summarize(acts: pd.DataFrame, start: np.ndarray, end: np.ndarray, rank: np.ndarray) -> Replay:
    makespan = float(end.max()) if end.size else 0.0
    busy, phases = {}, {}
    is_b = acts["op"].isin(BACKWARD_OPS).to_numpy()
    is_f = acts["op"].to_numpy() == "F"
    for r in np.unique(rank):
        mine = rank == r
        busy[int(r)] = float((end - start)[mine].sum())
        b1 = float(start[mine & is_b].min()) if (mine & is_b).any() else 0.0
        b2 = max(b1, float(end[mine & is_f].max())) if (mine & is_f).any() else b1
        out = []
        for lo, hi in ((0.0, b1), (b1, b2), (b2, makespan)):
            inside = np.clip(np.minimum(end[mine], hi) - np.maximum(start[mine], lo), 0, None).sum()
            out.append(hi - lo - float(inside))
        phases[int(r)] = (out[0], out[1], out[2])
    return Replay(makespan, busy, phases)


def observed_delays(acts: pd.DataFrame) -> np.ndarray:
    """Per action (in `acts` row order): how long after both its rank was free and its input was
    produced it started computing (transfer, wake-up, Python between actions), in us."""
    acts = acts.reset_index(drop=True)
    last_stage = int(acts["stage"].max())
    origin = int(acts["cstart_ns"].min())
    ends = {
        (int(s), _cls(str(o)), int(b)): int(e)
        for s, o, b, e in zip(acts["stage"], acts["op"], acts["mb"], acts["cend_ns"], strict=True)
    }
    out = np.zeros(len(acts))
    for _, grp in acts.groupby("rank"):
        free = origin
        for i, row in grp.sort_values("cstart_ns").iterrows():
            key = _dependency(int(row["stage"]), str(row["op"]), int(row["mb"]), last_stage)
            ready = max(free, ends.get(key, origin)) if key is not None else free
            out[int(i)] = max(0, int(row["cstart_ns"]) - ready) / 1e3
            free = max(free, int(row["cend_ns"]))
    return out


def hop_latency_us(acts: pd.DataFrame) -> float:
    """Median delay from a producer's end to its consumer's start, over the inputs a consumer
    actually waited for (its rank was free before the input was produced)."""
    acts = acts.sort_values("cstart_ns")
    last_stage = int(acts["stage"].max())
    ends = {}
    for row in acts.itertuples(index=False):
        ends[(int(row.stage), _cls(str(row.op)), int(row.mb))] = (int(row.cend_ns), int(row.rank))
    gaps = []
    prev_end: dict[int, int] = {}
    for row in acts.itertuples(index=False):
        key = _dependency(int(row.stage), str(row.op), int(row.mb), last_stage)
        if key in ends and ends[key][1] != row.rank and ends[key][0] > prev_end.get(row.rank, -1):
            gaps.append(max(0, int(row.cstart_ns) - ends[key][0]) / 1e3)
        prev_end[int(row.rank)] = int(row.cend_ns)
    return float(np.median(gaps)) if gaps else 0.0
