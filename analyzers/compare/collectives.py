"""Collectives matched between two runs by (process group role, op, size): bandwidth and skew change.

A process group's role is what survives a change of layout: the group of all traced ranks, or a
group of N ranks (the same model on another cluster keeps its tensor-parallel group of 8 even when
the data-parallel group grows). Within a run each key's instances are summarized by medians (bus
bandwidth, transfer time, arrival skew) and counted per step.

Bandwidth means something only where bytes dominate the time: below MIN_BYTES (64 KiB) a collective's
time is latency, and it is compared by transfer time alone (no bandwidth verdict).
A key lost bandwidth when B's median bus bandwidth is below LOST x A's and below the slowest half of
A's instances (A's lower quartile): a shift beyond A's own instance-to-instance spread.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from scope.result import Analysis

LOST = 0.8
MIN_BYTES = 64 * 1024
KEY = ["role", "op", "bytes"]
COLUMNS = [
    *KEY,
    "a_per_step",
    "b_per_step",
    "a_busbw_gbps",
    "b_busbw_gbps",
    "busbw_ratio",
    "a_transfer_us",
    "b_transfer_us",
    "a_skew_us",
    "b_skew_us",
    "delta_skew_us",
    "lost_bandwidth",
    "gained_bandwidth",
]


@dataclass
class CollectiveChanges:
    rows: pd.DataFrame  # matched keys, largest bandwidth loss first
    only_a: pd.DataFrame
    only_b: pd.DataFrame

    @property
    def lost(self) -> pd.DataFrame:
        return self.rows[self.rows["lost_bandwidth"]] if not self.rows.empty else self.rows

    def to_dict(self) -> dict[str, Any]:
        from scope.result import records

        return {"matched": records(self.rows), "only_in_a": records(self.only_a), "only_in_b": records(self.only_b)}


def _instances(analysis: Analysis) -> pd.DataFrame:
    coll = analysis.table("collectives")
    need = {"op", "bytes", "group_size", "step", "busbw_gbps", "transfer_us", "skew_us"}
    if coll is None or not need <= set(coll.columns):
        return pd.DataFrame(columns=[*KEY, "step", "busbw_gbps", "transfer_us", "skew_us"])
    coll = coll[coll["step"] >= 0]
    if "p2p" in coll.columns:
        coll = coll[~coll["p2p"].astype(bool)]
    world = int(coll["group_size"].max()) if not coll.empty else 0
    role = np.where(coll["group_size"] >= world, "all ranks", coll["group_size"].astype(str) + "-rank group")
    return coll.assign(role=role)


def _summary(inst: pd.DataFrame) -> pd.DataFrame:
    if inst.empty:
        return pd.DataFrame(columns=["per_step", "busbw_gbps", "busbw_p25", "transfer_us", "skew_us"])
    steps = max(1, inst["step"].nunique())
    g = inst.groupby(KEY)
    return pd.DataFrame(
        {
            "per_step": g.size() / steps,
            "busbw_gbps": g["busbw_gbps"].median(),
            "busbw_p25": g["busbw_gbps"].quantile(0.25),
            "transfer_us": g["transfer_us"].median(),
            "skew_us": g["skew_us"].median(),
        }
    )


def compare_collectives(a: Analysis, b: Analysis) -> CollectiveChanges:
    sa, sb = _summary(_instances(a)), _summary(_instances(b))
    both = sa.index.intersection(sb.index)
    rows = []
    for key in both:
        x, y = sa.loc[key], sb.loc[key]
        ratio = float(y["busbw_gbps"] / x["busbw_gbps"]) if x["busbw_gbps"] else np.nan
        big = int(key[2]) >= MIN_BYTES
        rows.append(
            {
                **dict(zip(KEY, key, strict=True)),
                "a_per_step": float(x["per_step"]),
                "b_per_step": float(y["per_step"]),
                "a_busbw_gbps": float(x["busbw_gbps"]),
                "b_busbw_gbps": float(y["busbw_gbps"]),
                "busbw_ratio": ratio,
                "a_transfer_us": float(x["transfer_us"]),
                "b_transfer_us": float(y["transfer_us"]),
                "a_skew_us": float(x["skew_us"]),
                "b_skew_us": float(y["skew_us"]),
                "delta_skew_us": float(y["skew_us"] - x["skew_us"]),
                "lost_bandwidth": bool(big and ratio < LOST and y["busbw_gbps"] < x["busbw_p25"]),
                "gained_bandwidth": bool(big and ratio > 1 / LOST and sb.loc[key, "busbw_p25"] > x["busbw_gbps"]),
            }
        )
    out = pd.DataFrame(rows, columns=COLUMNS)
    if not out.empty:
        out = out.sort_values("busbw_ratio").reset_index(drop=True)
    return CollectiveChanges(out, _only(sa, both), _only(sb, both))


def _only(summary: pd.DataFrame, both: pd.Index) -> pd.DataFrame:
    left = summary.drop(index=both)
    return left.reset_index()[[*KEY, "per_step", "busbw_gbps"]] if not left.empty else pd.DataFrame(columns=KEY)
