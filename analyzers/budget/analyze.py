"""Step time budget: per rank and step, where every microsecond of the step went, by cause.

Table `budget` (`scope analyze --table budget`; store/tables/budget.parquet), long format, one row
per (rank, step, bucket, family, peer) with time in it:

    rank      int    the rank
    step      int    ProfilerStep number (-1: the trace has no steps; one window over the whole trace)
    timeline  str    gpu (read from the GPU's side) | cpu (gloo/CPU ranks: the training thread's side)
    bucket    str    one of BUCKETS (scope/rankpass/budget.py), listed there in order of precedence
    family    str    communication buckets: nccl | gloo | torch_symm_mem | custom_all_reduce | deep_ep |
                     nvshmem ... (scope.ingest.comm_kernels) | user (a --comm-kernel rule); else ''
    peer      int    comm_wait: the rank waited for (the collective's last arriver); else -1
    us        float  time in this bucket in this step (microseconds)
    step_us   float  the step's wall time on this rank (the ProfilerStep window)
    share     float  us / step_us

Identity (tested on every trace of ../shared/data and sample_traces): for each (rank, step), the sum
of `us` over its rows is `step_us`. Every nanosecond of the step window goes to exactly one bucket:
the first bucket, in the precedence of scope/rankpass/budget.py, whose spans cover it; `unexplained` is
what none covers. `comm_overlapped` is communication hidden under compute (no loss); `comm_wait` is
the part of exposed communication spent waiting for a later peer, `comm_transfer` the rest, and
`comm_unknown` exposed communication whose group was only partly traced (no split possible).
The findings built on the budget (input_bound, host_bound, sync_bound, checkpoint_stall, unexplained
step time) and their norms are in analyzers/budget/findings.py.
"""

from __future__ import annotations

import pandas as pd

from scope.analysis import Context, Result
from scope.rankpass.budget import BUCKETS


def per_rank(table: pd.DataFrame) -> pd.DataFrame:
    """Share of all profiled step time per rank and bucket (columns in BUCKETS order; rows add to 1)."""
    if table.empty:
        return pd.DataFrame(columns=list(BUCKETS))
    steps = table.drop_duplicates(["rank", "step"]).groupby("rank")["step_us"].sum()
    us = table.pivot_table(index="rank", columns="bucket", values="us", aggfunc="sum", fill_value=0.0)
    shares = us.div(steps, axis=0).fillna(0.0)
    return shares.reindex(columns=[b for b in BUCKETS if b in shares.columns])


def analyze(ctx: Context) -> Result:
    if ctx.store is None:
        return Result()
    table = ctx.table("budget")
    if table.empty:
        return Result()
    from scope.analyzers.budget.findings import find

    evidence = ctx.table("budget_evidence")
    return Result(findings=find(ctx, table, evidence), tables={"budget": table, "budget_evidence": evidence})
