"""Ranks x steps heat-map of step time, compute, exposed communication or idle; a click opens the cell."""

from __future__ import annotations

from typing import Any

import pandas as pd
from dash import Dash, Input, Output, State, dcc, html
from scope.app import aggregate, figures, figures_whatif
from scope.app.data import RunData, Snapshot
from scope.app.links import href, int_param
from scope.app.pages.common import analysis_hint, empty_state, finding_card, fmt, graph

from scope import units

PATH = "/heatmap"
TITLE = "Heat-map"

METRICS = {
    "step_us": "step time",
    "compute_us": "compute",
    "exposed_comm_us": "exposed communication",
    "exposed_comm_wait_us": "waiting for peers",
    "idle_us": "idle",
    "memcpy_us": "memcpy",
}
# A rank this much above the other ranks (the straggler finding's ratio) is named as the hottest.
STANDS_OUT = 1.05
# Components of a step, in the order the cell's bar stacks them (they sum to the step time).
PARTS = ("compute_us", "exposed_comm_wait_us", "exposed_comm_transfer_us", "exposed_comm_us", "memcpy_us", "idle_us")


def source(snap: Snapshot) -> pd.DataFrame:
    """The breakdown table when the analyzers wrote one, else the store's step times."""
    breakdown = snap.table("breakdown")
    if breakdown is not None and {"rank", "step"} <= set(breakdown.columns):
        return breakdown
    return snap.steps if not snap.steps.empty else pd.DataFrame()


def metric_options(df: pd.DataFrame) -> list[dict[str, Any]]:
    return [{"label": label, "value": key} for key, label in METRICS.items() if key in df.columns]


def default_metric(snap: Snapshot, df: pd.DataFrame, options: list[dict[str, Any]]) -> str:
    """The view that shows the run's straggler: in a synchronous job every rank's step time is about the
    same (the others wait for the slow one), so step time hides it; the component the straggler finding
    names (compute, host idle, ...) shows it. Step time when no finding names one."""
    from scope.analyzers.stragglers import KIND_COLUMNS

    for finding in snap.findings:
        column = KIND_COLUMNS.get(str(finding.metrics.get("straggler_kind")))
        if column in METRICS and column in df.columns:
            return column
    return str(options[0]["value"])


def layout(data: RunData, params: dict[str, str]) -> html.Div:
    snap = data.snapshot
    df = source(snap)
    if df.empty:
        return empty_state(
            "No per-rank, per-step data",
            "The traces hold no ProfilerStep windows, or the run has not been ingested yet.",
            analysis_hint(data),
        )
    options = metric_options(df)
    metric = params.get("metric") if params.get("metric") in df.columns else default_metric(snap, df, options)
    focus = {"rank": int_param(params, "rank"), "step": int_param(params, "step")}
    note = (
        []
        if snap.table("breakdown") is not None
        else [
            html.P(
                "Only step time is available: the breakdown table (compute, exposed communication, idle) appears "
                "once the breakdown analyzer has run on this store.",
                className="muted",
            )
        ]
    )
    controls = html.Div(
        [
            dcc.RadioItems(options=options, value=metric, id="heatmap-metric", inline=True, className="radio"),
            dcc.Checklist(
                options=[{"label": "relative to the other ranks (their median in each step)", "value": "relative"}],
                value=[],
                id="heatmap-relative",
                inline=True,
            ),
        ],
        className="controls",
    )
    return html.Div(
        [
            *dp_pp_section(snap),
            html.H2("Ranks × steps"),
            *note,
            controls,
            dcc.Store(id="heatmap-focus", data=focus),
            graph("heatmap-graph", figures.empty_figure("loading…")),
            html.Div(id="heatmap-detail", className="panel"),
        ]
    )


def dp_pp_section(snap: Snapshot) -> list[Any]:
    """The DP x PP view of a what-if analysis (operation-level timelines), when there is one."""
    workers = snap.table("whatif_workers")
    if workers is None:
        return []
    return [
        html.H2("DP ranks × pipeline stages"),
        html.P(
            "How slow the job would be with only this worker's ops as traced (the rest ideal). One hot cell is "
            "a bad worker, a band across a stage a partition imbalance, speckle a data imbalance.",
            className="muted",
        ),
        graph("heatmap-dppp-graph", figures_whatif.dp_pp_figure(workers)),
    ]


