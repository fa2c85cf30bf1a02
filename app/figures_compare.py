"""Figures of the compare page, pure: the comparison's JSON (scope compare --json) in, a figure out."""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go
from scope.app.figures import BASE_LAYOUT, empty_figure

MAX_HEATMAP_RANKS = 512


def waterfall_figure(step: dict[str, Any]) -> go.Figure:
    """A's mean step, each bucket's change (largest first), B's mean step: the bars end where B is."""
    buckets = [b for b in step.get("buckets", []) if abs(b["delta_us"]) >= 1.0]
    if not buckets:
        return empty_figure("no step budget in these runs")
    labels = ["A", *(b["label"] for b in buckets), "B"]
    values = [step["a_mean_step_us"] / 1e3, *(b["delta_us"] / 1e3 for b in buckets), step["b_mean_step_us"] / 1e3]
    fig = go.Figure(
        go.Waterfall(
            x=labels,
            y=values,
            measure=["absolute", *["relative"] * len(buckets), "total"],
            text=[f"{v:+.1f}" if 0 < i < len(values) - 1 else f"{v:.1f}" for i, v in enumerate(values)],
            textposition="outside",
            increasing={"marker": {"color": "#E45756"}},
            decreasing={"marker": {"color": "#54A24B"}},
            totals={"marker": {"color": "#4C78A8"}},
            connector={"line": {"color": "#999", "width": 1}},
        )
    )
    low = min(step["a_mean_step_us"], step["b_mean_step_us"]) / 1e3
    fig.update_layout(
        **BASE_LAYOUT,
        title="Mean step A → B: the change by cause (ms; the bars add up to B)",
        yaxis={"title": "ms", "range": [max(0.0, low * 0.5), None]},
        height=380,
        showlegend=False,
    )
    return fig


def rank_change_figure(ranks: dict[str, Any], labels: dict[str, str]) -> go.Figure:
    """Ranks x budget buckets: each rank's change beside the other ranks' median change (ms)."""
    rows = ranks.get("rows") or []
    if not ranks.get("matched") or not rows:
        return empty_figure(ranks.get("why_not") or "no per-rank changes")
    rows = sorted(rows, key=lambda r: r["rank"])[:MAX_HEATMAP_RANKS]
    cols = [c for c in labels if f"own_{c}" in rows[0]]
    use = "own" if len(rows) > 1 else "delta"
    z = np.array([[(r.get(f"{use}_{c}") or 0.0) / 1e3 for c in cols] for r in rows]) if cols else np.zeros((0, 0))
    if not z.size:
        return empty_figure("no per-rank budget")
    top = float(np.nanmax(np.abs(z))) or 1.0
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=[labels[c] for c in cols],
            y=[f"rank {r['rank']}" for r in rows],
            zmin=-top,
            zmax=top,
            colorscale="RdBu_r",
            colorbar={"title": "ms"},
            hovertemplate="%{y}<br>%{x}: %{z:+.1f} ms<extra></extra>",
        )
    )
    what = "beside the other ranks' median change" if use == "own" else "change"
    fig.update_layout(
        **BASE_LAYOUT,
        title=f"Per rank: budget change A → B, {what} (ms; red: more time in B)",
        height=max(260, 22 * len(rows) + 140),
        yaxis={"autorange": "reversed"},
    )
    return fig
