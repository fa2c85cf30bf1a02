"""Collectives: arrival skew and bus bandwidth per process group and op; the slowest instances."""

from __future__ import annotations

from typing import Any

import pandas as pd
from dash import Dash, Input, Output, dcc, html
from scope.app import aggregate, figures
from scope.app.data import RunData
from scope.app.links import COLLECTIVE_KINDS, href, int_param
from scope.app.pages.common import analysis_hint, empty_state, finding_card, frame_table, graph

PATH = "/collectives"
TITLE = "Collectives"
ALL = "__all__"
SLOWEST = 25


def layout(data: RunData, params: dict[str, str]) -> html.Div:
    snap = data.snapshot
    focus = int_param(params, "finding")
    cards = [finding_card(f, i, focused=i == focus) for i, f in enumerate(snap.findings) if f.kind in COLLECTIVE_KINDS]
    coll = snap.table("collectives")
    if coll is None or not {"pg", "op"} <= set(coll.columns):
        return html.Div(
            [
                html.H2("Collectives"),
                *cards,
                empty_state(
                    "No matched collectives",
                    "The collectives table (each collective matched across ranks, with arrival skew, last arriver "
                    "and bus bandwidth) comes from the collectives analyzer of `scope analyze`.",
                    analysis_hint(data)
                    if not snap.analyzed
                    else "This run's analysis has no such table (no "
                    "collectives in the traces, or that analyzer is not installed).",
                ),
            ]
        )
    pgs = sorted(coll["pg"].astype(str).unique())
    ops = sorted(coll["op"].astype(str).unique())
    pg = params.get("pg") if params.get("pg") in pgs else ALL
    op = params.get("op") if params.get("op") in ops else ALL
    controls = html.Div(
        [
            html.Label(
                [
                    "process group",
                    dcc.Dropdown(
                        options=[{"label": "all", "value": ALL}] + [{"label": p, "value": p} for p in pgs],
                        value=pg,
                        id="coll-pg",
                        clearable=False,
                    ),
                ],
                className="control",
            ),
            html.Label(
                [
                    "op",
                    dcc.Dropdown(
                        options=[{"label": "all", "value": ALL}] + [{"label": o, "value": o} for o in ops],
                        value=op,
                        id="coll-op",
                        clearable=False,
                    ),
                ],
                className="control",
            ),
        ],
        className="controls",
    )
    return html.Div(
        [
            html.H2("Collectives"),
            *cards,
            controls,
            html.Div(
                [
                    html.Div(graph("coll-skew", figures.empty_figure("loading…")), className="half"),
                    html.Div(graph("coll-busbw", figures.empty_figure("loading…")), className="half"),
                ],
                className="row",
            ),
            html.Div(
                [
                    html.Div(graph("coll-last", figures.empty_figure("loading…")), className="half"),
                    html.Div(id="coll-summary", className="half"),
                ],
                className="row",
            ),
            html.H3("Slowest instances (largest arrival skew)"),
            html.Div(id="coll-slowest"),
        ]
    )


def in_ms(stats: pd.DataFrame) -> pd.DataFrame:
    """Box statistics of a µs column in ms (the unit every time on the dashboard is read in)."""
    if stats is None or stats.empty:
        return stats
    columns = [c for c in ("q1", "median", "q3", "lo", "hi", "mean") if c in stats.columns]
    return stats.assign(**{c: stats[c] / 1000.0 for c in columns})


def filtered(coll: pd.DataFrame, pg: str, op: str) -> pd.DataFrame:
    out = coll
    if pg and pg != ALL:
        out = out[out["pg"].astype(str) == pg]
    if op and op != ALL:
        out = out[out["op"].astype(str) == op]
    return out


def slowest_table(df: pd.DataFrame) -> Any:
    key = "skew_us" if "skew_us" in df.columns else next((c for c in ("dur_us", "latency_us") if c in df.columns), None)
    if key is None:
        return html.P("no timing columns in the collectives table", className="muted")
    top = df.sort_values(key, ascending=False).head(SLOWEST).copy()

    def link(row: pd.Series) -> Any:
        rank = row.get("last_arriver")
        rank = int(rank) if rank is not None and pd.notna(rank) else None
        step = int(row["step"]) if "step" in row and pd.notna(row["step"]) else None
        return dcc.Link("timeline →", href=href("timeline", pg=row["pg"], seq=int(row["seq"]), rank=rank, step=step))

    top["view"] = [link(row) for _, row in top.iterrows()]
    cols = ["pg", "seq", "op", "step", "bytes", "skew_us", "last_arriver", "busbw_gbps", "view"]
    return frame_table(top, cols, max_rows=SLOWEST, table_id="coll-slowest-table")


def summary_table(df: pd.DataFrame) -> Any:
    agg: dict[str, Any] = {"instances": ("seq", "size")}
    if "skew_us" in df.columns:
        agg["median_skew_us"] = ("skew_us", "median")
    if "busbw_gbps" in df.columns:
        agg["median_busbw_gbps"] = ("busbw_gbps", "median")
    if "bytes" in df.columns:
        agg["bytes"] = ("bytes", "median")
    per = df.groupby(["pg", "op"]).agg(**agg).reset_index()
    return html.Div([html.H4("Per process group and op"), frame_table(per, max_rows=30)])


def register(app: Dash, data: RunData) -> None:
    @app.callback(
        Output("coll-skew", "figure"),
        Output("coll-busbw", "figure"),
        Output("coll-last", "figure"),
        Output("coll-summary", "children"),
        Output("coll-slowest", "children"),
        Input("coll-pg", "value"),
        Input("coll-op", "value"),
    )
    def draw_collectives(pg: str, op: str) -> tuple[Any, ...]:
        coll = data.snapshot.table("collectives")
        if coll is None:
            empty = figures.empty_figure("no collectives")
            return empty, empty, empty, None, None
        df = filtered(coll, pg, op)
        if df.empty:
            empty = figures.empty_figure("no collectives match")
            return empty, empty, empty, None, None
        skew = figures.distribution_figure(
            in_ms(aggregate.box_stats(df, ["pg", "op"], "skew_us")), "Arrival skew per group and op", "ms"
        )
        busbw = figures.distribution_figure(
            aggregate.box_stats(df, ["pg", "op"], "busbw_gbps"), "Bus bandwidth per group and op", "GB/s"
        )
        last = (
            df["last_arriver"].dropna().astype(int).value_counts().head(20)
            if "last_arriver" in df.columns
            else pd.Series(dtype=int)
        )
        last_fig = figures.counts_figure(last, "Last to arrive (instances per rank, top 20)", "rank")
        return skew, busbw, last_fig, summary_table(df), slowest_table(df)
