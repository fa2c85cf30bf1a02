"""Collectives matched between two runs by (process group role, op, size): bandwidth and skew change.

A process group's role is what survives a change of layout: the group of all traced ranks, or a
group of N ranks (the same model on another cluster keeps its tensor-parallel group of 8 even when
the data-parallel group grows). Within a run each key's instances are summarized by medians (bus
bandwidth, transfer time, arrival skew) and counted per step.

Bandwidth means something only where bytes dominate the time: below MIN_BYTES (64 KiB) a collective's
time is latency, and it is compared by transfer time alone (no bandwidth verdict).
Two bandwidths per key: the transfer's (bytes over the transfer time, the fastest rank's duration:
what the link delivered) and the group's effective one (bytes over first arrival to last completion:
what the job got, late arrivals included). A key lost bandwidth when B's median effective bus bandwidth
is below LOST x A's and below A's lower quartile (a shift beyond A's own instance-to-instance spread),
and what its instances cost per step (first arrival to last completion) grew by more than the step's
noise, alone or with the keys that lost bandwidth with it (a loss nobody feels in the step is not
reported); the `cause` names the larger part of the change: the transfer itself (the fastest rank's
duration) or the arrivals' spread (and who came last).
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
    "a_eff_busbw_gbps",
    "b_eff_busbw_gbps",
    "eff_busbw_ratio",
    "a_transfer_us",
    "b_transfer_us",
    "a_skew_us",
    "b_skew_us",
    "delta_skew_us",
    "delta_cost_per_step_us",
    "lost_bandwidth",
    "gained_bandwidth",
    "b_last_arriver",
    "cause",
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
    span_us = (coll["end_ns"] - coll["start_ns"]) / 1e3 if {"start_ns", "end_ns"} <= set(coll.columns) else np.nan
    eff = coll["busbw_gbps"] * coll["transfer_us"] / span_us
    last = coll["last_arriver"] if "last_arriver" in coll.columns else np.nan
    return coll.assign(role=role, eff_busbw_gbps=eff, last=last, span_us=span_us)


def _summary(inst: pd.DataFrame) -> pd.DataFrame:
    if inst.empty:
        return pd.DataFrame(
            columns=["per_step", "busbw_gbps", "eff", "span_us", "eff_p25", "transfer_us", "skew_us", "last"]
        )
    steps = max(1, inst["step"].nunique())
    g = inst.groupby(KEY)
    return pd.DataFrame(
        {
            "per_step": g.size() / steps,
            "busbw_gbps": g["busbw_gbps"].median(),
            "eff": g["eff_busbw_gbps"].median(),
            "span_us": g["span_us"].median(),
            "eff_p25": g["eff_busbw_gbps"].quantile(0.25),
            "transfer_us": g["transfer_us"].median(),
            "skew_us": g["skew_us"].median(),
            "last": g["last"].agg(_mode),
        }
    )


def _mode(values: pd.Series) -> float:
    values = values.dropna()
    return float(values.mode().iloc[0]) if not values.empty else np.nan


def compare_collectives(a: Analysis, b: Analysis, noise_us: float = 0.0) -> CollectiveChanges:
    """`noise_us`: the step's noise (compare/budget.py); a bandwidth change whose cost per step stays
    inside it is not reported as a loss or a gain."""
    sa, sb = _summary(_instances(a)), _summary(_instances(b))
    both = sa.index.intersection(sb.index)
    rows = []
    for key in both:
        rows.append(_compare_key(key, sa.loc[key], sb.loc[key]))
    out = pd.DataFrame(rows, columns=COLUMNS)
    if not out.empty:
        _keep_felt(out, noise_us)
        out = out.sort_values("eff_busbw_ratio").reset_index(drop=True)
    return CollectiveChanges(out, _only(sa, both), _only(sb, both))


def _keep_felt(rows: pd.DataFrame, noise_us: float) -> None:
    """A bandwidth shift is reported where the step can feel it: its key's cost per step moved by more
    than the step's noise, or the keys that shifted the same way moved it by more together (a slowed link
    slows every bucket of the gradient all-reduce, each by less than the noise of a busy host, the step
    by the sum: seen in a real 4-rank run, two keys +99 and +67 ms against a noise of 117 ms)."""
    cost = rows["delta_cost_per_step_us"]
    own = ~np.isfinite(cost) | (cost.abs() > noise_us)
    for flag, sign in (("lost_bandwidth", 1.0), ("gained_bandwidth", -1.0)):
        shifted = rows[flag]
        together = sign * cost[shifted].sum() > noise_us
        rows[flag] = shifted & (own | together)
    rows.loc[~(rows["lost_bandwidth"] | rows["gained_bandwidth"]), "cause"] = ""


def _ratio(b: float, a: float) -> float:
    return float(b / a) if a and np.isfinite(a) and np.isfinite(b) else np.nan


def _compare_key(key: tuple[Any, ...], x: pd.Series, y: pd.Series) -> dict[str, Any]:
    big = int(key[2]) >= MIN_BYTES
    ratio, eff_ratio = _ratio(y["busbw_gbps"], x["busbw_gbps"]), _ratio(y["eff"], x["eff"])
    # what the key's instances cost per step, first arrival to last completion, A -> B
    cost = float(y["per_step"] * y["span_us"] - x["per_step"] * x["span_us"])
    # shifted beyond A's own spread; whether the step feels it is decided over every key (_keep_felt)
    lost = bool(big and eff_ratio < LOST and y["eff"] < x["eff_p25"])
    gained = bool(big and eff_ratio > 1 / LOST and y["eff_p25"] > x["eff"])
    return {
        **dict(zip(KEY, key, strict=True)),
        "a_per_step": float(x["per_step"]),
        "b_per_step": float(y["per_step"]),
        "a_busbw_gbps": float(x["busbw_gbps"]),
        "b_busbw_gbps": float(y["busbw_gbps"]),
        "busbw_ratio": ratio,
        "a_eff_busbw_gbps": float(x["eff"]),
        "b_eff_busbw_gbps": float(y["eff"]),
        "eff_busbw_ratio": eff_ratio,
        "a_transfer_us": float(x["transfer_us"]),
        "b_transfer_us": float(y["transfer_us"]),
        "a_skew_us": float(x["skew_us"]),
        "b_skew_us": float(y["skew_us"]),
        "delta_skew_us": float(y["skew_us"] - x["skew_us"]),
        "delta_cost_per_step_us": cost,
        "lost_bandwidth": lost,
        "gained_bandwidth": gained,
        "b_last_arriver": y["last"],
        "cause": _cause(lost, gained, ratio, x, y),
    }


def _cause(lost: bool, gained: bool, ratio: float, x: pd.Series, y: pd.Series) -> str:
    """Why the effective bandwidth moved: the larger of the two parts of an instance's span, the
    transfer (the fastest rank's duration) or the arrivals' spread (skew), and who arrived last."""
    if not lost and not gained:
        return ""
    d_skew = float(y["skew_us"] - x["skew_us"])
    d_transfer = float(y["transfer_us"] - x["transfer_us"])
    if abs(d_transfer) >= abs(d_skew):
        return f"the transfer itself {'slowed' if d_transfer > 0 else 'sped up'} (transfer bandwidth x{ratio:.2f})"
    last = "" if not np.isfinite(y["last"]) else f"; rank {int(y['last'])} arrives last most often"
    return f"arrivals {'further apart' if d_skew > 0 else 'closer'} (skew {d_skew / 1e3:+,.1f} ms{last})"


def _only(summary: pd.DataFrame, both: pd.Index) -> pd.DataFrame:
    left = summary.drop(index=both)
    return left.reset_index()[[*KEY, "per_step", "busbw_gbps"]] if not left.empty else pd.DataFrame(columns=KEY)
