"""Memory: a rank x time heat-map of allocated memory, one rank's timeline (allocated, reserved, the
device's capacity), peaks per rank, the stacks that held each snapshot's peak (a flame graph of the
highest, a list for each), and the memory findings."""

from __future__ import annotations

from typing import Any

import pandas as pd
from dash import Dash, Input, Output, dcc, html
from scope.app import figures_memory
from scope.app.data import RunData, Snapshot
from scope.app.pages.common import analysis_hint, empty_state, finding_card, graph

PATH = "/memory"
TITLE = "Memory"
KINDS = ("memory_headroom_low", "memory_growth", "memory_imbalance", "fragmentation", "oom")


def _size(n: Any) -> str:
    n = int(n)
    if n <= 0:
        return "–"
    return f"{n / 2**30:.2f} GiB" if n >= 2**28 else f"{n / 2**20:.1f} MiB"


def layout(data: RunData, params: dict[str, str]) -> html.Div:
    snap = data.snapshot
    timeline, ranks = snap.table("memory_timeline"), snap.table("memory_ranks")
    sites = snap.table("memory_peak_sites")
    if (timeline is None or timeline.empty) and sites is None:
        return empty_state(
            "No memory data",
            "Profile with profile_memory=True (the traces' [memory] events), or put allocator snapshots "
            "(torch.cuda.memory._dump_snapshot) beside the traces.",
            *([] if snap.analyzed else [analysis_hint(data)]),  # analyzed with no memory data: nothing to run
        )
    cards = [finding_card(f, i) for i, f in enumerate(snap.findings) if f.kind in KINDS]
    body: list[Any] = [html.H2("Memory"), *cards]
    if timeline is not None and not timeline.empty:
        body += _traced(timeline, ranks, params, snap.table("memory_peak_allocators"))
    if sites is not None and not sites.empty:
        body += [
            html.H2("What held each snapshot's peak"),
            *_flames(snap.table("memory_peak_flame"), snap.table("memory_snapshot_timeline")),
            _sites_tree(sites),
        ]
    return html.Div(body)


def _flames(flame: pd.DataFrame | None, spans: pd.DataFrame | None) -> list[Any]:
    """The snapshot with the highest peak: its replayed timeline (at a bounded level of detail) and its
    peak as a flame graph (the others: the list below)."""
    if flame is None or flame.empty:
        return []
    roots = flame[flame["parent"] < 0].sort_values("bytes", ascending=False)
    top = roots.iloc[0]

    def of_top(table: pd.DataFrame) -> pd.DataFrame:
        same = (table["file"] == top["file"]) & (table["rank"] == top["rank"])
        return table[same & (table["device"] == top["device"])]

    who = f"rank {top['rank']} " if top["rank"] >= 0 else ""
    title = f"{who}cuda:{top['device']}: {_size(top['bytes'])} live at the peak, by stack (outermost frame on top)"
    out: list[Any] = []
    if spans is not None and not spans.empty:
        name = str(top["file"]).rsplit("/", 1)[-1]
        out += [
            html.H4(f"{who}cuda:{top['device']} — {name}: allocated over the trace (lowest to highest per span)"),
            graph("memory-snapshot-timeline", figures_memory.snapshot_timeline(of_top(spans))),
        ]
    return [*out, html.H4(title), graph("memory-flame", figures_memory.peak_flame(of_top(flame)))]


def _devices(timeline: pd.DataFrame) -> list[str]:
    devices = sorted(timeline["device"].unique(), key=lambda d: (d == "cpu", d))
    return [str(d) for d in devices]


def _traced(
    timeline: pd.DataFrame, ranks: pd.DataFrame | None, params: dict[str, str], allocators: pd.DataFrame | None
) -> list[Any]:
    devices = _devices(timeline)
    asked = params.get("device")
    device = asked if asked is not None and asked in devices else devices[0]
    rank_ids = sorted(int(r) for r in timeline["rank"].unique())
    top = _top_rank(ranks, device) if ranks is not None else rank_ids[0]
    return [
        html.H2("Ranks × time"),
        dcc.RadioItems(options=devices, value=device, id="memory-device", inline=True, className="radio"),
        graph("memory-heatmap", figures_memory.memory_heatmap(timeline, device)),
        html.H2("One rank over time"),
        dcc.Dropdown(options=rank_ids, value=top, id="memory-rank", clearable=False, style={"width": "12em"}),
        graph("memory-rank-graph", figures_memory.empty_figure("loading…")),
        html.H2("Peaks per rank"),
        _peaks_table(ranks) if ranks is not None else html.P("no per-rank table", className="muted"),
        *_allocators(allocators),
    ]


