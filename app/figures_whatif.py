"""The DP x PP heat-map of a what-if analysis: one cell per worker (DP rank, pipeline stage)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from scope.app.figures import BASE_LAYOUT, empty_figure


def dp_pp_matrix(workers: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """Stages (rows) x DP ranks (columns) of S_w, or of the excess time where S_w was not replayed."""
    if workers is None or workers.empty or not {"dp_rank", "stage"} <= set(workers.columns):
        return pd.DataFrame(), ""
    value = "slowdown" if workers["slowdown"].notna().all() else "excess_s"
    matrix = workers.pivot_table(index="stage", columns="dp_rank", values=value, aggfunc="max")
    return matrix.sort_index().sort_index(axis=1), value


def dp_pp_figure(workers: pd.DataFrame) -> go.Figure:
    matrix, value = dp_pp_matrix(workers)
    if matrix.empty:
        return empty_figure("no what-if analysis of an operation-level timeline")
    label = "S_w (only this worker as traced)" if value == "slowdown" else "excess s/step over ideal"
    heat = go.Heatmap(
        z=np.round(matrix.to_numpy(dtype=float), 4),
        x=[int(c) for c in matrix.columns],
        y=[int(r) for r in matrix.index],
        colorscale="YlOrRd",
        colorbar={"title": {"text": "S_w" if value == "slowdown" else "s"}},
        hovertemplate="DP rank %{x}<br>stage %{y}<br>" + label + ": %{z:.3f}<extra></extra>",
    )
    fig = go.Figure(heat)
    fig.update_layout(
        **BASE_LAYOUT,
        title={"text": f"{label} per DP rank and pipeline stage"},
        height=max(260, 40 * len(matrix.index) + 140),
        xaxis={"title": "DP rank", "dtick": 1 if len(matrix.columns) <= 32 else None},
        yaxis={"title": "stage", "dtick": 1, "autorange": "reversed"},
    )
    return fig
