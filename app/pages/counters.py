"""Counters: GPU, NVLink, InfiniBand and host series, aligned with step windows and findings."""

from __future__ import annotations

from typing import Any

import pandas as pd
from dash import Dash, Input, Output, dcc, html
from scope.app import aggregate, counter_series, figures
from scope.app.data import RunData, Snapshot
from scope.app.pages.common import empty_state, graph

from scope import units

PATH = "/counters"
TITLE = "Counters"
MAX_ENTITIES = 16


def layout(data: RunData, params: dict[str, str]) -> html.Div:
    hosts = counter_series.hosts(data.run_root)
    if not hosts:
        return html.Div(
            [
                html.H2("Counters"),
                empty_state(
                    "No counters recorded for this run",
                    "Counters come from the sidecar sampler: `scope run` starts it, or record a running job with "
                    "`scope sample --out RUN` / `scope attach --pid PID --out RUN`. They land in "
                    "RUN/hosts/<host>/counters/.",
                ),
            ]
        )
    host = params.get("host") if params.get("host") in hosts else hosts[0]
    controls = html.Div(
        [
            html.Label(
                ["host", dcc.Dropdown(options=hosts, value=host, id="counters-host", clearable=False)],
                className="control",
            ),
            html.Label(
                ["source", dcc.Dropdown(id="counters-table", value=params.get("table"), clearable=False)],
                className="control",
            ),
            html.Label(
                ["counter", dcc.Dropdown(id="counters-column", value=params.get("column"), clearable=False)],
                className="control wide",
            ),
        ],
        className="controls",
    )
    return html.Div(
        [
            html.H2("Counters"),
            controls,
            graph("counters-graph", figures.empty_figure("loading…")),
            html.P(
                "Shaded bands are profiled steps; red marks are steps named by a finding, error-counter "
                "rises, throttling and Xid events. Cumulative counters (bytes, packets, errors, CPU "
                "seconds) are shown as per-second rates.",
                className="muted",
            ),
        ]
    )


def step_windows(snap: Snapshot, host: str) -> pd.DataFrame:
    """Each step's window across the ranks of `host` (all ranks when the manifest does not say)."""
    steps = snap.steps
    if steps.empty:
        return pd.DataFrame(columns=["step", "start_ns", "end_ns"])
    ranks = next(
        (h.get("ranks") for h in snap.run.get("hosts") or [] if isinstance(h, dict) and h.get("name") == host), None
    )
    if ranks:
        steps = steps[steps["rank"].isin(ranks)]
    return steps.groupby("step").agg(start_ns=("start_ns", "min"), end_ns=("end_ns", "max")).reset_index()


def finding_marks(snap: Snapshot, windows: pd.DataFrame) -> list[tuple[int, int, str]]:
    """One mark per step that findings name, labelled with their kinds."""
    by_step = windows.set_index("step")
    kinds: dict[int, set[str]] = {}
    for f in snap.findings:
        for step in f.steps[:50]:
            if step in by_step.index:
                kinds.setdefault(int(step), set()).add(f.kind)
    return [
        (int(by_step.at[step, "start_ns"]), int(by_step.at[step, "end_ns"]), f"step {step}: {', '.join(sorted(names))}")
        for step, names in sorted(kinds.items())
    ]


def series_for(df: pd.DataFrame, column: str, derived: bool = False) -> tuple[pd.DataFrame, str]:
    entity = counter_series.entity_column(df)
    if not derived and counter_series.is_cumulative(df, column, entity):
        series, unit = aggregate.counter_rates(df, column, entity), f"{column} / s"
    else:
        series, unit = aggregate.counter_levels(df, column, entity), column
    keep = series.groupby("entity")["value"].mean().nlargest(MAX_ENTITIES).index
    series = series[series["entity"].isin(keep)]
    parts = [aggregate.downsample_series(g, "ts_ns", "value").assign(entity=e) for e, g in series.groupby("entity")]
    return (pd.concat(parts, ignore_index=True) if parts else series), unit


def register(app: Dash, data: RunData) -> None:
    @app.callback(
        Output("counters-table", "options"),
        Output("counters-table", "value"),
        Output("counters-column", "options"),
        Output("counters-column", "value"),
        Output("counters-graph", "figure"),
        Input("counters-host", "value"),
        Input("counters-table", "value"),
        Input("counters-column", "value"),
    )
    def draw_counters(host: str, table: str | None, column: str | None) -> tuple[Any, ...]:
        names = counter_series.sources(data.run_root, host) if host else []
        if not names:
            return [], None, [], None, figures.empty_figure("no counter tables on this host")
        table = table if table in names else names[0]
        df, derived = counter_series.read_source(data.run_root, host, table)
        columns = counter_series.numeric_columns(df)
        if not columns:
            return names, table, [], None, figures.empty_figure(f"no numeric columns in {table}")
        column = column if column in columns else columns[0]
        series, unit = series_for(df, column, derived)
        snap = data.snapshot
        windows = step_windows(snap, host)
        t0 = int(min([df["ts_ns"].min()] + ([windows["start_ns"].min()] if not windows.empty else [])))
        marks = [(int(r.step), int(r.start_ns), int(r.end_ns)) for r in windows.itertuples()]
        events = finding_marks(snap, windows) + counter_series.event_marks(data.run_root, host)
        fig = figures.counter_figure(series, t0, f"{host} · {table} · {units.label(column)}", unit, marks, events)
        options = [{"label": units.label(c) + (" (%)" if c.endswith("_pct") else ""), "value": c} for c in columns]
        return names, table, options, column, fig
