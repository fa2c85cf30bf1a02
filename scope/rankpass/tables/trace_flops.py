"""rank, step, flops: the FLOPs the trace records per profiled step (operators profiled with
with_flops=True), for the mfu analyzer."""

from __future__ import annotations

import pandas as pd

from scope.rankpass.spec import RankTable
from scope.rankpass.view import RankView


def make(view: RankView) -> pd.DataFrame:
    events = view.events
    counted_rows = ((events["flops"] > 0) & (events["step"] >= 0)).to_numpy()
    if not counted_rows.any():
        return pd.DataFrame()
    counted = events.loc[counted_rows, ["step", "flops"]]
    per_step = counted.groupby("step")["flops"].sum()
    return per_step.rename("flops").reset_index().assign(rank=view.rank)


TABLE = RankTable(name="trace_flops", make=make, events=("step", "flops"), order=("rank", "step"))
