"""Communication-compute overlap per GPU stream: on which streams communication runs and how much of
it hides under computation on the other streams.

Expert-parallel training (DeepEP's dispatch/combine under DualPipe), userbuffers' comm-GEMM overlap
and NCCL on its own stream all put communication kernels on streams beside the GEMMs. The breakdown
(analyzers/_timeline.py) says how much of a rank's communication is overlapped in all; this table
says it per stream, with the ops and the families (NCCL, catalog, user rule) of its kernels.

Table `comm_streams`, one row per (rank, stream) that ran communication kernels: kernels, ops,
comm_us (union of its communication kernels), overlapped_us (the part under compute kernels of any
stream), exposed_us (the rest), overlap_pct, and the rank's compute_us over the same trace.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scope.analyzers import _intervals as iv

from scope.analysis import Context, Result

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
_EVENT_COLUMNS = ["kind", "ts_ns", "dur_ns", "stream", "coll_op", "device"]


def analyze(ctx: Context) -> Result:
    if ctx.store is None or not ctx.store.ranks:
        return Result()
    from scope.analyzers import _shared  # its pass over each rank's events makes these rows (_rank_tables.py)

    table = _shared.comm_streams(ctx)
    if table.empty:
        return Result()
    return Result(tables={"comm_streams": table[COLUMNS]})


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
