"""rank, step, flops: the FLOPs the trace records per profiled step (operators profiled with
with_flops=True), for the mfu analyzer."""

from __future__ import annotations

import pandas as pd

from scope.rankpass.spec import RankTable
from scope.rankpass.view import RankView


def make(view: RankView) -> pd.DataFrame | None:
    step, flops = view.columns.raw("step"), view.columns.raw("flops")
    counted_rows = (flops > 0) & (step >= 0)
    if not counted_rows.any():
        return None
    # the few counted events only, summed as pandas sums (compensated: a plain sum differs in the last bits)
    counted = pd.DataFrame({"step": step[counted_rows], "flops": flops[counted_rows]})
    per_step = counted.groupby("step")["flops"].sum()
    return per_step.rename("flops").reset_index().assign(rank=view.rank)


TABLE = RankTable(name="trace_flops", make=make, events=("step", "flops"), order=("rank", "step"))
