"""The critical path drawn over the timeline: the critical_path analyzer's segments of the steps in the
window, on the lanes of the ranks shown, joined across ranks where the path crosses (pure)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

PATH_COLOR = "#d62728"
# Segments that are not work on a lane (the step's start offset; zero-length structure) are not drawn.
_SKIP = ("offset",)


def path_points(path: pd.DataFrame, lanes: list[int], steps: range, t0: int) -> tuple[list[Any], list[Any], list[str]]:
    """x (ms from t0), y (lane index) and hover text of the path's segments in `steps` on `lanes`, in
    path order: consecutive segments on shown lanes are joined (a vertical hop is a crossing to another
    rank); a segment on a rank not shown breaks the line."""
    sub = path[path["step"].isin(list(steps)) & ~path["cls"].isin(_SKIP) & (path["us"] > 0)]
    sub = sub.sort_values(["step", "order"], kind="stable")
    index = {r: i for i, r in enumerate(lanes)}
    xs: list[Any] = []
    ys: list[Any] = []
    texts: list[str] = []
    start = (sub["start_us"].to_numpy(np.float64) * 1e3 - t0) / 1e6
    end = start + sub["us"].to_numpy(np.float64) / 1e3
    stages = sub["stage"].tolist() if "stage" in sub else [-1] * len(sub)
    rows = zip(start, end, sub["rank"], stages, sub["op"], sub["us"], sub["step"], strict=True)
    for s, e, rank, stage, op, us, step in rows:
        lane = index.get(int(rank))
        if lane is None:
            if xs and xs[-1] is not None:
                xs.append(None)
                ys.append(None)
                texts.append("")
            continue
        where = f"rank {rank} (stage {stage})" if int(stage) >= 0 else f"rank {rank}"
        text = f"step {step} · {where} · {op} · {us / 1e3:.3f} ms"
        xs += [s, e]
        ys += [lane, lane]
        texts += [text, text]
    return xs, ys, texts


def add_critical_path(fig: go.Figure, path: pd.DataFrame | None, lanes: list[int], steps: range, t0: int) -> None:
    """One line trace, 'critical path', over the lanes (nothing when the analysis has no path)."""
    if path is None or path.empty or not {"step", "order", "rank", "start_us", "us"} <= set(path.columns):
        return
    xs, ys, texts = path_points(path, lanes, steps, t0)
    if not xs:
        return
    fig.add_scatter(
        x=xs,
        y=ys,
        mode="lines",
        name="critical path",
        line={"color": PATH_COLOR, "width": 2},
        text=texts,
        hovertemplate="%{text}<extra>critical path</extra>",
    )
