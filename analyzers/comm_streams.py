"""Communication-compute overlap per GPU stream: on which streams communication runs and how much of
it hides under computation on the other streams.

Expert-parallel training (DeepEP's dispatch/combine under DualPipe), userbuffers' comm-GEMM overlap
and NCCL on its own stream all put communication kernels on streams beside the GEMMs. The breakdown
(scope/rankpass/timeline.py) says how much of a rank's communication is overlapped in all; this table
says it per stream, with the ops and the families (NCCL, catalog, user rule) of its kernels.

Table `comm_streams`, one row per (rank, stream) that ran communication kernels: kernels, ops,
comm_us (union of its communication kernels), overlapped_us (the part under compute kernels of any
stream), exposed_us (the rest), overlap_pct, and the rank's compute_us over the same trace.
"""

from __future__ import annotations

from scope.analysis import Context, Result
from scope.rankpass.streams import COLUMNS as COLUMNS  # re-exported: the table's columns


def analyze(ctx: Context) -> Result:
    if ctx.store is None or not ctx.store.ranks:
        return Result()

    table = ctx.table("comm_streams")  # the per-rank pass makes these rows (scope/rankpass)
    if table.empty:
        return Result()
    return Result(tables={"comm_streams": table[COLUMNS]})
