"""Server-side reductions: what the browser gets instead of raw events (pure functions, data in, data out).

Every function here bounds its output (matrix columns, segments per lane, points per series), so a
1,024-rank run costs the browser about what a 4-rank run does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from scope.rankpass.timeline import main_thread

# Heat-map columns beyond this are binned (the worst value of each bin is kept: hot cells stay hot).
MAX_HEAT_COLUMNS = 400
MAX_LANES = 64
DEFAULT_LANES = 24
MAX_SEGMENTS_PER_LANE = 400
MAX_SERIES_POINTS = 1500

SEGMENT_COLUMNS = ["cat", "start_ns", "end_ns", "label"]


def parse_ranks(text: str | None, known: Sequence[int], limit: int = MAX_LANES) -> list[int]:
    """'0-3, 12' -> [0, 1, 2, 3, 12], keeping only known ranks, at most `limit` of them."""
    if not text:
        return []
    known_set = set(known)
    out: list[int] = []
    for part in re.split(r"[,\s]+", text.strip()):
        match = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not match:
            continue
        lo = int(match.group(1))
        hi = int(match.group(2)) if match.group(2) else lo
        for rank in range(lo, min(hi, lo + 4 * limit) + 1):
            if rank in known_set and rank not in out:
                out.append(rank)
    return sorted(out)[:limit]


def format_ranks(ranks: Iterable[int]) -> str:
    """[0, 1, 2, 3, 12] -> '0-3, 12'."""
    values = sorted(set(int(r) for r in ranks))
    parts: list[str] = []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        parts.append(str(values[i]) if i == j else f"{values[i]}-{values[j]}")
        i = j + 1
    return ", ".join(parts)


def choose_lanes(all_ranks: Sequence[int], focus: Iterable[int] = (), limit: int = DEFAULT_LANES) -> list[int]:
    """All ranks when they fit; otherwise the focus ranks plus an even sample of the rest."""
    ranks = sorted(set(all_ranks))
    if len(ranks) <= limit:
        return ranks
    chosen = [r for r in dict.fromkeys(focus) if r in set(ranks)][:limit]
    room = limit - len(chosen)
    if room > 0:
        rest = [r for r in ranks if r not in chosen]
        idx = np.linspace(0, len(rest) - 1, num=min(room, len(rest))).round().astype(int)
        chosen += [rest[i] for i in dict.fromkeys(idx.tolist())]
    return sorted(chosen)


def heat_matrix(
    df: pd.DataFrame, value: str, relative: bool = False, max_columns: int = MAX_HEAT_COLUMNS
) -> tuple[pd.DataFrame, int]:
    """Ranks x steps matrix of `value` (rows: ranks, columns: steps); returns (matrix, steps per column).

    `relative` divides each cell by the other ranks' median in its step (1.0 = typical), so a slow rank
    stands out even when step times vary (the straggler finding's per-step quotient, the same number).
    Beyond `max_columns` steps, columns hold the worst value of each run of consecutive steps, labelled by
    the run's first step.
    """
    if df is None or df.empty or value not in df.columns:
        return pd.DataFrame(), 1
    matrix = df.pivot_table(index="rank", columns="step", values=value, aggfunc="max").sort_index()
    matrix = matrix.reindex(sorted(matrix.columns), axis=1)
    if relative:
        from scope.analyzers.stragglers import others_median

        others = others_median(matrix)
        matrix = matrix / others.where(others != 0)
    width = max(1, -(-matrix.shape[1] // max_columns))
    if width > 1:
        groups = np.arange(matrix.shape[1]) // width
        first_steps = [matrix.columns[i] for i in range(0, matrix.shape[1], width)]
        matrix = matrix.T.groupby(groups).max().T
        matrix.columns = first_steps
    return matrix, width


def step_summary(steps: pd.DataFrame, value: str = "step_us") -> pd.DataFrame:
    """Per step across ranks: min, median, max of `value` and the rank at the max."""
    if steps is None or steps.empty or value not in steps.columns:
        return pd.DataFrame(columns=["step", "min", "median", "max", "slowest_rank"])
    grouped = steps.groupby("step")[value]
    out = pd.DataFrame({"min": grouped.min(), "median": grouped.median(), "max": grouped.max()})
    out["slowest_rank"] = steps.loc[grouped.idxmax().to_numpy(), "rank"].to_numpy()
    return out.reset_index()


def box_stats(df: pd.DataFrame, group_cols: Sequence[str], value: str) -> pd.DataFrame:
    """Quartiles, whiskers (5th/95th percentile), mean and count per group: a box plot without the points."""
    cols = ["group", "q1", "median", "q3", "lo", "hi", "mean", "n"]
    if df is None or df.empty or value not in df.columns:
        return pd.DataFrame(columns=cols)
    data = df.dropna(subset=[value])
    if data.empty:
        return pd.DataFrame(columns=cols)
    label = data[group_cols[0]].astype(str)
    for col in group_cols[1:]:  # vectorized: a row-wise join costs seconds on 100k instances
        label = label + " / " + data[col].astype(str)
    grouped = data[value].groupby(label)
    out = pd.DataFrame(
        {
            "q1": grouped.quantile(0.25),
            "median": grouped.median(),
            "q3": grouped.quantile(0.75),
            "lo": grouped.quantile(0.05),
            "hi": grouped.quantile(0.95),
            "mean": grouped.mean(),
            "n": grouped.size(),
        }
    )
    return out.rename_axis("group").reset_index()[cols]


Arrays = tuple[np.ndarray, np.ndarray, np.ndarray]


def _union(s: np.ndarray, e: np.ndarray, lab: np.ndarray, gap: float) -> Arrays:
    """Merge intervals closer than `gap`; each merged one keeps the label of its longest member (numpy only:
    this runs for every lane of every timeline view)."""
    if len(s) == 0:
        return s, e, lab
    order = np.argsort(s, kind="stable")
    s, e, lab = s[order], e[order], lab[order]
    reach = np.maximum.accumulate(e)
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > reach[:-1] + gap
    firsts = np.flatnonzero(new)
    group = np.cumsum(new) - 1
    by_length = np.lexsort((-(e - s), group))  # within each group, the longest first
    longest = by_length[np.r_[0, np.flatnonzero(np.diff(group[by_length])) + 1]]
    return s[firsts], np.maximum.reduceat(e, firsts), lab[longest]


def union_segments(starts: np.ndarray, ends: np.ndarray, labels: np.ndarray, min_gap: float) -> pd.DataFrame:
    """Merge intervals that overlap or lie within `min_gap` ns; each keeps its longest event's label."""
    s, e, lab = _union(np.asarray(starts), np.asarray(ends), np.asarray(labels), min_gap)
    return pd.DataFrame({"start_ns": s, "end_ns": e, "label": lab})


def _bounded(s: np.ndarray, e: np.ndarray, lab: np.ndarray, span_ns: float, max_segments: int) -> Arrays:
    gap = span_ns / 4000.0
    s, e, lab = _union(s, e, lab, gap)
    while len(s) > max_segments:
        gap *= 4
        s, e, lab = _union(s, e, lab, gap)
    return s, e, lab


def bounded_segments(
    starts: np.ndarray, ends: np.ndarray, labels: np.ndarray, span_ns: float, max_segments: int = MAX_SEGMENTS_PER_LANE
) -> pd.DataFrame:
    """Union of the intervals, coarsened until at most `max_segments` remain (gaps below a pixel or so vanish)."""
    s, e, lab = _bounded(np.asarray(starts), np.asarray(ends), np.asarray(labels), span_ns, max_segments)
    return pd.DataFrame({"start_ns": s, "end_ns": e, "label": lab})


def _gaps(s: np.ndarray, e: np.ndarray, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """The gaps between sorted, disjoint intervals inside [lo, hi]."""
    gs = np.clip(np.concatenate([[lo], e]), lo, hi)
    ge = np.clip(np.concatenate([s, [hi]]), lo, hi)
    keep = ge > gs
    return gs[keep], ge[keep]


def _categories(events: pd.DataFrame) -> dict[str, np.ndarray]:
    """Masks of the events that make up compute, communication and memory traffic on this rank.

    GPU traces: the kernels by kind. CPU-only traces (gloo): no compute kernels exist, so the CPU
    operators of the training thread stand for compute: the same thread the step budget reads
    (`main_thread`), so the lanes and the budget never name different threads.
    """
    kind = events["kind"].astype(str).to_numpy()
    device = events["device"].to_numpy()
    masks = {
        "compute": (kind == "compute") & (device >= 0),
        "comm": kind == "comm",
        "memcpy": (kind == "memcpy") | (kind == "memset"),
    }
    if not masks["compute"].any():
        main = main_thread(events)
        if main is not None:
            masks["compute"] = (kind == "cpu_op") & (events["thread"].to_numpy() == main)
    return masks


def lane_segments(events: pd.DataFrame, lo: int, hi: int, max_segments: int = MAX_SEGMENTS_PER_LANE) -> pd.DataFrame:
    """One rank's activity in [lo, hi] as a bounded set of segments: compute, comm, memcpy and idle.

    Idle is time inside [lo, hi] covered by none of the others (the rank waits on its host or peers).
    """
    if events is None or events.empty or hi <= lo:
        return pd.DataFrame(columns=SEGMENT_COLUMNS)
    span = float(hi - lo)
    ts = events["ts_ns"].to_numpy(dtype=np.int64)
    end_all = np.clip(ts + events["dur_ns"].to_numpy(dtype=np.int64), lo, hi)
    start_all = np.clip(ts, lo, hi)
    names = events["name"].astype(str).to_numpy()
    cats, starts, ends, labels = [], [], [], []
    for cat, mask in _categories(events).items():
        mask = mask & (end_all > start_all)
        if not mask.any():
            continue
        s, e, lab = _bounded(start_all[mask], end_all[mask], names[mask], span, max_segments)
        cats.append(np.full(len(s), cat, dtype=object))
        starts.append(s)
        ends.append(e)
        labels.append(lab)
    busy_s = np.concatenate(starts) if starts else np.array([], dtype=np.int64)
    busy_e = np.concatenate(ends) if ends else np.array([], dtype=np.int64)
    bs, be, _ = _union(busy_s, busy_e, np.zeros(len(busy_s)), 0)
    gs, ge = _gaps(bs, be, lo, hi)
    keep = (ge - gs) > span / 2000.0
    gs, ge = gs[keep][:max_segments], ge[keep][:max_segments]
    cats.append(np.full(len(gs), "idle", dtype=object))
    starts.append(gs)
    ends.append(ge)
    labels.append(np.full(len(gs), "idle", dtype=object))
    return pd.DataFrame(
        {
            "cat": np.concatenate(cats),
            "start_ns": np.concatenate(starts).astype(np.int64),
            "end_ns": np.concatenate(ends).astype(np.int64),
            "label": np.concatenate(labels),
        }
    )


def downsample_series(df: pd.DataFrame, x: str, y: str, max_points: int = MAX_SERIES_POINTS) -> pd.DataFrame:
    """Keep a series under `max_points` by bucketing on x: each bucket keeps its min and max (spikes survive)."""
    if len(df) <= max_points:
        return df[[x, y]]
    buckets = pd.cut(df[x], bins=max_points // 2, labels=False)
    grouped = df.groupby(buckets)
    lo = df.loc[grouped[y].idxmin().dropna().astype(int), [x, y]]
    hi = df.loc[grouped[y].idxmax().dropna().astype(int), [x, y]]
    return pd.concat([lo, hi]).drop_duplicates().sort_values(x)


def counter_rates(df: pd.DataFrame, column: str, entity: str | None) -> pd.DataFrame:
    """Per-second rate of a cumulative counter, per entity; a counter reset (negative step) gives no point."""
    cols = ["ts_ns", "entity", "value"]
    if df is None or df.empty or column not in df.columns:
        return pd.DataFrame(columns=cols)
    data = df[["ts_ns", column] + ([entity] if entity else [])].dropna(subset=[column]).copy()
    data["entity"] = data[entity].astype(str) if entity else "host"
    data = data.sort_values(["entity", "ts_ns"])
    dt = data.groupby("entity")["ts_ns"].diff() / 1e9
    dv = data.groupby("entity")[column].diff()
    data["value"] = dv / dt
    return data[(dt > 0) & (dv >= 0)][cols]


def counter_levels(df: pd.DataFrame, column: str, entity: str | None) -> pd.DataFrame:
    cols = ["ts_ns", "entity", "value"]
    if df is None or df.empty or column not in df.columns:
        return pd.DataFrame(columns=cols)
    data = df[["ts_ns", column] + ([entity] if entity else [])].dropna(subset=[column]).copy()
    data["entity"] = data[entity].astype(str) if entity else "host"
    return data.rename(columns={column: "value"})[cols].sort_values(["entity", "ts_ns"])
