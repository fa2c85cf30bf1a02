"""Pure figure builders: compact, already-aggregated data in, a plotly figure out (no I/O, no Dash)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from scope import units

COLORS = {
    "compute": "#4C78A8",
    "comm": "#F58518",
    "memcpy": "#54A24B",
    "idle": "#C8C8C8",
    "bubble": "#E45756",
    "highlight": "#B000B5",
    "focus": "#00A0FF",
}
MAX_SHAPES = 120
# Step numbers over the counters: at least this share of the x axis apart, so they never overlap.
STEP_LABEL_GAP = 0.025
BASE_LAYOUT: dict[str, Any] = {
    "template": "plotly_white",
    "margin": {"l": 70, "r": 20, "t": 50, "b": 45},
    "font": {"size": 12},
}


def empty_figure(message: str, height: int = 260) -> go.Figure:
    fig = go.Figure()
    fig.add_annotation(
        text=message, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False, font={"size": 14, "color": "#666"}
    )
    fig.update_layout(**BASE_LAYOUT, height=height, xaxis={"visible": False}, yaxis={"visible": False})
    return fig


def heatmap_figure(
    matrix: pd.DataFrame,
    title: str,
    unit: str,
    relative: bool = False,
    highlight_rank: int | None = None,
    highlight_step: int | None = None,
    step_width: int = 1,
) -> go.Figure:
    """Ranks (rows) x steps (columns). Relative values are centred on 1.0 (the other ranks' median in the step)."""
    if matrix is None or matrix.empty:
        return empty_figure("no per-rank, per-step data")
    steps = [int(s) for s in matrix.columns]
    ranks = [int(r) for r in matrix.index]
    step_label = "steps %{x}+" if step_width > 1 else "step %{x}"
    value = "%{z:.2f}× the other ranks (their median in this step)" if relative else f"%{{z:.2f}} {unit}"
    heat = go.Heatmap(
        z=np.round(matrix.to_numpy(dtype=float), 4),
        x=steps,
        y=ranks,
        colorscale="RdBu_r" if relative else "YlOrRd",
        zmid=1.0 if relative else None,
        colorbar={"title": {"text": "× the other ranks" if relative else unit}},
        hovertemplate=f"rank %{{y}}<br>{step_label}<br>{value}<extra></extra>",
        xgap=0,
        ygap=0,
    )
    fig = go.Figure(heat)
    half = step_width / 2
    if highlight_rank is not None and highlight_rank in ranks:
        fig.add_shape(
            type="rect",
            x0=steps[0] - half,
            x1=steps[-1] + half,
            y0=highlight_rank - 0.5,
            y1=highlight_rank + 0.5,
            line={"color": COLORS["focus"], "width": 2},
        )
    if highlight_rank is not None and highlight_step is not None:
        fig.add_shape(
            type="rect",
            x0=highlight_step - half,
            x1=highlight_step + half,
            y0=highlight_rank - 0.5,
            y1=highlight_rank + 0.5,
            line={"color": "#000", "width": 2},
        )
    fig.update_layout(**BASE_LAYOUT, title=title, height=max(320, min(900, 90 + 14 * len(ranks))), clickmode="event")
    # One tick per column while they fit; steps far apart (profiler windows 500 steps apart) get automatic
    # integer ticks: a tick for every step number in between drew 1,000 labels and took Chromium 100 s.
    width = max(1, step_width)
    few = (steps[-1] - steps[0]) / width < 40
    fig.update_xaxes(title="step", showgrid=False, tickformat="d", dtick=width if few else None)
    # Ranks are integers: one tick per rank while they fit, never a tick at rank 0.5.
    fig.update_yaxes(
        title="rank", autorange="reversed", showgrid=False, tickformat="d", dtick=1 if len(ranks) <= 40 else None
    )
    return fig


def cell_figure(cell: dict[str, float], median: dict[str, float], rank: int, step: int) -> go.Figure:
    """One rank's step split into components (ms) next to the median rank of the same step."""
    fig = go.Figure()
    rows = [f"rank {rank}", "median rank"]
    palette = [COLORS["compute"], COLORS["comm"], "#FFBF79", COLORS["memcpy"], COLORS["idle"], "#9D755D"]
    for i, name in enumerate(cell):
        values = [cell.get(name, 0.0) / 1000.0, median.get(name, 0.0) / 1000.0]
        fig.add_bar(
            y=rows,
            x=values,
            name=name,
            orientation="h",
            marker_color=palette[i % len(palette)],
            hovertemplate=f"{name}: %{{x:.2f}} ms<extra></extra>",
        )
    fig.update_layout(
        **BASE_LAYOUT,
        barmode="stack",
        height=210,
        title=f"Rank {rank}, step {step} (ms)",
        legend={"orientation": "h", "y": -0.35, "traceorder": "normal"},
    )
    fig.update_yaxes(autorange="reversed")
    return fig


def step_time_figure(summary: pd.DataFrame, unit_scale: float = 1000.0) -> go.Figure:
    """Step time per step across ranks: the min-max band, the median, and the slowest rank on hover."""
    if summary is None or summary.empty:
        return empty_figure("no steps recorded (no ProfilerStep in the traces)")
    x = summary["step"].to_numpy()
    fig = go.Figure()
    fig.add_scatter(
        x=x, y=summary["min"] / unit_scale, mode="lines", line={"width": 0}, showlegend=False, hoverinfo="skip"
    )
    fig.add_scatter(
        x=x,
        y=summary["max"] / unit_scale,
        mode="lines+markers",
        fill="tonexty",
        fillcolor="rgba(228,87,86,0.15)",
        line={"color": COLORS["bubble"], "width": 1},
        name="slowest rank",
        customdata=summary["slowest_rank"],
        hovertemplate="step %{x}: %{y:.1f} ms (rank %{customdata})<extra></extra>",
    )
    fig.add_scatter(
        x=x,
        y=summary["median"] / unit_scale,
        mode="lines+markers",
        name="median rank",
        line={"color": COLORS["compute"]},
        hovertemplate="step %{x}: %{y:.1f} ms<extra></extra>",
    )
    fig.update_layout(
        **BASE_LAYOUT,
        title="Step time across ranks (ms)",
        height=300,
        legend={"orientation": "h", "y": 1.12, "x": 1, "xanchor": "right"},
    )
    fig.update_xaxes(title="step", dtick=1 if len(x) <= 30 else None)
    return fig


def bubble_figure(stages: pd.DataFrame) -> go.Figure:
    """Measured bubble per pipeline stage next to the schedule's theoretical bubble (percent of step)."""
    if stages is None or stages.empty or "bubble_pct" not in stages.columns:
        return empty_figure("no pipeline bubble measurements")
    fig = go.Figure()
    labels = [f"stage {s}" for s in stages["stage"]]
    fig.add_bar(
        x=labels,
        y=stages["bubble_pct"],
        name="measured",
        marker_color=COLORS["bubble"],
        hovertemplate="%{x}: %{y:.1f}% of step<extra></extra>",
    )
    if "theory_pct" in stages.columns:
        fig.add_bar(
            x=labels,
            y=stages["theory_pct"],
            name="schedule theory",
            marker_color="#BBB",
            hovertemplate="%{x}: %{y:.1f}% in theory<extra></extra>",
        )
    fig.update_layout(**BASE_LAYOUT, title="Pipeline bubble per stage (% of step time)", barmode="group", height=300)
    return fig


def distribution_figure(stats: pd.DataFrame, title: str, unit: str) -> go.Figure:
    """Box plots from precomputed quartiles (whiskers: 5th and 95th percentiles), one per group."""
    if stats is None or stats.empty:
        return empty_figure(f"no data for {title.lower()}")
    box = go.Box(
        x=stats["group"],
        q1=stats["q1"],
        median=stats["median"],
        q3=stats["q3"],
        lowerfence=stats["lo"],
        upperfence=stats["hi"],
        mean=stats["mean"],
        name=title,
        marker_color=COLORS["compute"],
        hoverinfo="y",
    )
    fig = go.Figure(box)
    fig.update_layout(**BASE_LAYOUT, title=title, height=320, showlegend=False)
    fig.update_yaxes(title=unit)
    return fig


def counts_figure(counts: pd.Series, title: str, x_label: str) -> go.Figure:
    if counts is None or counts.empty:
        return empty_figure(f"no data for {title.lower()}")
    fig = go.Figure(
        go.Bar(
            x=[str(i) for i in counts.index],
            y=counts.to_numpy(),
            marker_color=COLORS["comm"],
            hovertemplate=f"{x_label} %{{x}}: %{{y}}<extra></extra>",
        )
    )
    fig.update_layout(**BASE_LAYOUT, title=title, height=280)
    fig.update_xaxes(title=x_label, type="category")
    return fig


def _x_span(series: pd.DataFrame, t0: int, step_marks: Sequence[tuple[int, int, int]], marks: Sequence[Any]) -> float:
    """Seconds the x axis covers (samples, steps and marks together)."""
    ends = [int(series["ts_ns"].max())] + [int(m[2]) for m in step_marks] + [int(m[1]) for m in marks]
    starts = [int(series["ts_ns"].min()), t0]
    return max(1e-9, (max(ends) - min(starts)) / 1e9)


def _add_mark_markers(fig: go.Figure, marks: list[tuple[int, int, str]], t0: int) -> None:
    """One marker per mark along the top of the plot, its label in the hover: labels that would sit
    on top of each other over narrow steps never do (marks at one place share a marker)."""
    by_x: dict[float, list[str]] = {}
    for start, end, text in marks:
        by_x.setdefault(round((start + (end - start) / 2 - t0) / 1e9, 6), []).append(text)
    fig.add_scatter(
        x=list(by_x),
        y=[1.0] * len(by_x),
        yaxis="y2",
        mode="markers",
        marker={"symbol": "triangle-down", "size": 11, "color": COLORS["bubble"]},
        name="findings and events",
        text=["<br>".join(texts) for texts in by_x.values()],
        hovertemplate="%{text}<extra></extra>",
        showlegend=False,
    )
    fig.update_layout(yaxis2={"overlaying": "y", "range": [0, 1.04], "visible": False, "fixedrange": True})


def counter_figure(
    series: pd.DataFrame,
    t0: int,
    title: str,
    unit: str,
    step_marks: Sequence[tuple[int, int, int]] = (),
    marks: Sequence[tuple[int, int, str]] = (),
) -> go.Figure:
    """Counter series (seconds from t0) per entity, step windows shaded alternately, findings marked in red."""
    if series is None or series.empty:
        return empty_figure(f"no samples for {title}")
    fig = go.Figure()
    for entity, group in series.groupby("entity", sort=True):
        fig.add_scatter(
            x=(group["ts_ns"].to_numpy(dtype=np.int64) - t0) / 1e9,
            y=group["value"],
            mode="lines",
            name=str(entity),
            hovertemplate=f"{entity}: %{{y:.4g}} {unit}<extra></extra>",
        )
    shapes, notes = [], []
    x_span = _x_span(series, t0, step_marks, marks)
    last_label = -math.inf
    for i, (step, start, end) in enumerate(list(step_marks)[:MAX_SHAPES]):
        shapes.append(
            {
                "type": "rect",
                "x0": (start - t0) / 1e9,
                "x1": (end - t0) / 1e9,
                "y0": 0,
                "y1": 1,
                "yref": "paper",
                "fillcolor": "#4C78A8",
                "opacity": 0.06 if i % 2 == 0 else 0.12,
                "line": {"width": 0},
                "layer": "below",
            }
        )
        x = (start - t0) / 1e9
        if x - last_label >= STEP_LABEL_GAP * x_span:  # a step number only where it has room
            last_label = x
            notes.append(
                {
                    "x": x,
                    "y": 1,
                    "yref": "paper",
                    "text": str(step),
                    "showarrow": False,
                    "xanchor": "left",
                    "yanchor": "bottom",  # above the plot, where the finding markers along its top edge are not
                    "font": {"size": 9, "color": "#666"},
                }
            )
    span = max(1, int(series["ts_ns"].max()) - int(series["ts_ns"].min()))
    for start, end, _text in list(marks)[:MAX_SHAPES]:
        x0, x1 = (start - t0) / 1e9, (end - t0) / 1e9
        if end - start < span / 300:  # an instant (an Xid, one error rise): a line, not an invisible band
            shape = {"type": "line", "x0": x0, "x1": x0, "line": {"color": COLORS["bubble"], "width": 2}}
        else:
            shape = {
                "type": "rect",
                "x0": x0,
                "x1": x1,
                "fillcolor": COLORS["bubble"],
                "opacity": 0.18,
                "line": {"width": 0},
            }
        shapes.append({**shape, "y0": 0, "y1": 1, "yref": "paper"})
    if marks:
        _add_mark_markers(fig, list(marks)[:MAX_SHAPES], t0)
    fig.update_layout(shapes=shapes, annotations=notes)
    fig.update_layout(**BASE_LAYOUT, title=title, height=340, hovermode="x unified")
    fig.update_xaxes(title="seconds from run start")
    _value_axis(fig, series["value"], unit)
    return fig


def _value_axis(fig: go.Figure, values: pd.Series, unit: str) -> None:
    """A percentage on 0-100 %, any other non-negative counter from 0: an auto-range of 98.5-100 % makes a
    1.5-point dip look like a collapse."""
    top = float(values.max()) if len(values) else 0.0
    axis = fig.layout.yaxis  # the values' axis only: the finding markers have their own (yaxis2, 0-1)
    if unit.endswith("_pct"):
        axis.update(title=f"{units.label(unit)} (%)", range=[0, 100.0 if top <= 100 else top * 1.05])
    elif len(values) and float(values.min()) >= 0:
        axis.update(title=unit, rangemode="tozero")
    else:
        axis.update(title=unit)
