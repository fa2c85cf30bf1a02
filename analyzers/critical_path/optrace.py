"""Operation-level timelines (DP x PP, ByteDance's format) as critical-path graphs.

The what-if engine (analyzers/whatif/graph.py) already holds each step's dependency model: per worker
the ops each op waited for, and the ops that form one communication (a collective's participants, a
send with its recv). This module lays that model out as a `core.Graph` with one node per op (a
communication split into each participant's arrival, a barrier and each participant's completion), so
the path can say which worker and stage it ran on, and the what-if measures (S, M_W, M_S) are queries
on the same graph: `whatif_metrics` recomputes them here, and they must agree with the engine's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scope.analyzers.critical_path.core import COLLECTIVE, P2P, PROGRAM, SYNC, Builder, Graph, lengths
from scope.analyzers.whatif.graph import OVERLAP_TOLERANCE_S, StepGraph, _op_dependencies
from scope.analyzers.whatif.model import node_mask, outside_mask

from scope.ingest.optypes import op_type

US = 1e6  # the timelines are in seconds, the graph in µs


@dataclass
class OpGraph:
    """One template's graph and, per graph node, the engine's node it stands for (-1: a barrier)."""

    source: StepGraph
    graph: Graph
    wnode: np.ndarray

    def durations(self, node_durations: np.ndarray) -> np.ndarray:
        """Graph-node durations (µs) from the engine's node durations (nodes x columns, seconds)."""
        out = np.zeros((self.graph.n_nodes, node_durations.shape[1]))
        real = (self.wnode >= 0) & (self.graph.cls != "arrive")
        out[real] = node_durations[self.wnode[real]] * US
        return out


def from_stepgraph(sg: StepGraph) -> OpGraph:
    ops = sg.op_frame
    assert ops is not None and sg.op_node is not None
    deps = _op_dependencies(ops, ops["t0"].to_numpy(), ops["t1"].to_numpy(), OVERLAP_TOLERANCE_S)
    b = Builder()
    wnode: list[int] = []
    members = pd.Series(np.arange(len(ops))).groupby(sg.op_node).agg(list)
    head = np.full(len(ops), -1, dtype=np.int64)  # the graph node an op's dependencies enter
    tail = np.full(len(ops), -1, dtype=np.int64)  # the graph node its dependents leave from
    worker, stage, names = ops["worker"].to_numpy(), ops["stage"].to_numpy(), ops["optype"].to_numpy()
    streams = ops["stream"].to_numpy()
    for n, m in members.items():
        cls = "comm" if sg.node_comm[n] else "compute"
        for i in m:
            lane = str(streams[i])  # the worker is the node's rank (named dpD/stageS in reports)
            if len(m) > 1:
                head[i] = b.node(int(worker[i]), lane, names[i], "arrive", 0.0, 0.0, int(stage[i]))
                wnode.append(int(n))
            tail[i] = b.node(int(worker[i]), lane, names[i], cls, 0.0, 0.0, int(stage[i]))
            wnode.append(int(n))
            head[i] = tail[i] if len(m) == 1 else head[i]
        if len(m) > 1:
            kind = P2P if op_type(names[m[0]]).group in ("pp_next", "pp_prev") else COLLECTIVE
            b.barrier([int(head[i]) for i in m], [int(tail[i]) for i in m], kind)
            wnode.append(-1)
    for i, ds in enumerate(deps):
        for j in ds:
            b.edge(int(tail[j]), int(head[i]), PROGRAM if streams[j] == streams[i] else SYNC)
    g = b.build(residual=False)  # the engine replays from 0 without lags: so does this graph
    return OpGraph(sg, g, np.asarray(wnode, dtype=np.int64))


def step_times(og: OpGraph, node_durations: np.ndarray) -> np.ndarray:
    """Replayed step time (seconds) per column."""
    return lengths(og.graph, og.durations(node_durations)) / US


@dataclass
class GraphWhatIf:
    """S, M_W and M_S recomputed on the critical-path graphs (times in seconds, means over steps)."""

    t_ori: float
    t_ideal: float
    t_rem_workers: float
    t_rem_last_stage: float

    @property
    def slowdown(self) -> float:
        return self.t_ori / self.t_ideal

    def _explained(self, t_rem: float) -> float:
        gap = self.t_ori - self.t_ideal
        return (self.t_ori - t_rem) / gap if gap > 0 else 0.0

    @property
    def m_w(self) -> float:
        return self._explained(self.t_rem_workers)

    @property
    def m_s(self) -> float:
        return self._explained(self.t_rem_last_stage)


def whatif_metrics(
    graphs: list[OpGraph], ideal: list[np.ndarray], fixed_workers: list[int], last_stage_workers: list[int]
) -> GraphWhatIf:
    """The paper's measures on these graphs: traced, all ideal, and the fixed workers / last stage made
    ideal (a communication stays traced while any participant outside the fixed set is)."""
    ori: list[np.ndarray] = []
    ideal_t: list[np.ndarray] = []
    rem_w: list[np.ndarray] = []
    rem_s: list[np.ndarray] = []
    for og, g_ideal in zip(graphs, ideal, strict=True):
        sg = og.source
        traced = sg.duration
        ori.append(step_times(og, traced))
        ideal_t.append(step_times(og, np.repeat(g_ideal[:, None], traced.shape[1], axis=1)))
        for fixed, out in ((fixed_workers, rem_w), (last_stage_workers, rem_s)):
            keep = outside_mask(sg, np.asarray(fixed))[:, None]
            out.append(step_times(og, np.where(keep, traced, g_ideal[:, None])))
    mean = [float(np.concatenate(x).mean()) for x in (ori, ideal_t, rem_w, rem_s)]
    return GraphWhatIf(*mean)


__all__ = ["GraphWhatIf", "OpGraph", "from_stepgraph", "node_mask", "step_times", "whatif_metrics"]
