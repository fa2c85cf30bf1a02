"""The step time budget per rank: one horizontal bar per rank, its profiled step time split by cause
(the `budget` table of analyzers/budget/analyze.py; the segments of a bar add to 100%)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from scope.app.figures import BASE_LAYOUT, empty_figure

# bucket -> (label, colour), in the order the segments are stacked (scope/rankpass/budget.py BUCKETS).
BUCKET_STYLE: dict[str, tuple[str, str]] = {
    "compute": ("compute", "#4C78A8"),
    "comm_overlapped": ("comm overlapped", "#9ECAE9"),
    "optimizer": ("optimizer", "#72B7B2"),
    "comm_wait": ("comm: waiting for a peer", "#E45756"),
    "comm_unknown": ("comm: wait/transfer unknown", "#FF9DA6"),
    "comm_transfer": ("comm: transfer", "#F58518"),
    "input": ("input pipeline", "#B279A2"),
    "checkpoint": ("checkpoint", "#9D755D"),
    "memcpy": ("copies", "#54A24B"),
    "sync": ("sync points", "#EECA3B"),
    "gc": ("gc", "#BAB0AC"),
    "host_bound": ("host-bound (GPU idle, CPU launching)", "#D67195"),
    "unexplained": ("unexplained", "#C8C8C8"),
}


def budget_shares(table: pd.DataFrame) -> pd.DataFrame:
    """Ranks x buckets: percent of each rank's profiled step time (rows add to 100)."""
    if table is None or table.empty or not {"rank", "step", "bucket", "us", "step_us"} <= set(table.columns):
        return pd.DataFrame()
    steps = table.drop_duplicates(["rank", "step"]).groupby("rank")["step_us"].sum()
    us = table.pivot_table(index="rank", columns="bucket", values="us", aggfunc="sum", fill_value=0.0)
    shares = 100.0 * us.div(steps.where(steps > 0), axis=0).fillna(0.0)
    return shares.reindex(columns=[b for b in BUCKET_STYLE if b in shares.columns]).sort_index()


def budget_figure(table: pd.DataFrame | None) -> go.Figure:
    shares = budget_shares(table) if table is not None else pd.DataFrame()
    if shares.empty:
        return empty_figure("no step time budget (the budget analyzer has not run on this store)")
    labels = [f"rank {int(r)}" for r in shares.index]
    fig = go.Figure()
    for bucket in shares.columns:
        name, colour = BUCKET_STYLE[bucket]
        fig.add_bar(
            y=labels,
            x=shares[bucket],
            orientation="h",
            name=name,
            marker_color=colour,
            hovertemplate=f"%{{y}}: {name} %{{x:.1f}}% of step time<extra></extra>",
        )
    fig.update_layout(
        **BASE_LAYOUT,
        barmode="stack",
        title="Where each rank's step time went (% of profiled step time)",
        height=max(220, 60 + 26 * len(labels)),
        legend={"orientation": "h", "y": -0.2, "traceorder": "normal"},
    )
    fig.update_xaxes(range=[0, 100], ticksuffix="%")
    fig.update_yaxes(autorange="reversed", type="category")
    return fig
