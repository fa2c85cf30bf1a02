"""Per rank: step time and budget change, and ranks that became stragglers or stopped being one.

Ranks are matched one to one only when both runs traced the same ranks with the same parallel
layout (the process groups' sizes); otherwise rank 5 of A is not rank 5 of B, and the runs are
compared as distributions of per-rank step times (min, quartiles, max), saying why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from scope.analyzers.stragglers_spec import STRAGGLER_KINDS
from scope.compare.budget import Budget

if TYPE_CHECKING:
    from scope.result import Analysis

QUANTILES = {"min": 0.0, "p25": 0.25, "median": 0.5, "p75": 0.75, "max": 1.0}


def straggler_ranks(analysis: Analysis) -> dict[int, str]:
    """rank -> the straggler finding's summary, for every rank a straggler finding names."""
    out: dict[int, str] = {}
    for f in analysis.findings:
        if f.kind in STRAGGLER_KINDS:
            for r in f.ranks:
                out.setdefault(int(r), f.summary)
    return out


def layout(analysis: Analysis) -> tuple[int, tuple[int, ...]]:
    """(ranks traced, sorted sizes of the process groups that ran collectives)."""
    n = len(analysis.ranks) if analysis.ranks is not None and not analysis.ranks.empty else 0
    if not n and analysis.steps is not None and not analysis.steps.empty:
        n = int(analysis.steps["rank"].nunique())
    coll = analysis.table("collectives")
    sizes: tuple[int, ...] = ()
    if coll is not None and {"pg", "group_size"} <= set(coll.columns):
        sizes = tuple(sorted(int(s) for s in coll.groupby("pg")["group_size"].max()))
    return n, sizes


@dataclass
class RankChanges:
    matched: bool  # ranks compared one to one
    why_not: str  # why not, when not
    rows: pd.DataFrame  # per rank (matched) or per quantile (distributions)
    became: list[int] = field(default_factory=list)
    stopped: list[int] = field(default_factory=list)
    still: list[int] = field(default_factory=list)
    only_a: list[int] = field(default_factory=list)
    only_b: list[int] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        from scope.result import records

        return {
            "matched": self.matched,
            "why_not": self.why_not,
            "rows": records(self.rows),
            "became_stragglers": self.became,
            "stopped_being_stragglers": self.stopped,
            "still_stragglers": self.still,
            "only_in_a": self.only_a,
            "only_in_b": self.only_b,
        }


def _few(ranks: set[int]) -> str:
    shown = sorted(int(r) for r in ranks)
    return ", ".join(map(str, shown[:6])) + (f", ... ({len(shown)} in all)" if len(shown) > 6 else "")


def _per_rank(budget: Budget) -> pd.DataFrame:
    """Per rank: the median step and the mean of each bucket."""
    if budget.rows.empty:
        return pd.DataFrame(columns=["step_us", *budget.buckets])
    g = budget.rows.groupby("rank")
    out = g[budget.buckets].mean() if budget.buckets else pd.DataFrame(index=g.size().index)
    out.insert(0, "step_us", g["step_us"].median())
    return out


def compare_ranks(a: Analysis, b: Analysis, ba: Budget, bb: Budget) -> RankChanges:
    pa, pb = _per_rank(ba), _per_rank(bb)
    sa, sb = straggler_ranks(a), straggler_ranks(b)
    ranks_a, ranks_b = set(pa.index), set(pb.index)
    la, lb = layout(a), layout(b)
    why = ""
    if ranks_a != ranks_b and len(ranks_a) == len(ranks_b):
        why = f"A and B traced different ranks (A {_few(ranks_a)}, B {_few(ranks_b)})"
    elif ranks_a != ranks_b:
        why = f"A traced {len(ranks_a)} ranks, B {len(ranks_b)}"
    elif la[1] != lb[1]:
        why = f"the process groups differ (group sizes A {list(la[1])}, B {list(lb[1])})"
    if why:
        return RankChanges(
            False,
            why + ": ranks are compared as distributions",
            _distributions(pa, pb),
            only_a=sorted(int(r) for r in ranks_a - ranks_b),
            only_b=sorted(int(r) for r in ranks_b - ranks_a),
        )
    rows = _matched_rows(pa, pb, {**ba.labels, **bb.labels})
    rows["straggler_a"] = rows["rank"].isin(list(sa))
    rows["straggler_b"] = rows["rank"].isin(list(sb))
    return RankChanges(
        True,
        "",
        rows,
        became=sorted(set(sb) - set(sa)),
        stopped=sorted(set(sa) - set(sb)),
        still=sorted(set(sa) & set(sb)),
    )


def _matched_rows(pa: pd.DataFrame, pb: pd.DataFrame, labels: dict[str, str]) -> pd.DataFrame:
    """Per rank: step and bucket changes, and each change relative to the ranks' median change (what
    is this rank's own, once what moved every rank, a busier machine or a new library, is taken out).
    Vectorized: a 1,024-rank run is 1,024 rows."""
    ranks = sorted(set(pa.index) & set(pb.index))
    buckets = list(labels)
    delta = pb.reindex(index=ranks, columns=buckets).fillna(0.0) - pa.reindex(index=ranks, columns=buckets).fillna(0.0)
    relative = delta - delta.median() if len(ranks) > 1 else delta * np.nan  # one rank: no others
    out = pd.DataFrame(
        {
            "rank": np.asarray(ranks, dtype=int),
            "a_step_us": pa.loc[ranks, "step_us"].to_numpy(dtype=float),
            "b_step_us": pb.loc[ranks, "step_us"].to_numpy(dtype=float),
        }
    )
    out["delta_us"] = out["b_step_us"] - out["a_step_us"]
    out["largest_change"], out["largest_change_us"] = _largest(delta, labels)
    # beside its peers, what a rank spends more time on is its own cause (a straggler's compute); what it
    # spends less on is mostly the consequence (it waits less for the others)
    out["largest_own_change"], out["largest_own_change_us"] = _largest(relative, labels, grew=True)
    for c in buckets:
        out[f"delta_{c}"] = delta[c].to_numpy()
    for c in buckets:
        out[f"own_{c}"] = relative[c].to_numpy()
    return out


def _largest(values: pd.DataFrame, labels: dict[str, str], grew: bool = False) -> tuple[list[str], np.ndarray]:
    """Per row: the label of the column with the largest absolute value (grew: the largest value), and
    that value."""
    if values.empty or values.shape[1] == 0 or values.isna().all().all():
        return [""] * len(values), np.full(len(values), np.nan)
    arr = values.to_numpy(dtype=float)
    filled = np.nan_to_num(arr, nan=0.0)
    idx = np.argmax(filled if grew else np.abs(filled), axis=1)
    cols = [labels[values.columns[i]] for i in idx]
    return cols, arr[np.arange(len(arr)), idx]


def _distributions(pa: pd.DataFrame, pb: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for name, q in QUANTILES.items():
        a = float(pa["step_us"].quantile(q)) if not pa.empty else np.nan
        b = float(pb["step_us"].quantile(q)) if not pb.empty else np.nan
        rows.append({"quantile": name, "a_step_us": a, "b_step_us": b, "delta_us": b - a})
    return pd.DataFrame(rows)
