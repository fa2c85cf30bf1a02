"""comm_streams' rows for one rank (analyzers/comm_streams.py says what they hold). Apart from the
analyzer: the pass over each rank's events (scope/rankpass/rank_tables.py) makes them, and the analysis
imports that pass, so this module must not import the analysis."""

from __future__ import annotations

import numpy as np
import pandas as pd

from scope.rankpass import intervals as iv

COLUMNS = [
    "rank",
    "stream",
    "kernels",
    "ops",
    "comm_us",
    "overlapped_us",
    "exposed_us",
    "overlap_pct",
    "compute_us",
]


def stream_rows(rank: int, comm: pd.DataFrame, compute: pd.DataFrame) -> pd.DataFrame:
    """One row per stream of `comm` (GPU communication kernels), overlap against `compute` kernels."""
    if comm.empty:
        return pd.DataFrame(columns=COLUMNS)
    busy = _spans(compute)
    rows = []
    for stream, kernels in comm.groupby("stream", sort=True):
        spans = _spans(kernels)
        total = iv.total(spans)
        under = iv.total(iv.intersect(spans, busy))
        ops = kernels["coll_op"].astype(object).fillna("").replace("", "unknown")
        rows.append(
            {
                "rank": rank,
                "stream": int(stream),
                "kernels": len(kernels),
                "ops": ",".join(f"{op}:{n}" for op, n in ops.value_counts().sort_index().items()),
                "comm_us": total / 1e3,
                "overlapped_us": under / 1e3,
                "exposed_us": (total - under) / 1e3,
                "overlap_pct": 100.0 * under / total if total else 0.0,
                "compute_us": iv.total(busy) / 1e3,
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def _spans(df: pd.DataFrame) -> iv.Spans:
    ts = df["ts_ns"].to_numpy(dtype=np.int64)
    return iv.union(ts, ts + df["dur_ns"].to_numpy(dtype=np.int64))
