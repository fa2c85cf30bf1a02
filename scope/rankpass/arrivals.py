"""Who arrives last at collectives, and for how long each rank alone holds its peers up.

Both come from the matched collectives (`scope.rankpass.match`), never from raw events, so they are
cheap at any scale. They are evidence for the straggler analyzer that does not depend on how busy
the other ranks look: on CPU ranks sharing a host's cores, a straggler's peers compute slower while
it works (and it faster while they wait), which shrinks its compute ratio and the replayed loss,
but not the time the others spend waiting for it alone.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from scope.rankpass.match import Matched

ARRIVAL_COLUMNS = ["rank", "collectives", "last_count", "last_share", "late_median_us"]
HELD_UP_COLUMNS = ["rank", "step", "held_up_us"]
LAG_COLUMNS = ["rank", "step", "lag_us"]


def _group_collectives(matched: Matched) -> pd.DataFrame:
    """Per (instance, rank) rows of the collectives with two or more ranks (not p2p), with the step."""
    inst = matched.instances
    if matched.per_rank.empty or inst.empty:
        return pd.DataFrame(columns=[*matched.per_rank.columns, "step"])
    multi = inst.loc[~inst["p2p"].astype(bool) & (inst["n_ranks"] > 1), ["pg", "seq", "step"]]
    return matched.per_rank.merge(multi, on=["pg", "seq"])


def last_arrivals(matched: Matched) -> pd.DataFrame:
    """Per rank: matched collectives it took part in, and how often it arrived last."""
    pr = _group_collectives(matched)
    if pr.empty:
        return pd.DataFrame(columns=ARRIVAL_COLUMNS)
    g = pr.groupby("rank")
    out = pd.DataFrame(
        {"collectives": g.size(), "last_count": g["is_last"].sum(), "late_median_us": g["late_us"].median()}
    ).reset_index()
    out["last_share"] = out["last_count"] / out["collectives"].where(out["collectives"] > 0)
    return out[ARRIVAL_COLUMNS]


def held_up(matched: Matched) -> pd.DataFrame:
    """Per rank and step: the time this rank alone kept its peers waiting, summed over the step's
    collectives: at each one, the last arriver's start minus the second-to-last arriver's start
    (had it arrived with the second-to-last, nobody would have waited that long). Ranks that held
    nobody up in a step get 0 there."""
    pr = _group_collectives(matched)
    if pr.empty:
        return pd.DataFrame(columns=HELD_UP_COLUMNS)
    pr = pr.sort_values(["pg", "seq", "start_ns"], kind="stable")
    starts = pr["start_ns"].to_numpy(dtype=np.int64)
    same = (pr[["pg", "seq"]].shift(1) == pr[["pg", "seq"]]).all(axis=1).to_numpy()
    gap = np.where(same, starts - np.roll(starts, 1), 0)
    is_latest = ~(pr[["pg", "seq"]].shift(-1) == pr[["pg", "seq"]]).all(axis=1).to_numpy()
    pr = pr.assign(held_up_us=np.where(is_latest, gap, 0) / 1e3)
    steps = pr.dropna(subset=["step"]).astype({"step": int})
    out = steps.groupby(["rank", "step"], as_index=False)["held_up_us"].sum()
    return out[HELD_UP_COLUMNS]


def arrival_lag(matched: Matched) -> pd.DataFrame:
    """Per rank and step: how far behind the other ranks' median arrival this rank started, summed
    over the step's collectives (0 where it was early). Unlike `held_up`, several slow ranks (all
    the ranks of one slow host) each keep their own lag."""
    pr = _group_collectives(matched)
    if pr.empty:
        return pd.DataFrame(columns=LAG_COLUMNS)
    lags = []
    for _, g in pr.groupby(["pg", "seq"], sort=False):
        starts = g["start_ns"].to_numpy(dtype=np.int64)
        n = len(starts)
        ordered = np.sort(starts)
        # leave-one-out median: drop this rank's own start from the sorted list
        pos = np.searchsorted(ordered, starts)
        rest = np.array([np.median(np.delete(ordered, k)) for k in pos]) if n <= 64 else np.full(n, np.median(ordered))
        lags.append(
            pd.DataFrame(
                {
                    "rank": g["rank"].to_numpy(),
                    "step": g["step"].to_numpy(),
                    "lag_us": np.clip(starts - rest, 0, None) / 1e3,
                }
            )
        )
    out = pd.concat(lags, ignore_index=True).dropna(subset=["step"]).astype({"step": int})
    return out.groupby(["rank", "step"], as_index=False)["lag_us"].sum()[LAG_COLUMNS]
