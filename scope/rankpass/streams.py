"""comm_streams' rows for one rank (analyzers/comm_streams.py says what they hold). The per-rank pass
makes them (scope/rankpass/tables/comm_streams.py)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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


def stream_columns(rank: int, comm: Kernels, busy: iv.Spans) -> dict[str, np.ndarray]:
    """One row per stream of `comm` (GPU communication kernels), overlap against `busy` (the union of the
    compute kernels), as columns (what the per-rank pass sends: a frame per rank costs more than its rows)."""
    streams = iv.distinct(comm.stream)
    kernels, ops, comm_us, under_us = [], [], [], []
    for stream in streams:
        mine = comm.stream == stream
        spans = iv.union(comm.ts[mine], comm.end[mine])
        comm_us.append(iv.total(spans))
        under_us.append(iv.total(iv.intersect(spans, busy)))
        names, counts = np.unique(comm.ops[mine], return_counts=True)
        ops.append(",".join(f"{op}:{n}" for op, n in zip(names, counts, strict=True)))
        kernels.append(int(mine.sum()))
    total = np.array(comm_us, dtype=np.int64)
    under = np.array(under_us, dtype=np.int64)
    n = streams.size
    return {
        "rank": np.full(n, rank, dtype=np.int64),
        "stream": streams.astype(np.int64),
        "kernels": np.array(kernels, dtype=np.int64),
        "ops": np.array(ops, dtype=object),
        "comm_us": total / 1e3,
        "overlapped_us": under / 1e3,
        "exposed_us": (total - under) / 1e3,
        "overlap_pct": np.where(total > 0, 100.0 * under / np.maximum(total, 1), 0.0),
        "compute_us": np.full(n, iv.total(busy) / 1e3),
    }


@dataclass
class Kernels:
    """Communication kernels as arrays: stream, start, end, and the collective each runs ('unknown' where
    the trace does not say)."""

    stream: np.ndarray
    ts: np.ndarray
    end: np.ndarray
    ops: np.ndarray  # object array of str
