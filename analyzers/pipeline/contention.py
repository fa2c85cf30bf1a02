"""CPU contention: pipeline stages that share a host's cores, measured on the pipeline's progress clock.

When several CPU ranks of one host compute at once on fewer cores (a CPU/gloo run, or other work on
the host), each runs slower: a stage's wall-clock compute then includes time it was runnable but
descheduled. That distorts the bubble both ways: compute stretches where many stages are busy (the
bubble looks smaller), and per-process scheduling noise makes random stages late (it looks larger).
The bubble the schedule itself leaves, the quantity (p-1)/(m+p-1) describes, is the one on a host
with a core per stage.

The progress clock removes the contention: it advances at the rate the host's pipeline compute
makes progress. Each action's rate is its undisturbed compute (a low quantile of that stage's
actions of the same kind: same shapes, same work) over its measured compute; the host's rate at
time t is the mean rate of the actions computing at t, and 1 where none is (pure waiting or
latency, which contention does not stretch). Under fair sharing every computing rank progresses at
the same rate, so on this clock the step is the one a host with a core per stage would run.
Lengths on it are reported beside the wall-clock ones (`*_uncontended`), never in their place.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from scope.rankpass import intervals as iv

RATE_QUANTILE = 0.1  # undisturbed compute: this quantile of a stage's same-kind actions
MIN_SAMPLES = 3  # fewer actions of a kind: no estimate (rate 1)
CONTENDED_RATE = 0.9  # median action rate below this: the host's stages were contending for CPU


@dataclass
class Clock:
    """Piecewise-linear progress clock tau(t) of one host: tau' = rate(t), on ns offsets from origin."""

    origin: int
    points: np.ndarray  # breakpoints (ns from origin), float64
    taus: np.ndarray  # tau at each breakpoint

    def at(self, t: np.ndarray | int) -> np.ndarray:
        x = np.asarray(t, dtype=np.int64) - self.origin
        x = x.astype(np.float64)
        if self.points.size == 0:
            return x
        tau = np.interp(x, self.points, self.taus)
        return tau + np.clip(x - self.points[-1], 0, None) + np.clip(x - self.points[0], None, 0)

    def length(self, spans: iv.Spans, lo: int, hi: int) -> float:
        """Length on this clock of the part of `spans` inside [lo, hi), in ns."""
        s, e = iv.clip(spans, lo, hi)
        return float((self.at(e) - self.at(s)).sum()) if s.size else 0.0


def action_rates(actions: pd.DataFrame) -> np.ndarray:
    """Per action: undisturbed compute / measured compute, in (0, 1]."""
    grp = actions.groupby(["rank", "stage", "op"])["compute_us"]
    base = grp.transform(lambda x: x.quantile(RATE_QUANTILE) if len(x) >= MIN_SAMPLES else np.nan)
    rate = base / actions["compute_us"].where(actions["compute_us"] > 0)
    return rate.clip(upper=1.0).fillna(1.0).to_numpy(dtype=float)


