"""Live: what the live detector says about a run while it runs (RUN/live/events.jsonl, the heartbeats).

The page body is re-read on every tick of the dashboard's refresh interval, so it follows the run as the
launcher's detector (`scope run`) or `scope watch` writes events; nothing here judges anything itself.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from dash import Dash, Input, Output, html
from scope.app.data import RunData
from scope.app.pages.common import empty_state

from scope.live.monitor import EVENTS
from scope.live.tail import read_regular, to_heartbeat

PATH = "/live"
TITLE = "Live"
MAX_EVENTS_BYTES = 4 << 20
RECENT = 20


def read_events(run_dir: Path) -> list[dict[str, Any]]:
    """The recorded live events (guarded: a regular file, bounded; damaged lines skipped)."""
    data = read_regular(run_dir / EVENTS, 0, MAX_EVENTS_BYTES) or b""
    out = []
    for raw in data.splitlines():
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        well_formed = isinstance(event, dict) and isinstance(event.get("finding"), dict)
        if well_formed and event.get("action") in ("new", "update", "clear"):
            out.append(event)
    return out


def open_findings(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """key -> the event that opened a finding not cleared since."""
    current: dict[str, dict[str, Any]] = {}
    for event in events:
        if event["action"] in ("new", "update"):
            current[str(event.get("key"))] = event
        else:
            current.pop(str(event.get("key")), None)
    return current


def _rank_rows(run_dir: Path) -> list[Any]:
    rows = []
    folder = run_dir / "ranks"
    for sub in sorted(folder.glob("*"), key=lambda p: int(p.name) if p.name.isdigit() else -1):
        if not sub.name.isdigit():
            continue
        data = read_regular(sub / "heartbeat.json", 0, 1 << 16)
        try:
            beat = to_heartbeat(int(sub.name), json.loads(data)) if data else None
        except ValueError:
            beat = None
        if beat is None:
            continue
        at = time.strftime("%H:%M:%S", time.gmtime(beat.step_t)) if beat.step_t else "-"
        rows.append(html.Tr([html.Td(str(beat.rank)), html.Td(str(beat.step)), html.Td(at), html.Td(beat.state)]))
    return rows


def body(run_dir: Path) -> html.Div:
    events = read_events(run_dir)
    ranks = _rank_rows(run_dir)
    if not events and not ranks:
        return empty_state(
            "No live data",
            "Run the job under `scope run` (live detection is on by default) or follow it with `scope watch RUN`.",
        )
    current = open_findings(events)
    cards = [
        html.Div(
            [html.Strong(f"{e['finding']['kind']} "), html.Span(e["finding"]["summary"])],
            className=f"finding severity-{e['finding'].get('severity', 'warning')}",
            id=f"live-open-{i}",
        )
        for i, e in enumerate(current.values())
    ]
    recent = [
        html.Li(f"step {e.get('step', '?')}: {e['action']} {e['finding']['kind']} (ranks {e['finding']['ranks']})")
        for e in events[-RECENT:][::-1]
    ]
    head = html.Thead(html.Tr([html.Th(c) for c in ("rank", "step", "last step at (UTC)", "state")]))
    return html.Div(
        [
            html.H3(f"{len(current)} open finding{'s' if len(current) != 1 else ''}", id="live-headline"),
            html.Div(cards or [html.P("nothing stands out", className="muted")], id="live-open"),
            html.H4("Events"),
            html.Ul(recent or [html.Li("none yet")], id="live-events"),
            html.H4("Ranks"),
            html.Table([head, html.Tbody(ranks)], className="table", id="live-ranks"),
        ]
    )


def layout(data: RunData, params: dict[str, Any]) -> html.Div:
    return html.Div([html.H2(TITLE), html.Div(body(data.run_root), id="live-body")])


def register(app: Dash, data: RunData) -> None:
    @app.callback(Output("live-body", "children"), Input("live-tick", "n_intervals"), prevent_initial_call=True)
    def refresh(_n: int | None) -> Any:
        return body(data.run_root)
