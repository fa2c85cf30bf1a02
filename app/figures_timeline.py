"""The timeline figure: per-rank lanes on one clock, built from already-bounded segments (pure)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from scope.app.figures import BASE_LAYOUT, COLORS, MAX_SHAPES, empty_figure

CATEGORY_NAMES = {
    "compute": "compute",
    "comm": "communication",
    "memcpy": "memcpy / memset",
    "idle": "idle",
    "bubble": "pipeline bubble",
}
# Row of each category inside a rank's lane: compute-like on top, communication below.
ROW_OFFSET = {"compute": -0.18, "memcpy": -0.18, "idle": -0.18, "comm": 0.18}


def _segment_trace(
    lane_rows: list[tuple[float, str, np.ndarray, np.ndarray, np.ndarray]], color: str, name: str, t0: int, width: float
) -> dict[str, Any]:
    """All lanes' segments of one category as one SVG path: x = [start, end, NaN, ...] in ms from t0."""
    xs, ys, texts = [], [], []
    for y, lane_label, start_ns, end_ns, labels in lane_rows:
        n = len(start_ns)
        if n == 0:
            continue
        start = (start_ns.astype(np.int64) - t0) / 1e6
        end = (end_ns.astype(np.int64) - t0) / 1e6
        x = np.full(3 * n, np.nan)
        x[0::3], x[1::3] = start, end
        xs.append(x)
        ys.append(np.tile([y, y, np.nan], n))
        for s, e, lab in zip(start.tolist(), end.tolist(), labels.tolist(), strict=True):
            text = f"{lane_label} · {lab} · {e - s:.3f} ms"
            texts += [text, text, ""]
    x_all = np.round(np.concatenate(xs), 4) if xs else np.array([])
    y_all = np.concatenate(ys) if ys else np.array([])
    return {
        "type": "scatter",
        "x": x_all,
        "y": y_all,
        "mode": "lines",
        "name": name,
        "hovertext": texts,
        "hoverinfo": "text",
        "connectgaps": False,
        "line": {"color": color, "width": width},
    }


def _step_lines(step_marks: Sequence[tuple[int, int]], t0: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    shapes, notes = [], []
    for step, start in list(step_marks)[:MAX_SHAPES]:
        x = (start - t0) / 1e6
        shapes.append(
            {
                "type": "line",
                "x0": x,
                "x1": x,
                "y0": 0,
                "y1": 1,
                "yref": "paper",
                "xref": "x",
                "line": {"color": "#888", "width": 1, "dash": "dot"},
            }
        )
        notes.append(
            {
                "x": x,
                "y": 1.0,
                "yref": "paper",
                "text": f"step {step}",
                "showarrow": False,
                "yanchor": "bottom",
                "font": {"size": 10, "color": "#666"},
            }
        )
    return shapes, notes


def timeline_figure(
    lanes: Sequence[tuple[str, pd.DataFrame]],
    t0: int,
    title: str,
    highlight: pd.DataFrame | None = None,
    step_marks: Sequence[tuple[int, int]] = (),
    bubbles: bool = False,
    focus_lane: int | None = None,
) -> go.Figure:
    """Per-rank lanes on one clock (ms from t0): compute above, communication below, idle in grey.

    `highlight` (lane, start_ns, end_ns, rank) marks one collective on every lane; the latest arrival
    gets a vertical line. With `bubbles`, idle is drawn as pipeline bubble.
    """
    if not lanes:
        return empty_figure("no lanes to show: choose ranks and a step")
    row_px = max(16, min(40, 640 // max(1, len(lanes))))
    width = max(3.0, row_px * 0.32)
    arrays = [
        (label, seg["cat"].to_numpy(), seg["start_ns"].to_numpy(), seg["end_ns"].to_numpy(), seg["label"].to_numpy())
        for label, seg in lanes
    ]
    traces = []
    for cat in ("idle", "compute", "memcpy", "comm"):
        rows = []
        for i, (label, cats, start, end, names) in enumerate(arrays):
            mask = cats == cat
            rows.append((i + ROW_OFFSET[cat], label, start[mask], end[mask], names[mask]))
        key = "bubble" if (bubbles and cat == "idle") else cat
        traces.append(_segment_trace(rows, COLORS[key], CATEGORY_NAMES[key], t0, width))
    shapes, notes = _step_lines(step_marks, t0)
    if focus_lane is not None:
        shapes.append(
            {
                "type": "rect",
                "x0": 0,
                "x1": 1,
                "xref": "paper",
                "y0": focus_lane - 0.45,
                "y1": focus_lane + 0.45,
                "fillcolor": COLORS["focus"],
                "opacity": 0.08,
                "line": {"width": 0},
            }
        )
    longest = max(len(label) for label, _ in lanes)
    height = 150 + row_px * len(lanes)
    plot_px = height - BASE_LAYOUT["margin"]["t"] - 95
    layout = {
        **BASE_LAYOUT,
        "margin": {**BASE_LAYOUT["margin"], "l": 16 + 7 * longest, "b": 95},
        "title": {"text": title},
        "height": height,
        "hovermode": "closest",
        "legend": {"orientation": "h", "yanchor": "top", "y": -48 / plot_px},
        "shapes": shapes,
        "annotations": notes,
        "xaxis": {"title": {"text": "ms from window start"}, "zeroline": False},
        "yaxis": {
            "tickvals": list(range(len(lanes))),
            "ticktext": [label for label, _ in lanes],
            "range": [len(lanes) - 0.5, -0.5],
            "showgrid": False,
            "zeroline": False,
        },
    }
    fig = go.Figure(data=traces, layout=layout, _validate=False)
    if highlight is not None and not highlight.empty:
        _add_highlight(fig, highlight, t0, width)
    return fig


def _add_highlight(fig: go.Figure, highlight: pd.DataFrame, t0: int, width: float) -> None:
    start = (highlight["start_ns"].to_numpy(dtype=np.int64) - t0) / 1e6
    end = (highlight["end_ns"].to_numpy(dtype=np.int64) - t0) / 1e6
    lanes = highlight["lane"].to_numpy(dtype=float) + ROW_OFFSET["comm"]
    xs: list[Any] = []
    ys: list[Any] = []
    for s, e, y in zip(start, end, lanes, strict=True):
        xs += [s, e, None]
        ys += [y, y, None]
    label = str(highlight.get("label", pd.Series(["collective"])).iloc[0])
    fig.add_scatter(
        x=xs,
        y=ys,
        mode="lines",
        name=f"selected: {label}",
        line={"color": COLORS["highlight"], "width": width + 3},
        hoverinfo="skip",
    )
    fig.add_scatter(
        x=start,
        y=lanes,
        mode="markers",
        name="arrival",
        showlegend=False,
        marker={"color": COLORS["highlight"], "symbol": "triangle-right", "size": 9},
        customdata=highlight["rank"],
        hovertemplate="rank %{customdata} arrives at %{x:.3f} ms<extra></extra>",
    )
    last = int(np.argmax(start))
    skew = start[last] - start.min()
    fig.add_scatter(
        x=[start[last], start[last]],
        y=[-0.5, len(fig.layout.yaxis.tickvals or [0]) - 0.5],
        mode="lines",
        line={"color": COLORS["highlight"], "width": 1, "dash": "dash"},
        hoverinfo="skip",
        name=f"last arriver: rank {int(highlight['rank'].iloc[last])} (+{skew:.2f} ms)",
    )
