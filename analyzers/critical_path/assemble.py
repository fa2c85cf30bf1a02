"""One step's graph across ranks: every rank's part for the step, joined by the matched collectives.

For each collective instance the matching found (scope/rankpass/match.py) in the step with two or more
participants, each participant's arrival feeds one barrier and the barrier feeds each participant's
completion: every rank's completion waits for the LAST arrival. A completion then lasts from the last
arrival to the rank's own end; a rank whose op ended (by its clock) before the last arrival began is a
clock conflict, counted by `core.conflicts` on the barrier's edge, never moved.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scope.analyzers.critical_path.core import COLLECTIVE, P2P, Graph, graph, residuals
from scope.analyzers.critical_path.kineto import RankPart

from scope.rankpass.match import Matched

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


P2P_COLUMNS = ["rank", "pg", "op", "ts_ns", "event_id", "step", "group_size", "group_ranks", "peer"]


def p2p_pairs(coll: pd.DataFrame) -> pd.DataFrame:
    """Sends and recvs paired, each pair then joined like a collective of two (PARTICIPANT_COLUMNS).
    Where the trace names each transfer's other end (`peer`: NCCL's Src/Dst Rank, c10d's send/recv
    inputs), the k-th send from a to b in a group meets the k-th recv on b from a in that group, in
    time order over the run (a pair whose two ends fall in different steps joins nothing). Where it
    names none, only a group of two has one possible peer: per step, the k-th send of one member meets
    the k-th recv of the other (when the counts agree; else nothing is guessed)."""
    p2p = coll[coll["op"].isin(("send", "recv")) & (coll["step"] >= 0)]
    if p2p.empty:
        return pd.DataFrame(columns=PARTICIPANT_COLUMNS)
    peer = p2p["peer"] if "peer" in p2p else pd.Series(-1, index=p2p.index)
    named = peer.to_numpy() >= 0
    rows = _named_pairs(p2p[named].assign(peer=peer[named])) + _two_rank_pairs(p2p[~named])
    return pd.DataFrame(rows, columns=PARTICIPANT_COLUMNS)


def _named_pairs(p2p: pd.DataFrame) -> list[tuple]:
    """Pairs by (sender, receiver, group), k-th with k-th: the order both ends see their transfers in."""
    if p2p.empty:
        return []
    send = p2p["op"].to_numpy() == "send"
    rank, other = p2p["rank"].to_numpy(np.int64), p2p["peer"].to_numpy(np.int64)
    ends = p2p.assign(src=np.where(send, rank, other), dst=np.where(send, other, rank), is_send=send)
    ends = ends.sort_values(["ts_ns", "event_id"], kind="stable")
    ends["k"] = ends.groupby(["src", "dst", "pg", "is_send"], sort=False).cumcount()
    keys = ["src", "dst", "pg", "k"]
    both = ends[ends["is_send"]].merge(ends[~ends["is_send"]], on=keys, suffixes=("_s", "_r"))
    both = both[both["step_s"] == both["step_r"]]
    rows: list[tuple] = []
    for r in both.itertuples(index=False):
        key = f"p2p {r.pg} {r.src}->{r.dst}"
        rows += [(int(r.step_s), key, int(r.k), int(r.src), int(r.event_id_s)),
                 (int(r.step_s), key, int(r.k), int(r.dst), int(r.event_id_r))]  # fmt: skip
    return rows


def _two_rank_pairs(p2p: pd.DataFrame) -> list[tuple]:
    rows: list[tuple] = []
    for pg, sub in p2p.groupby("pg", sort=False):
        members = sorted(int(r) for r in sub["rank"].unique())
        if len(members) != 2 or int(sub["group_size"].max()) > 2:
            continue
        for step, one in sub.groupby("step", sort=False):
            for a, b in (members, members[::-1]):
                sends = one[(one["rank"] == a) & (one["op"] == "send")].sort_values("ts_ns")
                recvs = one[(one["rank"] == b) & (one["op"] == "recv")].sort_values("ts_ns")
                if len(sends) != len(recvs):
                    continue
                for k, (s_id, r_id) in enumerate(zip(sends["event_id"], recvs["event_id"], strict=True)):
                    key = f"p2p {pg} {a}->{b}"
                    rows += [(int(step), key, k, a, int(s_id)), (int(step), key, k, b, int(r_id))]
    return rows


class StepGraphs:
    """Every rank's part in one set of arrays (global node ids), cut per step on demand: the per-rank
    frames are joined once, not once per step (at 1,024 ranks that was most of the time)."""

    def __init__(self, parts: list[RankPart], who: pd.DataFrame, stages: dict[int, int] | None = None) -> None:
        sizes = [len(p.nodes) for p in parts]
        offsets = np.cumsum([0, *sizes])[:-1]
        nodes = pd.concat([p.nodes for p in parts], ignore_index=True) if parts else pd.DataFrame()
        self.rank = np.repeat([p.rank for p in parts], sizes).astype(np.int64)
        stage_of = stages or {}
        self.stage = np.repeat([stage_of.get(p.rank, -1) for p in parts], sizes).astype(np.int64)
        self.step = nodes["step"].to_numpy(np.int64) if parts else np.zeros(0, np.int64)
        text = {c: nodes[c].to_numpy(object) if parts else np.zeros(0, object) for c in ("lane", "name", "cls")}
        self.lane, self.name, self.cls = text["lane"], text["name"], text["cls"]
        self.start = nodes["start"].to_numpy(np.float64) if parts else np.zeros(0)
        self.dur = nodes["dur"].to_numpy(np.float64) if parts else np.zeros(0)
        edges = [
            p.edges.assign(src=p.edges["src"] + o, dst=p.edges["dst"] + o) for p, o in zip(parts, offsets, strict=True)
        ]
        e = pd.concat(edges, ignore_index=True) if edges else pd.DataFrame(columns=["src", "dst", "lag", "kind"])
        src, dst = e["src"].to_numpy(np.int64), e["dst"].to_numpy(np.int64)
        same = self.step[src] == self.step[dst]
        self.src, self.dst = src[same], dst[same]
        self.lag, self.kind = e["lag"].to_numpy(np.float64)[same], e["kind"].to_numpy(np.int8)[same]
        self.by_step = pd.Series(np.arange(len(self.step))).groupby(self.step).indices
        self.edges_by_step = pd.Series(np.arange(len(self.src))).groupby(self.step[self.src]).indices
        self.joins = _joins(nodes, self.rank, who) if parts else pd.DataFrame()

    def graph(self, step: int) -> Graph:
        idx = self.by_step.get(step, np.zeros(0, dtype=np.int64))
        local = np.full(len(self.step), -1, dtype=np.int64)
        local[idx] = np.arange(len(idx))
        e = self.edges_by_step.get(step, np.zeros(0, dtype=np.int64))
        joins = self.joins[self.joins["step"] == step] if len(self.joins) else self.joins
        start, dur = self.start[idx].copy(), self.dur[idx].copy()
        b_start, b_src, b_dst, b_kind = _barriers(start, dur, local, joins)
        k = len(b_start)
        g = graph(
            np.r_[self.rank[idx], np.full(k, -1)],
            np.r_[self.lane[idx], np.full(k, "", dtype=object)],
            np.r_[self.name[idx], np.full(k, "", dtype=object)],
            np.r_[self.cls[idx], np.full(k, "barrier", dtype=object)],
            np.r_[self.stage[idx], np.full(k, -1)],
            np.r_[start, b_start],
            np.r_[dur, np.zeros(k)],
            np.r_[local[self.src[e]], b_src],
            np.r_[local[self.dst[e]], b_dst],
            np.r_[self.lag[e], np.zeros(len(b_src))],
            np.r_[self.kind[e], b_kind],
        )
        g.lag = g.lag + residuals(g)[g.dst]
        return g


def _joins(nodes: pd.DataFrame, rank: np.ndarray, who: pd.DataFrame) -> pd.DataFrame:
    """(step, pg, seq, arrival node, completion node) of every rank's part in every matched collective."""
    roles = nodes[["event_id", "role"]].assign(rank=rank, node=np.arange(len(nodes)))
    arrive = roles[roles["role"] == "arrive"].drop(columns="role").rename(columns={"node": "arrive"})
    done = roles[roles["role"] == "complete"].drop(columns="role").rename(columns={"node": "complete"})
    both = arrive.merge(done, on=["rank", "event_id"])
    if who.empty:
        return pd.DataFrame(columns=["step", "pg", "seq", "arrive", "complete"])
    keys = who.astype({"rank": np.int64, "event_id": np.int64})
    out = keys.merge(both, on=["rank", "event_id"])
    return out[["step", "pg", "seq", "arrive", "complete"]]