def _rated_pieces(
    compute: iv.Spans, acts: pd.DataFrame, rates: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rank's compute inside its actions, cut at action boundaries, each piece with its action's rate."""
    lo = acts["start_ns"].to_numpy(dtype=np.int64)
    hi = acts["end_ns"].to_numpy(dtype=np.int64)
    order = np.argsort(lo, kind="stable")
    lo, hi, rates = lo[order], hi[order], rates[order]
    pieces = iv.intersect(compute, iv.union(lo, hi))
    if pieces[0].size == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0)
    pts = np.unique(np.concatenate([pieces[0], pieces[1], lo, hi]))
    a, b = pts[:-1], pts[1:]
    k = np.searchsorted(pieces[0], a, side="right") - 1
    inside = (k >= 0) & (b <= pieces[1][np.maximum(k, 0)])
    a, b = a[inside], b[inside]
    owner = np.searchsorted(lo, a, side="right") - 1
    ok = (owner >= 0) & (a < hi[np.maximum(owner, 0)])
    return a[ok], b[ok], rates[np.maximum(owner, 0)][ok]


def host_clock(pieces: list[tuple[np.ndarray, np.ndarray, np.ndarray]], origin: int) -> Clock:
    """Sweep every rank's rated pieces: rate = mean rate of the pieces covering t, 1 where none does."""
    starts = np.concatenate([p[0] for p in pieces]) - origin if pieces else np.empty(0, np.int64)
    ends = np.concatenate([p[1] for p in pieces]) - origin if pieces else np.empty(0, np.int64)
    rates = np.concatenate([p[2] for p in pieces]) if pieces else np.empty(0)
    if starts.size == 0:
        return Clock(origin, np.empty(0), np.empty(0))
    pos = np.concatenate([starts, ends]).astype(np.float64)
    d_rate = np.concatenate([rates, -rates])
    d_count = np.concatenate([np.ones(starts.size), -np.ones(ends.size)])
    order = np.argsort(pos, kind="stable")
    pos, d_rate, d_count = pos[order], d_rate[order], d_count[order]
    total, count = np.cumsum(d_rate), np.rint(np.cumsum(d_count))
    uniq = np.unique(pos)
    # State after all events at each distinct position.
    idx = np.searchsorted(pos, uniq, side="right") - 1
    total, count = total[idx], count[idx]
    rate = np.where(count > 0, total / np.maximum(count, 1), 1.0)[:-1]
    taus = np.concatenate([[uniq[0]], uniq[0] + np.cumsum(rate * np.diff(uniq))])
    return Clock(origin, uniq, taus)


def median_rate(rates: np.ndarray) -> float:
    return float(np.median(rates)) if rates.size else 1.0


@dataclass
class Contention:
    """The run seen on each host's progress clock."""

    actions: pd.DataFrame  # cstart/cend on the progress clock, compute_us its length there
    steps: pd.DataFrame  # the steps table plus *_uncontended columns and contention_us
    contended: dict[int, bool]  # rank -> its host's stages contended for CPU
    rate: dict[int, float]  # rank -> median action rate


UNCONTENDED = [
    "step_uncontended_us",
    "bubble_uncontended_us",
    "warmup_uncontended_us",
    "steady_uncontended_us",
    "cooldown_uncontended_us",
    "contention_us",
]


def _step_columns(clock: Clock, busy: iv.Spans, compute: iv.Spans, st: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for lo, b1, b2, hi, comp_us in st[
        ["start_ns", "steady_start_ns", "cooldown_start_ns", "end_ns", "compute_us"]
    ].itertuples(index=False):
        edges = clock.at(np.array([lo, b1, b2, hi]))
        phases = [
            (edges[i + 1] - edges[i] - clock.length(busy, int(a), int(b))) / 1e3
            for i, (a, b) in enumerate(((lo, b1), (b1, b2), (b2, hi)))
        ]
        step = (edges[3] - edges[0]) / 1e3
        rows.append((step, sum(phases), *phases, comp_us - clock.length(compute, int(lo), int(hi)) / 1e3))
    return pd.DataFrame(rows, columns=UNCONTENDED, index=st.index)


def _warp_actions(clock: Clock, compute: iv.Spans, acts: pd.DataFrame) -> pd.DataFrame:
    out = acts.copy()
    out["cstart_ns"] = (clock.at(acts["cstart_ns"].to_numpy()) + clock.origin).astype(np.int64)
    out["cend_ns"] = (clock.at(acts["cend_ns"].to_numpy()) + clock.origin).astype(np.int64)
    out["compute_us"] = [
        clock.length(compute, int(a), int(b)) / 1e3 for a, b in zip(acts["start_ns"], acts["end_ns"], strict=True)
    ]
    return out


def apply_contention(parts: list, actions: pd.DataFrame, steps: pd.DataFrame, host_of: dict[int, str]) -> Contention:
    """Progress clocks per host for CPU ranks; GPU ranks keep the wall clock (rate 1)."""
    by_rank = {p.rank: p for p in parts}
    actions = actions.reset_index(drop=True)
    steps = steps.reset_index(drop=True)
    rates = action_rates(actions)
    extra = pd.DataFrame(index=steps.index, columns=UNCONTENDED, dtype=float)
    contended: dict[int, bool] = {}
    median: dict[int, float] = {}
    cpu_ranks = [r for r in actions["rank"].unique() if by_rank[int(r)].timeline == "cpu"]
    hosts: dict[str, list[int]] = {}
    for r in cpu_ranks:
        hosts.setdefault(host_of.get(int(r), ""), []).append(int(r))
    warped = []
    for ranks in hosts.values():
        mask = actions["rank"].isin(ranks).to_numpy()
        host_rate = median_rate(rates[mask])
        contended.update(dict.fromkeys(ranks, host_rate < CONTENDED_RATE))
        median.update(dict.fromkeys(ranks, host_rate))
        if host_rate >= CONTENDED_RATE:  # the wall clock is the progress clock
            continue
        pieces = [
            _rated_pieces(by_rank[r].compute, actions[actions["rank"] == r], rates[(actions["rank"] == r).to_numpy()])
            for r in ranks
        ]
        clock = host_clock(pieces, int(actions.loc[mask, "start_ns"].min()))
        for r in ranks:
            part, sel = by_rank[r], steps["rank"] == r
            extra.loc[sel] = _step_columns(clock, part.busy, part.compute, steps[sel]).to_numpy()
            warped.append(_warp_actions(clock, part.compute, actions[actions["rank"] == r]))
    moved = {int(r) for w in warped for r in w["rank"].unique()}
    out_actions = [actions[~actions["rank"].isin(moved)], *warped]
    wall = ~steps["rank"].isin(moved)
    extra.loc[wall, UNCONTENDED] = (
        steps.loc[wall, ["step_us", "bubble_us", "warmup_us", "steady_us", "cooldown_us"]].assign(c=0.0).to_numpy()
    )
    steps = pd.concat([steps, extra.astype(float)], axis=1)
    return Contention(pd.concat(out_actions, ignore_index=True), steps, contended, median)
