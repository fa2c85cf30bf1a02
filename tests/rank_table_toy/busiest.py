"""Toy analyzer: the rank that records the most events per step, read from the toy per-rank table."""

from __future__ import annotations

from scope.analysis import Context, Result
from scope.analyzer_spec import AnalyzerSpec


def analyze(ctx: Context) -> Result:
    table = ctx.table("events_per_step")
    per_rank = table.groupby("rank", as_index=False)["events"].mean().sort_values(["events", "rank"])
    return Result(tables={"busiest_rank": per_rank.tail(1).reset_index(drop=True)})


ANALYZER = AnalyzerSpec(
    name="busiest",
    analyze="tests.rank_table_toy.busiest:analyze",
    reads=("events_per_step",),
    tables=("busiest_rank",),
)