def _barriers(
    start: np.ndarray, dur: np.ndarray, local: np.ndarray, joins: pd.DataFrame
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A barrier per collective (2+ participants here): its start (the last arrival), and the edges
    arrival -> barrier -> completion. Completions are moved to start at the last arrival (or at their
    own end, when their clock says they ended before it: then the barrier's edge is a counted conflict)."""
    if joins.empty:
        return np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int8)
    a, c = local[joins["arrive"].to_numpy(np.int64)], local[joins["complete"].to_numpy(np.int64)]
    keep = (a >= 0) & (c >= 0)
    inst = pd.factorize(pd.MultiIndex.from_frame(joins[["pg", "seq"]]))[0][keep]
    a, c = a[keep], c[keep]
    # a send/recv pair's joins are keyed "p2p <group> <src>-><dst>" (p2p_pairs)
    p2p = joins["pg"].astype(str).str.startswith("p2p ").to_numpy()[keep]
    n_inst = int(inst.max()) + 1 if len(inst) else 0
    count = np.bincount(inst, minlength=n_inst)
    multi = count[inst] >= 2
    inst, a, c, p2p = pd.factorize(inst[multi])[0], a[multi], c[multi], p2p[multi]
    n_inst = int(inst.max()) + 1 if len(inst) else 0
    last = np.full(n_inst, -np.inf)
    np.maximum.at(last, inst, start[a])
    end = start[c] + dur[c]
    start[c] = np.minimum(last[inst], end)
    dur[c] = end - start[c]
    barrier = len(start) + inst
    kind = np.where(p2p, P2P, COLLECTIVE).astype(np.int8)
    return last, np.r_[a, barrier], np.r_[barrier, c], np.r_[kind, kind]


def step_graph(parts: list[RankPart], parts_of_step: pd.DataFrame, step: int) -> Graph:
    """The graph of `step` alone (tests and single windows; the analyzer cuts all steps from one StepGraphs)."""
    return StepGraphs(parts, parts_of_step).graph(step)