def cell_detail(snap: Snapshot, rank: int, step: int, step_width: int = 1, metric: str = "step_us") -> Any:
    df = source(snap)
    rows = df[(df["rank"] == rank) & (df["step"] >= step) & (df["step"] < step + step_width)]
    if rows.empty:
        return html.P(f"No data for rank {rank} at step {step}.", className="muted")
    row = rows.loc[rows[metric].idxmax()] if metric in rows.columns and step_width > 1 else rows.iloc[0]
    step = int(row["step"])
    peers = df[df["step"] == step]
    parts = [p for p in PARTS if p in df.columns and not (p == "exposed_comm_us" and "exposed_comm_wait_us" in df)]
    parts = parts or ["step_us"]
    cell = {p.removesuffix("_us").replace("_", " "): float(row[p]) for p in parts}
    others = peers[peers["rank"] != rank]
    median = {p.removesuffix("_us").replace("_", " "): float(others[p].median()) for p in parts}
    ratio = (
        float(row["step_us"]) / float(others["step_us"].median())
        if "step_us" in df and others["step_us"].median()
        else None
    )
    findings = [(i, f) for i, f in enumerate(snap.findings) if rank in f.ranks]
    return html.Div(
        [
            html.H4(f"Rank {rank}, step {step}", id="heatmap-cell-title"),
            html.P(
                f"step time {fmt(float(row['step_us']) / 1000)} ms"
                + (
                    f", {units.quantity('step_ratio', ratio)} the other ranks (their median in this step)"
                    if ratio
                    else ""
                )
                if "step_us" in row
                else ""
            ),
            graph("heatmap-cell-graph", figures.cell_figure(cell, median, rank, step)),
            dcc.Link(
                f"Open the timeline of rank {rank} at step {step} →",
                href=href("timeline", rank=rank, step=step),
                id="heatmap-open-timeline",
                className="button-link",
            ),
            *[finding_card(f, i) for i, f in findings[:3]],
        ]
    )


def hottest(df: pd.DataFrame, metric: str) -> str:
    """' · hottest: rank R (2.41× the other ranks, over 5 steps; worst at step S)': the rank to look at
    first is the one above its peers step after step, not the one with a single slow step. The ratio is
    the straggler finding's (scope.analyzers.stragglers.peer_ratio), so both print the same number."""
    from scope.analyzers.stragglers import rank_ratios

    if df is None or df.empty or metric not in df.columns or df["rank"].nunique() < 2:
        return ""
    typical = rank_ratios(df, metric).dropna()
    if typical.empty:
        return ""
    rank = typical.idxmax()
    if typical[rank] < STANDS_OUT:
        return f" · no rank stands out (each within {100 * (STANDS_OUT - 1):.0f}% of the other ranks)"
    rel, _ = aggregate.heat_matrix(df, metric, relative=True, max_columns=10**9)
    worst = rel.loc[rank].idxmax()
    n = int(rel.loc[rank].notna().sum())
    over = f"medians over {n} steps; worst at step {int(worst)}" if n > 1 else f"step {int(worst)}"
    return f" · hottest: rank {int(rank)} ({units.quantity('step_ratio', typical[rank])} the other ranks, {over})"


def register(app: Dash, data: RunData) -> None:
    @app.callback(
        Output("heatmap-graph", "figure"),
        Input("heatmap-metric", "value"),
        Input("heatmap-relative", "value"),
        State("heatmap-focus", "data"),
    )
    def draw_heatmap(metric: str, relative: list[str], focus: dict[str, Any]) -> Any:
        snap = data.snapshot
        df = source(snap)
        matrix, width = aggregate.heat_matrix(df, metric, relative="relative" in (relative or []))
        label = METRICS.get(metric, metric)
        scale = 1.0 if "relative" in (relative or []) else 1000.0
        title = f"{label} per rank and step" + (f" (worst of each {width} steps)" if width > 1 else "")
        title += hottest(df, metric)
        focus = focus or {}
        return figures.heatmap_figure(
            matrix / scale,
            title,
            "ms",
            relative="relative" in (relative or []),
            highlight_rank=focus.get("rank"),
            highlight_step=focus.get("step"),
            step_width=width,
        )

    @app.callback(
        Output("heatmap-detail", "children"),
        Input("heatmap-graph", "clickData"),
        State("heatmap-focus", "data"),
        State("heatmap-metric", "value"),
    )
    def open_cell(click: dict[str, Any] | None, focus: dict[str, Any], metric: str) -> Any:
        snap = data.snapshot
        width = 1
        step: int | None
        if click and click.get("points"):
            point = click["points"][0]
            rank, step = int(point["y"]), int(point["x"])
            # A binned column is labelled by its first step: open the rank's worst step inside it.
            width = max(1, -(-source(snap)["step"].nunique() // aggregate.MAX_HEAT_COLUMNS))
        elif focus and focus.get("rank") is not None:
            rank = int(focus["rank"])
            step = focus.get("step")
            if step is None:  # a straggler link names the rank: open its worst step
                df = source(snap)
                mine = df[df["rank"] == rank]
                col = metric if metric in mine.columns else "step_us"
                if mine.empty:
                    return html.P(f"No data for rank {rank}.", className="muted")
                step = int(mine.loc[mine[col].idxmax(), "step"])
        else:
            return html.P("Click a cell to open that rank and step.", className="muted")
        return cell_detail(snap, rank, int(step), width, metric)
