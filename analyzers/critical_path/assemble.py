"""One step's graph across ranks: every rank's part for the step, joined by the matched collectives.

For each collective instance the matching found (analyzers/_match.py) in the step with two or more
participants, each participant's arrival feeds one barrier and the barrier feeds each participant's
completion: every rank's completion waits for the LAST arrival. A completion then lasts from the last
arrival to the rank's own end; a rank whose op ended (by its clock) before the last arrival began is a
clock conflict, counted by `core.conflicts` on the barrier's edge, never moved.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scope.analyzers._match import Matched
from scope.analyzers.critical_path.core import COLLECTIVE, Graph, graph, residuals
from scope.analyzers.critical_path.kineto import RankPart

PARTICIPANT_COLUMNS = ["step", "pg", "seq", "rank", "event_id"]


def participants(matched: Matched, coll: pd.DataFrame) -> pd.DataFrame:
    """(step, pg, seq, rank, event_id) of every rank's part in the multi-rank collectives."""
    inst = matched.instances
    if inst.empty:
        return pd.DataFrame(columns=PARTICIPANT_COLUMNS)
    multi = inst.loc[~inst["p2p"].astype(bool) & (inst["n_ranks"] > 1), ["pg", "seq", "step"]]
    pr = matched.per_rank.merge(multi, on=["pg", "seq"])
    ids = coll[["rank", "ts_ns", "end_ns", "event_id"]].rename(columns={"ts_ns": "start_ns"})
    pr = pr.merge(ids, on=["rank", "start_ns", "end_ns"]).drop_duplicates(["pg", "seq", "rank"])
    return pr[PARTICIPANT_COLUMNS]


def step_graph(parts: list[RankPart], parts_of_step: pd.DataFrame, step: int) -> Graph:
    """The graph of `step` (µs, aligned clock) from the ranks' parts and the step's collectives."""
    cols: dict[str, list] = {k: [] for k in ("rank", "lane", "name", "cls", "stage", "start", "dur")}
    ecols: dict[str, list] = {k: [] for k in ("src", "dst", "lag", "kind")}
    where: dict[tuple[int, int], tuple[int, int]] = {}  # (rank, event id) -> (arrival, completion) rows
    offset = 0
    for part in parts:
        nodes = part.nodes
        mask = (nodes["step"] == step).to_numpy()
        if not mask.any():
            continue
        local = np.full(len(nodes), -1, dtype=np.int64)
        local[mask] = offset + np.arange(int(mask.sum()))
        sub = nodes[mask]
        for k, c in (("lane", "lane"), ("name", "name"), ("cls", "cls"), ("start", "start"), ("dur", "dur")):
            cols[k].append(sub[c].to_numpy())
        cols["rank"].append(np.full(len(sub), part.rank))
        cols["stage"].append(np.full(len(sub), -1))
        e = part.edges
        keep = (local[e["src"].to_numpy()] >= 0) & (local[e["dst"].to_numpy()] >= 0)
        ecols["src"].append(local[e["src"].to_numpy()[keep]])
        ecols["dst"].append(local[e["dst"].to_numpy()[keep]])
        ecols["lag"].append(e["lag"].to_numpy()[keep])
        ecols["kind"].append(e["kind"].to_numpy()[keep])
        comm = sub[sub["role"] != "op"]
        rows = local[np.flatnonzero(mask)][(sub["role"] != "op").to_numpy()]
        for eid, role, row in zip(comm["event_id"], comm["role"], rows, strict=True):
            a, c = where.get((part.rank, int(eid)), (-1, -1))
            where[(part.rank, int(eid))] = (int(row), c) if role == "arrive" else (a, int(row))
        offset += len(sub)
    flat = {k: np.concatenate(v) if v else np.zeros(0) for k, v in cols.items()}
    eflat = {k: np.concatenate(v) if v else np.zeros(0) for k, v in ecols.items()}
    _barriers(flat, eflat, where, parts_of_step)
    g = graph(flat["rank"], flat["lane"], flat["name"], flat["cls"], flat["stage"], flat["start"], flat["dur"],
              eflat["src"], eflat["dst"], eflat["lag"], eflat["kind"])  # fmt: skip
    g.lag = g.lag + residuals(g)[g.dst]
    return g


def _barriers(flat: dict, eflat: dict, where: dict, parts_of_step: pd.DataFrame) -> None:
    """Append a barrier node per collective and its edges; completions start at the last arrival."""
    start, dur = flat["start"].astype(np.float64), flat["dur"].astype(np.float64)
    new_nodes: list[tuple[float]] = []
    src, dst = [], []
    n = len(start)
    for _, inst in parts_of_step.groupby(["pg", "seq"], sort=False):
        pairs = [where.get((int(r), int(e)), (-1, -1)) for r, e in zip(inst["rank"], inst["event_id"], strict=True)]
        pairs = [p for p in pairs if p[0] >= 0 and p[1] >= 0]
        if len(pairs) < 2:
            continue
        last = max(start[a] for a, _ in pairs)
        b = n + len(new_nodes)
        new_nodes.append((last,))
        for a, c in pairs:
            end = start[c] + dur[c]
            start[c] = min(last, end)
            dur[c] = end - start[c]
            src += [a, b]
            dst += [b, c]
    k = len(new_nodes)
    flat["start"] = np.r_[start, [t for (t,) in new_nodes]]
    flat["dur"] = np.r_[dur, np.zeros(k)]
    flat["rank"] = np.r_[flat["rank"].astype(np.int64), np.full(k, -1)]
    flat["stage"] = np.r_[flat["stage"].astype(np.int64), np.full(k, -1)]
    flat["lane"] = np.r_[flat["lane"].astype(object), np.full(k, "", dtype=object)]
    flat["name"] = np.r_[flat["name"].astype(object), np.full(k, "", dtype=object)]
    flat["cls"] = np.r_[flat["cls"].astype(object), np.full(k, "barrier", dtype=object)]
    eflat["src"] = np.r_[eflat["src"].astype(np.int64), np.asarray(src, dtype=np.int64)]
    eflat["dst"] = np.r_[eflat["dst"].astype(np.int64), np.asarray(dst, dtype=np.int64)]
    eflat["lag"] = np.r_[eflat["lag"].astype(np.float64), np.zeros(len(src))]
    eflat["kind"] = np.r_[eflat["kind"].astype(np.int8), np.full(len(src), COLLECTIVE, dtype=np.int8)]
