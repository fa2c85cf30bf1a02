"""Figures of the memory page (pure: tables in, plotly figures out)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from scope.app.figures import empty_figure

GIB = 2**30


def _unit(values: pd.Series) -> tuple[float, str]:
    peak = float(values.max()) if len(values) else 0.0
    return (GIB, "GiB") if peak >= GIB / 4 else (2**20, "MiB")


def common_bins(rows: pd.DataFrame, columns: int = 200) -> pd.DataFrame:
    """Ranks (index) x COLUMNS equal spans of the job's whole time range: each rank's own bins (spanning
    its own events) put on one axis; a span holds the highest level of the rank's bins starting in it,
    carried forward where none starts (the level holds until the next event)."""
    lo, hi = int(rows["start_ns"].min()), int(rows["end_ns"].max())
    edges = np.linspace(lo, hi, columns + 1)
    col = np.clip(np.searchsorted(edges, rows["start_ns"].to_numpy(), side="right") - 1, 0, columns - 1)
    matrix = rows.assign(col=col).pivot_table(index="rank", columns="col", values="allocated", aggfunc="max")
    matrix = matrix.reindex(columns=range(columns)).ffill(axis=1).sort_index()
    matrix.columns = (edges[:-1] - lo) / 1e9
    return matrix


def memory_heatmap(timeline: pd.DataFrame, device: str) -> go.Figure:
    """Ranks (rows) x time (columns, one axis for all ranks): allocated bytes, the highest in each span."""
    rows = timeline[timeline["device"] == device]
    if rows.empty:
        return empty_figure("no memory events for this device")
    matrix = common_bins(rows)
    scale, unit = _unit(rows["allocated"])
    heat = go.Heatmap(
        z=np.round(matrix.to_numpy(dtype=float) / scale, 3),
        x=[float(x) for x in matrix.columns],
        y=[int(r) for r in matrix.index],
        colorscale="YlOrRd",
        colorbar={"title": {"text": unit}},
        hovertemplate=f"rank %{{y}}<br>%{{x:.3f}} s<br>%{{z:.2f}} {unit} allocated<extra></extra>",
    )
    fig = go.Figure(heat)
    fig.update_layout(
        title=f"{device}: allocated memory per rank over time",
        xaxis_title="seconds from the first memory event",
        yaxis_title="rank",
        yaxis={"autorange": "reversed", "dtick": 1 if matrix.shape[0] <= 32 else None},
        margin={"t": 50, "l": 60, "r": 20, "b": 50},
    )
    return fig


def rank_timeline(timeline: pd.DataFrame, rank: int, device: str, capacity: int = -1) -> go.Figure:
    """One rank's allocated and reserved memory over time, with its device's capacity where known."""
    rows = timeline[(timeline["rank"] == rank) & (timeline["device"] == device)].sort_values("bin")
    if rows.empty:
        return empty_figure(f"no memory events on rank {rank} {device}")
    scale, unit = _unit(pd.concat([rows["allocated"], rows["reserved"]]))
    seconds = (rows["start_ns"] - rows["start_ns"].min()) / 1e9
    fig = go.Figure()
    fig.add_scatter(x=seconds, y=rows["allocated"] / scale, name="allocated", mode="lines", line_shape="hv")
    if (rows["reserved"] > 0).any():
        fig.add_scatter(x=seconds, y=rows["reserved"] / scale, name="reserved", mode="lines", line_shape="hv")
    if capacity > 0:
        fig.add_hline(y=capacity / scale, line_dash="dot", annotation_text="device capacity")
    fig.update_layout(
        title=f"rank {rank} {device}",
        xaxis_title="seconds",
        yaxis_title=unit,
        margin={"t": 50, "l": 60, "r": 20, "b": 50},
        legend={"orientation": "h"},
    )
    return fig


def peak_flame(nodes: pd.DataFrame) -> go.Figure:
    """One snapshot's peak as an icicle (a flame graph hung from its root): each box a frame, its width
    the bytes live at the peak that were allocated under it."""
    if nodes.empty:
        return empty_figure("no allocation live at the peak")
    nodes = nodes.sort_values("node")
    scale, unit = _unit(nodes["bytes"])
    icicle = go.Icicle(
        ids=nodes["node"].astype(str).tolist(),
        parents=["" if p < 0 else str(p) for p in nodes["parent"].tolist()],
        labels=nodes["label"].tolist(),
        values=nodes["bytes"].tolist(),
        branchvalues="total",
        customdata=np.round(nodes["bytes"].to_numpy(dtype=float) / scale, 2),
        hovertemplate=f"%{{label}}<br>%{{customdata}} {unit} live at the peak<extra></extra>",
        tiling={"orientation": "v"},
        maxdepth=12,
    )
    fig = go.Figure(icicle)
    fig.update_layout(margin={"l": 8, "r": 8, "t": 8, "b": 8}, height=520)
    return fig


def snapshot_timeline(spans: pd.DataFrame) -> go.Figure:
    """One snapshot's allocated level over its trace as a band: each span's lowest and highest level
    (analyzers/memory/lod.py), so a million events draw as at most two points a span, the spikes kept."""
    if spans.empty:
        return empty_figure("no allocator events")
    spans = spans.sort_values("bin")
    scale, unit = _unit(spans["high"])
    timed = bool((spans["time_us"] >= 0).all())
    x = (spans["time_us"] - spans["time_us"].iloc[0]) / 1e6 if timed else spans["first_entry"]
    fig = go.Figure()
    fig.add_scatter(x=x, y=spans["high"] / scale, name="highest", mode="lines", line_shape="hv")
    fig.add_scatter(x=x, y=spans["low"] / scale, name="lowest", mode="lines", line_shape="hv", fill="tonexty")
    peak = spans.loc[spans["high"].idxmax()]
    fig.add_scatter(
        x=[x.loc[peak.name]], y=[peak["high"] / scale], name="peak", mode="markers", marker={"size": 9, "symbol": "x"}
    )
    fig.update_layout(
        xaxis_title="seconds from the first event" if timed else "allocator event",
        yaxis_title=f"allocated ({unit})",
        margin={"t": 20, "l": 60, "r": 20, "b": 50},
        legend={"orientation": "h"},
        height=320,
    )
    return fig
