"""The longest path as segments, its shares, and what-if edits on the graph.

A segment is a node of the path, or the lag of the edge that led to it (labelled by the edge's kind:
host time between ops, launch latency). The segments add up to the replayed step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scope.analyzers.critical_path.core import EDGE_KINDS, STRUCTURAL, Graph, Solution, solve

SEGMENT_COLUMNS = ["order", "rank", "lane", "op", "cls", "stage", "us", "start_us", "waiting_on"]


def segments(g: Graph, sol: Solution) -> pd.DataFrame:
    """The path, first to last: one row per node and per edge lag on it (µs; the rows add to the step).

    `waiting_on`: the path's time up to a collective or send/recv it crosses is time every other
    participant waited for the rank whose arrival came last there: that rank. -1 after the last crossing
    (nobody waited on that stretch) and on paths that stay on one rank."""
    rows: list[list] = []
    path = sol.path
    if len(path) and sol.start[path[0]] > sol.t0:
        first = path[0]
        rows.append([int(g.rank[first]), g.lane[first], "(start offset)", "offset", int(g.stage[first]),
                     float(sol.start[first] - sol.t0), sol.t0, -1])  # fmt: skip
    pending = 0  # rows not yet labelled with the rank they were waited on for
    for node in path:
        edge, rank = int(sol.pred[node]), int(g.rank[node])
        if edge >= 0 and g.lag[edge]:
            lag = float(g.lag[edge])
            rows.append([rank, g.lane[node], f"({EDGE_KINDS[g.kind[edge]]} gap)", "gap", int(g.stage[node]),
                         lag, float(sol.start[node]) - lag, -1])  # fmt: skip
        if g.cls[node] == "barrier":
            last = int(g.rank[g.src[edge]]) if edge >= 0 else -1
            for row in rows[pending:]:
                row[-1] = last
            pending = len(rows)
        if g.cls[node] in STRUCTURAL:
            continue
        rows.append([rank, g.lane[node], g.name[node], g.cls[node], int(g.stage[node]),
                     float(sol.end[node] - sol.start[node]), float(sol.start[node]), -1])  # fmt: skip
    df = pd.DataFrame(rows, columns=SEGMENT_COLUMNS[1:])
    df.insert(0, "order", np.arange(len(df)))
    return df


def shares(seg: pd.DataFrame) -> pd.DataFrame:
    """The path's time by rank, stage, op class and rank waited on: (by, key, us, share)."""
    total = float(seg["us"].sum()) or 1.0
    frames = []
    for by, col in (("rank", "rank"), ("stage", "stage"), ("op_class", "cls"), ("op", "op")):
        s = seg.groupby(col)["us"].sum()
        frames.append(pd.DataFrame({"by": by, "key": s.index.astype(str), "us": s.to_numpy()}))
    waits = seg[seg["waiting_on"] >= 0].groupby("waiting_on")["us"].sum()
    frames.append(pd.DataFrame({"by": "waiting_on_rank", "key": waits.index.astype(str), "us": waits.to_numpy()}))
    out = pd.concat(frames, ignore_index=True)
    out["share"] = out["us"] / total
    return out.sort_values(["by", "us"], ascending=[True, False], kind="stable").reset_index(drop=True)


@dataclass
class Gain:
    """A what-if: the step before and after, and the naive sum the path alone would promise."""

    base_us: float
    new_us: float
    naive_us: float  # time the edit removes from the nodes of the current path

    @property
    def gain_us(self) -> float:
        return self.base_us - self.new_us


def select(
    g: Graph, *, rank: int | None = None, stage: int | None = None, op: str | None = None, cls: str | None = None
) -> np.ndarray:
    """A node mask from the criteria given (all of them must hold)."""
    mask = np.ones(g.n_nodes, dtype=bool)
    if rank is not None:
        mask &= g.rank == rank
    if stage is not None:
        mask &= g.stage == stage
    if op is not None:
        mask &= g.name == op
    if cls is not None:
        mask &= g.cls == cls
    return mask


def what_if(g: Graph, mask: np.ndarray, scale: float = 0.0, base: Solution | None = None) -> Gain:
    """Scale the selected nodes' durations (0: remove them, 0.5: halve) and re-solve the same graph."""
    base = base or solve(g)
    dur = np.where(mask, g.dur * scale, g.dur)
    new = solve(g, dur)
    on_path = base.path[mask[base.path]]
    naive = float((g.dur[on_path] - dur[on_path]).sum())
    return Gain(base.length, new.length, naive)
