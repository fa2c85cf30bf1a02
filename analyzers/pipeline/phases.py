"""Pipeline parallelism, map stage continued: per-step bubble by phase, and waits per direction.

Phases of one stage's step (the 1F1B vocabulary, applied to any schedule):
- warm-up: from the window's start to the first backward compute (the pipeline filling);
- steady: from there to the end of the last forward compute (1F1B's one-forward-one-backward
  part; empty for GPipe, whose forwards all come first);
- cool-down: the rest (the pipeline draining, then the optimizer).
Each phase's bubble is its length minus the compute and the exposed non-pipeline communication in it.

Waiting on point-to-point communication: the training thread's exposed time while a send or recv
is in flight. Each exposed piece goes to the transfer whose completion ends it (else the one in
flight that completes first), and each transfer gets a direction from its place among the actions:
a recv before a forward brings activations from the previous stage (`recv_fwd`), one before a
backward brings gradients from the next stage (`recv_bwd`); a send after a forward goes to the next
stage (`send_fwd`), one after a backward to the previous stage (`send_bwd`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scope.analyzers.pipeline.columns import BACKWARD_OPS, STEP_COLUMNS, WAIT_COLUMNS, RankSets

from scope.rankpass import intervals as iv


def _phase_bounds(acts: pd.DataFrame, lo: int, hi: int) -> tuple[int, int]:
    """(first backward compute start, end of the steady phase) inside [lo, hi)."""
    bwd = acts[acts["op"].isin(BACKWARD_OPS)]
    fwd = acts[acts["op"] == "F"]
    if bwd.empty:  # forward only: the forwards are the steady part
        first = int(fwd["cstart_ns"].min()) if not fwd.empty else lo
        last = int(fwd["cend_ns"].max()) if not fwd.empty else hi
        return min(max(first, lo), hi), min(max(last, first, lo), hi)
    first_b = min(max(int(bwd["cstart_ns"].min()), lo), hi)
    last_f = int(fwd["cend_ns"].max()) if not fwd.empty else first_b
    return first_b, min(max(last_f, first_b), hi)


def step_rows(rank: int, windows: pd.DataFrame, actions: pd.DataFrame, sets: RankSets) -> pd.DataFrame:
    busy = iv.join(sets.compute, sets.other_comm)
    p2p_wait = iv.subtract(iv.union(sets.p2p_starts, sets.p2p_ends), busy)
    rows = []
    for step, lo, hi in windows[["step", "start_ns", "end_ns"]].itertuples(index=False):
        lo, hi = int(lo), int(hi)
        acts = actions[actions["step"] == step]
        if acts.empty:
            continue
        b1, b2 = _phase_bounds(acts, lo, hi)
        phase = []
        for a, b in ((lo, b1), (b1, b2), (b2, hi)):
            phase.append(((b - a) - iv.length_in(busy, a, b)) / 1e3)
        compute = iv.length_in(sets.compute, lo, hi) / 1e3
        other = iv.length_in(sets.other_comm, lo, hi) / 1e3
        step_us = (hi - lo) / 1e3
        rows.append(
            (
                rank,
                int(step),
                lo,
                hi,
                b1,
                b2,
                step_us,
                compute,
                other,
                step_us - compute - other,
                iv.length_in(p2p_wait, lo, hi) / 1e3,
                *phase,
                (b1 - lo) / 1e3,
                (b2 - b1) / 1e3,
                (hi - b2) / 1e3,
            )
        )
    return pd.DataFrame(rows, columns=STEP_COLUMNS)


def transfer_directions(actions: pd.DataFrame, sets: RankSets) -> np.ndarray:
    """Direction of each point-to-point transfer from the action it feeds or follows."""
    acts = actions.sort_values("cstart_ns")
    cstart = acts["cstart_ns"].to_numpy(dtype=np.int64)
    is_bwd = acts["op"].isin(BACKWARD_OPS).to_numpy()
    by_end = actions.sort_values("cend_ns")
    cend = by_end["cend_ns"].to_numpy(dtype=np.int64)
    end_bwd = by_end["op"].isin(BACKWARD_OPS).to_numpy()
    out = np.full(sets.p2p_starts.size, "other", dtype=object)
    if cstart.size == 0:
        return out
    nxt = np.searchsorted(cstart, sets.p2p_starts, side="left")  # the action this recv feeds
    prev = np.searchsorted(cend, sets.p2p_starts, side="right") - 1  # the action this send follows
    recv = sets.p2p_kind == "recv"
    ok_recv = recv & (nxt < cstart.size)
    out[ok_recv] = np.where(is_bwd[np.minimum(nxt, cstart.size - 1)], "recv_bwd", "recv_fwd")[ok_recv]
    ok_send = ~recv & (prev >= 0)
    out[ok_send] = np.where(end_bwd[np.maximum(prev, 0)], "send_bwd", "send_fwd")[ok_send]
    return out


def _attribute(pieces: iv.Spans, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Split exposed pieces at transfer ends; give each sub-piece one transfer (index, -1 if none)."""
    if pieces[0].size == 0 or starts.size == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int64)
    inner = ends[(ends > pieces[0].min()) & (ends < pieces[1].max())]
    pts = np.unique(np.concatenate([pieces[0], pieces[1], inner]))
    a, b = pts[:-1], pts[1:]
    k = np.searchsorted(pieces[0], a, side="right") - 1
    inside = (k >= 0) & (b <= pieces[1][np.maximum(k, 0)])
    a, b = a[inside], b[inside]
    order = np.argsort(ends, kind="stable")
    s_ends, s_starts = ends[order], starts[order]
    owner = np.full(a.size, -1, dtype=np.int64)
    for i in range(a.size):
        j = int(np.searchsorted(s_ends, b[i], side="left"))  # transfers ending at or after b, earliest first
        while j < s_ends.size and s_starts[j] > a[i]:
            j += 1
        if j < s_ends.size:
            owner[i] = order[j]
    return a, b, owner


