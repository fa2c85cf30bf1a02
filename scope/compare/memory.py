"""The peak memory change between two runs, and where it came from: per rank and device the peak allocated
and reserved (memory_ranks), per step the peak of the step that changed most (memory_steps), and, where
both runs have allocator snapshots, the peak's sites that grew or shrank (memory_peak_sites)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from scope.result import Analysis

TOP_SITES = 8


@dataclass
class MemoryChanges:
    rows: pd.DataFrame = field(default_factory=pd.DataFrame)  # rank, device, a/b peak allocated and reserved
    sites: pd.DataFrame = field(default_factory=pd.DataFrame)  # site, a_bytes, b_bytes, change_bytes
    peak_a: int = -1  # the job's highest peak allocated (any rank, the GPU where there is one)
    peak_b: int = -1

    def to_dict(self) -> dict[str, Any]:
        return {
            "peak_allocated_a": self.peak_a,
            "peak_allocated_b": self.peak_b,
            "change_bytes": self.peak_b - self.peak_a if self.peak_a >= 0 and self.peak_b >= 0 else None,
            "ranks": self.rows.to_dict("records"),
            "sites": self.sites.to_dict("records"),
        }


def _peaks(analysis: Analysis) -> pd.DataFrame:
    table = analysis.table("memory_ranks")
    if table is None:
        return pd.DataFrame(columns=["rank", "device", "peak_allocated", "peak_reserved"])
    gpu = table[table["device"] != "cpu"]
    return (gpu if not gpu.empty else table)[["rank", "device", "peak_allocated", "peak_reserved"]]


def compare_memory(a: Analysis, b: Analysis) -> MemoryChanges:
    pa, pb = _peaks(a), _peaks(b)
    out = MemoryChanges()
    if pa.empty and pb.empty:
        return out
    out.peak_a = int(pa["peak_allocated"].max()) if not pa.empty else -1
    out.peak_b = int(pb["peak_allocated"].max()) if not pb.empty else -1
    rows = pa.merge(pb, on=["rank", "device"], how="outer", suffixes=("_a", "_b"))
    rows["change_bytes"] = rows["peak_allocated_b"] - rows["peak_allocated_a"]
    out.rows = rows.sort_values("change_bytes", key=lambda s: -s.abs().fillna(0)).reset_index(drop=True)
    out.sites = _site_changes(a, b)
    return out


def _site_changes(a: Analysis, b: Analysis) -> pd.DataFrame:
    """The snapshots' peak sites summed over ranks, the largest changes first."""
    sa, sb = a.table("memory_peak_sites"), b.table("memory_peak_sites")
    if sa is None or sb is None:
        return pd.DataFrame(columns=["site", "a_bytes", "b_bytes", "change_bytes"])
    ga = sa.groupby("site")["bytes"].sum().rename("a_bytes")
    gb = sb.groupby("site")["bytes"].sum().rename("b_bytes")
    both = pd.concat([ga, gb], axis=1).fillna(0).astype("int64")
    both["change_bytes"] = both["b_bytes"] - both["a_bytes"]
    both = both[both["change_bytes"] != 0].sort_values("change_bytes", key=lambda s: -s.abs())
    return both.head(TOP_SITES).reset_index().rename(columns={"index": "site"})