def _allocators(table: pd.DataFrame | None) -> list[Any]:
    """What held each rank's peak, by module and op (traces recorded with with_stack=True name modules)."""
    if table is None or table.empty:
        return []
    head = ["rank", "device", "module", "op", "allocating op", "live at the peak", "blocks"]
    rows = [
        html.Tr(
            [
                html.Td(int(r.rank)),
                html.Td(str(r.device)),
                html.Td(html.Code(str(r.module))),
                html.Td(html.Code(str(r.op))),
                html.Td(html.Code(str(r.leaf_op))),
                html.Td(_size(r.bytes)),
                html.Td(int(r.blocks)),
            ]
        )
        for r in table.sort_values(["rank", "device", "bytes"], ascending=[True, True, False]).itertuples()
    ]
    return [
        html.H2("What held each rank's peak, by module and op"),
        html.Table([html.Thead(html.Tr([html.Th(h) for h in head])), html.Tbody(rows)], id="memory-allocators"),
    ]


def _top_rank(ranks: pd.DataFrame, device: str) -> int:
    mine = ranks[ranks["device"] == device]
    return int(mine.loc[mine["peak_allocated"].idxmax(), "rank"]) if not mine.empty else int(ranks["rank"].min())


def _peaks_table(ranks: pd.DataFrame) -> html.Table:
    head = ["rank", "device", "peak allocated", "peak reserved", "capacity", "growth / step", "source"]
    rows = [
        html.Tr(
            [
                html.Td(int(r.rank)),
                html.Td(str(r.device)),
                html.Td(_size(r.peak_allocated)),
                html.Td(_size(r.peak_reserved)),
                html.Td(_size(getattr(r, "capacity", -1))),
                html.Td(_size(r.growth_per_step) if r.growth_per_step > 0 else "–"),
                html.Td(str(r.source)),
            ]
        )
        for r in ranks.sort_values(["device", "rank"]).itertuples()
    ]
    return html.Table([html.Thead(html.Tr([html.Th(h) for h in head])), html.Tbody(rows)], id="memory-peaks")


def _sites_tree(sites: pd.DataFrame) -> html.Div:
    """Each snapshot's peak sites, largest first, with the stack of each indented under it."""
    parts: list[Any] = []
    for (path, rank, device), rows in sites.groupby(["file", "rank", "device"], sort=True):
        who = f"rank {rank} " if rank >= 0 else ""
        parts.append(html.H4(f"{who}cuda:{device} — {str(path).rsplit('/', 1)[-1]}"))
        items = [
            html.Li(
                [
                    html.Span(f"{_size(r.bytes)} in {r.blocks} block(s), {r.phase}: ", className="muted"),
                    html.Code(str(r.site)),
                    html.Details([html.Summary("stack"), html.Pre(str(r.stack))]),
                ]
            )
            for r in rows.sort_values("order").itertuples()
        ]
        parts.append(html.Ul(items, className="memory-sites"))
    return html.Div(parts, id="memory-sites")


def register(app: Dash, data: RunData) -> None:
    @app.callback(Output("memory-rank-graph", "figure"), Input("memory-rank", "value"), Input("memory-device", "value"))
    def draw_rank(rank: int, device: str) -> Any:
        snap: Snapshot = data.snapshot
        timeline, ranks = snap.table("memory_timeline"), snap.table("memory_ranks")
        capacity = -1
        if ranks is not None and "capacity" in ranks.columns:
            mine = ranks[(ranks["rank"] == rank) & (ranks["device"] == device)]
            capacity = int(mine["capacity"].iloc[0]) if not mine.empty else -1
        return figures_memory.rank_timeline(timeline, int(rank), str(device), capacity)

    @app.callback(Output("memory-heatmap", "figure"), Input("memory-device", "value"))
    def draw_heatmap(device: str) -> Any:
        return figures_memory.memory_heatmap(data.snapshot.table("memory_timeline"), str(device))