def wait_rows(rank: int, windows: pd.DataFrame, actions: pd.DataFrame, sets: RankSets) -> pd.DataFrame:
    busy = iv.join(sets.compute, sets.other_comm)
    exposed = iv.subtract(iv.union(sets.p2p_starts, sets.p2p_ends), busy)
    direction = transfer_directions(actions, sets)
    a, b, owner = _attribute(exposed, sets.p2p_starts, sets.p2p_ends)
    lo = windows["start_ns"].to_numpy(dtype=np.int64)
    hi = windows["end_ns"].to_numpy(dtype=np.int64)
    order = np.argsort(lo)
    lo, hi, step_ids = lo[order], hi[order], windows["step"].to_numpy()[order]
    w = np.searchsorted(lo, a, side="right") - 1
    in_step = (w >= 0) & (a < hi[np.maximum(w, 0)]) & (owner >= 0)
    waits = pd.DataFrame(
        {
            "step": step_ids[np.maximum(w, 0)][in_step],
            "direction": direction[owner[in_step]],
            "wait_us": (b - a)[in_step] / 1e3,
        }
    )
    t = np.searchsorted(lo, sets.p2p_starts, side="right") - 1
    t_in = (t >= 0) & (sets.p2p_starts < hi[np.maximum(t, 0)]) & sets.p2p_transfer
    if not sets.p2p_transfer.any():  # only enqueue ops recorded: count those
        t_in = (t >= 0) & (sets.p2p_starts < hi[np.maximum(t, 0)])
    counts = pd.DataFrame({"step": step_ids[np.maximum(t, 0)][t_in], "direction": direction[t_in]})
    counts = counts.groupby(["step", "direction"]).size().rename("transfers")
    sums = waits.groupby(["step", "direction"])["wait_us"].sum()
    out = pd.concat([sums, counts], axis=1).fillna(0).reset_index()
    if out.empty:
        return pd.DataFrame(columns=WAIT_COLUMNS)
    out.insert(0, "rank", rank)
    out["transfers"] = out["transfers"].astype(int)
    return out[WAIT_COLUMNS]
