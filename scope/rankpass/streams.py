"""comm_streams' rows for one rank (analyzers/comm_streams.py says what they hold). The per-rank pass
makes them (scope/rankpass/tables/comm_streams.py)."""

from __future__ import annotations

from dataclasses import dataclass

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


def stream_rows(rank: int, comm: Kernels, busy: iv.Spans) -> pd.DataFrame:
    """One row per stream of `comm` (GPU communication kernels), overlap against `busy` (the union of the
    compute kernels)."""
    if comm.stream.size == 0:
        return pd.DataFrame(columns=COLUMNS)
    rows = []
    compute_us = iv.total(busy) / 1e3
    for stream in np.unique(comm.stream):
        mine = comm.stream == stream
        spans = iv.union(comm.ts[mine], comm.end[mine])
        total = iv.total(spans)
        under = iv.total(iv.intersect(spans, busy))
        ops, counts = np.unique(comm.ops[mine], return_counts=True)
        rows.append(
            {
                "rank": rank,
                "stream": int(stream),
                "kernels": int(mine.sum()),
                "ops": ",".join(f"{op}:{n}" for op, n in zip(ops, counts, strict=True)),
                "comm_us": total / 1e3,
                "overlapped_us": under / 1e3,
                "exposed_us": (total - under) / 1e3,
                "overlap_pct": 100.0 * under / total if total else 0.0,
                "compute_us": compute_us,
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


@dataclass
class Kernels:
    """Communication kernels as arrays: stream, start, end, and the collective each runs ('unknown' where
    the trace does not say)."""

    stream: np.ndarray
    ts: np.ndarray
    end: np.ndarray
    ops: np.ndarray  # object array of str
