"""Small components every page uses: empty states, finding cards, plain tables."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from dash import dcc, html
from scope.app.links import finding_links

from scope import units
from scope.finding import Finding

TABLE_ROWS = 25


def empty_state(title: str, *lines: Any) -> html.Div:
    """What a page shows when its data is absent, and how to get it."""
    return html.Div([html.H4(title), *[html.P(line) for line in lines]], className="empty-state")


def graph(graph_id: Any, figure: Any, **kwargs: Any) -> dcc.Graph:
    return dcc.Graph(
        id=graph_id,
        figure=figure,
        config={"displaylogo": False, "responsive": True, "modeBarButtonsToRemove": ["lasso2d", "select2d"]},
        **kwargs,
    )


def fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        if not math.isfinite(value):
            return "–"
        return f"{value:,.2f}" if abs(value) < 1e6 else f"{value:,.0f}"
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        from scope.app.aggregate import format_ranks

        return format_ranks(value) if all(isinstance(v, int) for v in value) else ", ".join(map(str, value))
    return str(value)


def finding_card(finding: Finding, index: int, focused: bool = False, links: bool = True) -> html.Div:
    """One finding as a card; `index` is its place in the analysis (the ids and links name it)."""
    severity, ranks, steps = finding.severity, finding.ranks, finding.steps
    where = []
    if ranks:
        where.append(f"ranks {fmt(list(ranks))}" if len(ranks) > 1 else f"rank {ranks[0]}")
    if steps:
        where.append(f"steps {fmt(list(steps))}" if len(steps) > 1 else f"step {steps[0]}")
    anchors = [
        dcc.Link(label, href=target, className="finding-link", id={"type": "finding-link", "index": index, "n": n})
        for n, (target, label) in enumerate(finding_links(finding, index))
    ]
    body = [
        html.Div(
            [
                html.Span(severity.upper(), className=f"badge badge-{severity}"),
                html.Span(finding.kind, className="finding-kind"),
                html.Span(" · ".join(where), className="finding-where"),
            ],
            className="finding-head",
        ),
        html.P(finding.summary, className="finding-summary"),
    ]
    shown = metric_items(finding.metrics)
    if shown:
        body.append(html.Div([html.Span(item, className="metric") for item in shown], className="finding-metrics"))
        meant = metric_definitions(finding.metrics, shown)
        if meant:
            body.append(html.P("; ".join(meant), className="finding-definitions muted"))
    if finding.suggestion:
        body.append(html.P(["Suggestion: ", finding.suggestion], className="finding-suggestion"))
    if links and anchors:
        body.append(html.Div(["Evidence: ", *_interleave(anchors)], className="finding-links"))
    classes = "finding-card" + (" focused" if focused else "")
    return html.Div(body, className=classes, id=f"finding-{index}")


def metric_items(metrics: dict[str, Any], limit: int = 8) -> list[str]:
    """'time lost: 84.3 ms', 'held up: 208 ms': a finding's scalar metrics with their units (scope.units).
    Nested values (per-group details, lists of records) are for --json, not a card."""
    out = []
    counted_in = metrics.get("time_lost_counted_in")
    for key, value in metrics.items():
        if key == "time_lost_counted_in" or isinstance(value, dict) or value in (None, "", []):
            continue
        if key == "time_lost_us" and counted_in:  # an effect: its time is its cause's, never "0 ms"
            out.append(f"{units.label(key)}: counted in {counted_in}")
            continue
        if isinstance(value, list | tuple):
            if not all(isinstance(v, int | str) for v in value):
                continue
            out.append(f"{units.label(key)}: {fmt(list(value))}")
        else:
            out.append(f"{units.label(key)}: {units.quantity(key, value)}")
        if len(out) >= limit:
            break
    return out


def metric_definitions(metrics: dict[str, Any], shown: list[str]) -> list[str]:
    """What the card's less obvious numbers mean (scope.units.DEFINITIONS), for those it shows."""
    labels = {item.split(":", 1)[0] for item in shown}
    return [units.DEFINITIONS[k] for k in metrics if k in units.DEFINITIONS and units.label(k) in labels]


def cell_text(column: str, value: Any) -> str:
    """A table cell: a number in the unit its column name says (scope.units), anything else as fmt."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, int | float) and not isinstance(value, bool) and units.has_unit(column):
        return units.quantity(column, value)
    return fmt(value)


def _interleave(links: list[Any]) -> list[Any]:
    out: list[Any] = []
    for i, link in enumerate(links):
        if i:
            out.append(" · ")
        out.append(link)
    return out


def frame_table(
    df: pd.DataFrame | None,
    columns: Sequence[str] | None = None,
    max_rows: int = TABLE_ROWS,
    table_id: str | None = None,
    row_class: Sequence[str] | None = None,
) -> html.Div:
    """A plain HTML table of the first rows (the server chose and sorted them)."""
    if df is None or df.empty:
        return html.Div("no rows", className="muted")
    cols = [c for c in (columns or df.columns) if c in df.columns]
    head = html.Thead(html.Tr([html.Th(units.label(str(c))) for c in cols]))  # words; the JSON keeps the names
    rows = []
    for i, (_, row) in enumerate(df.head(max_rows).iterrows()):
        cells = [html.Td(row[c] if hasattr(row[c], "to_plotly_json") else cell_text(c, row[c])) for c in cols]
        rows.append(html.Tr(cells, className=row_class[i] if row_class is not None else None))
    note = [] if len(df) <= max_rows else [html.Div(f"first {max_rows} of {len(df):,} rows", className="muted")]
    kwargs: dict[str, Any] = {"id": table_id} if table_id else {}
    return html.Div([html.Table([head, html.Tbody(rows)], className="data-table", **kwargs), *note])


def facts(items: Sequence[tuple[str, Any]]) -> html.Dl:
    children: list[Any] = []
    for key, value in items:
        if value in (None, "", []):
            continue
        children += [html.Dt(key), html.Dd(value if hasattr(value, "to_plotly_json") else fmt(value))]
    return html.Dl(children, className="facts")


def analysis_hint(data: Any) -> str:
    """How this run gets analyzed: already under way, or the command to run."""
    if data.analyzing:
        return "The analysis is running now; this page refreshes when it finishes."
    if data.can_analyze:
        return f"Run `scope analyze {data.input_root}` (the dashboard also does it on its own when inputs change)."
    return "This store has no analysis; run `scope analyze` on the run directory it came from."
