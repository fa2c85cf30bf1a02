"""Timeline: per-rank lanes over a chosen step window on one clock, one collective highlighted across ranks.

Only the chosen lanes (at most aggregate.MAX_LANES ranks) are read, one rank's window at a time, and
each lane is reduced to a bounded number of segments before anything goes to the browser.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pandas as pd
from dash import Dash, Input, Output, dcc, html
from scope.app import aggregate, critical_path_overlay, figures, figures_timeline
from scope.app.data import RunData, Snapshot
from scope.app.links import int_param
from scope.app.pages.common import analysis_hint, empty_state, graph

from scope import units

PATH = "/timeline"
TITLE = "Timeline"
MAX_SPAN = 8
MAX_OPTIONS = 200
_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="scope-timeline")


def stage_of(snap: Snapshot) -> dict[int, int]:
    pipeline = snap.table("pipeline")
    if pipeline is None or not {"stage", "rank"} <= set(pipeline.columns):
        return {}
    return {int(r): int(s) for r, s in pipeline.groupby("rank")["stage"].first().items()}


def slowest_ranks(snap: Snapshot, step: int | None, count: int = 4) -> list[int]:
    """The ranks with the most compute (else the longest step) at `step`: where a hot cell hides."""
    source = snap.table("breakdown")
    column = "compute_us" if source is not None and "compute_us" in source.columns else "step_us"
    source = source if column == "compute_us" else snap.steps
    if source is None or source.empty or step is None or column not in source.columns:
        return []
    rows = source[source["step"] == step]
    return [int(r) for r in rows.nlargest(count, column)["rank"]]


def default_lanes(snap: Snapshot, focus: int | None, step: int | None = None) -> list[int]:
    """The focus rank, the ranks findings name, the slowest at this step, then an even sample of the rest."""
    focus_ranks = [focus] if focus is not None else []
    for f in snap.findings[:5]:
        focus_ranks += [int(r) for r in f.ranks[:4]]
    focus_ranks += slowest_ranks(snap, step)
    return aggregate.choose_lanes(snap.ranks, focus_ranks)


def pipeline_note(snap: Snapshot, pipeline: bool) -> list[Any]:
    """Why the pipeline view is off, said only where one would look for it: a run with point-to-point
    sends and receives (how pipeline stages talk) in which the analysis found no stages. A data-parallel
    run has no stages to miss, and gets no note."""
    coll = snap.table("collectives")
    p2p = coll is not None and "p2p" in coll.columns and bool(coll["p2p"].fillna(False).astype(bool).any())
    if pipeline or not p2p:
        return []
    return [
        html.P(
            "No pipeline stages in this run's analysis, though its ranks send to each other point to point: "
            "the pipeline view appears when the pipeline analyzer finds stages.",
            className="muted",
        )
    ]


def layout(data: RunData, params: dict[str, str]) -> html.Div:
    snap = data.snapshot
    if snap.steps.empty:
        return empty_state(
            "No steps to show", "The timeline needs ProfilerStep windows in the traces.", analysis_hint(data)
        )
    steps = sorted(int(s) for s in snap.steps["step"].unique())
    focus = int_param(params, "rank")
    step = int_param(params, "step")
    pg, seq = params.get("pg"), int_param(params, "seq")
    if step is None and pg is not None and seq is not None:
        step = _step_of_collective(data, snap, pg, seq, focus)
    step = step if step in steps else steps[len(steps) // 2]
    lanes = default_lanes(snap, focus, step)
    pipeline = bool(stage_of(snap))
    view = "pipeline" if params.get("view") == "pipeline" and pipeline else "ranks"
    step_input = (
        dcc.Dropdown(options=steps, value=step, id="timeline-step", clearable=False)
        if len(steps) <= 300
        else dcc.Input(type="number", min=steps[0], max=steps[-1], value=step, id="timeline-step", debounce=True)
    )
    view_options = [
        {"label": "ranks", "value": "ranks"},
        {"label": "pipeline stages", "value": "pipeline", "disabled": not pipeline},
    ]
    controls = html.Div(
        [
            html.Label(["step", step_input], className="control"),
            html.Label(
                [
                    "steps shown",
                    dcc.Input(type="number", min=1, max=MAX_SPAN, value=1, id="timeline-span", debounce=True),
                ],
                className="control",
            ),
            html.Label(
                [
                    "ranks",
                    dcc.Input(
                        type="text",
                        value=aggregate.format_ranks(lanes),
                        id="timeline-ranks",
                        debounce=True,
                        placeholder="e.g. 0-7, 12",
                    ),
                ],
                className="control wide",
            ),
            html.Label(
                [
                    "highlight collective",
                    dcc.Dropdown(id="timeline-collective", value=f"{pg}|{seq}" if pg is not None else None),
                ],
                className="control wide",
            ),
            html.Label(
                ["view", dcc.RadioItems(options=view_options, value=view, id="timeline-view", inline=True)],
                className="control",
            ),
        ],
        className="controls",
    )
    note = pipeline_note(snap, pipeline)
    return html.Div(
        [
            html.H2("Timeline"),
            controls,
            *note,
            dcc.Store(id="timeline-focus", data=focus),
            html.Div(id="timeline-notes", className="muted"),
            graph("timeline-graph", figures.empty_figure("loading…")),
            html.Div(id="timeline-extra"),
        ]
    )


def _step_of_collective(data: RunData, snap: Snapshot, pg: str, seq: int, rank: int | None) -> int | None:
    for r in ([rank] if rank is not None else []) + snap.ranks[:4]:
        coll = data.rank_collectives(r)
        hit = coll[(coll["pg"].astype(str) == str(pg)) & (coll["seq"] == seq)] if not coll.empty else coll
        if not hit.empty:
            return int(hit["step"].iloc[0])
    return None


def window_collectives(data: RunData, lanes: list[int], lo: int, hi: int) -> pd.DataFrame:
    frames = []
    for rank in lanes:
        coll = data.rank_collectives(rank)
        if not coll.empty:
            frames.append(coll[(coll["ts_ns"] < hi) & (coll["end_ns"] > lo)])
    if not frames:
        return pd.DataFrame()
    out = pd.concat(frames, ignore_index=True)
    out["key"] = out["pg"].astype(str) + "|" + out["seq"].astype(str)
    return out


def collective_options(coll: pd.DataFrame) -> tuple[list[dict[str, str]], str | None]:
    """Dropdown options for the window's collectives, and the one with the largest arrival skew."""
    if coll.empty:
        return [], None
    agg = coll.groupby("key").agg(
        op=("op", "first"),
        pg=("pg", "first"),
        seq=("seq", "first"),
        start=("ts_ns", "min"),
        last=("ts_ns", "max"),
        bytes=("bytes", "max"),
    )
    agg["skew_ms"] = (agg["last"] - agg["start"]) / 1e6
    agg = agg.sort_values("start").head(MAX_OPTIONS)
    options = [
        {"label": f"{r.op} pg {r.pg} #{r.seq} · {_size(r.bytes)} · skew {r.skew_ms:.2f} ms", "value": key}
        for key, r in agg.iterrows()
    ]
    return options, str(agg["skew_ms"].idxmax())


def _size(nbytes: Any) -> str:
    if nbytes is None or pd.isna(nbytes) or nbytes < 0:
        return "size unknown"
    return units.nbytes(float(nbytes))


def build_timeline(
    data: RunData, step: int, span: int, lanes: list[int], coll_key: str | None, view: str, focus: int | None
) -> tuple[Any, list[dict[str, str]], str | None, str]:
    snap = data.snapshot
    span = max(1, min(MAX_SPAN, int(span or 1)))
    stages = stage_of(snap) if view == "pipeline" else {}
    if stages:
        lanes = sorted(lanes, key=lambda r: (stages.get(r, 1 << 30), r))
    win = snap.steps[snap.steps["rank"].isin(lanes) & snap.steps["step"].between(step, step + span - 1)]
    if win.empty:
        return figures.empty_figure(f"no step {step} on the chosen ranks"), [], None, ""
    lo, hi = int(win["start_ns"].min()), int(win["end_ns"].max())
    own = win.groupby("rank").agg(lo=("start_ns", "min"), hi=("end_ns", "max"))
    lanes = [r for r in lanes if r in own.index]

    def one_lane(rank: int) -> pd.DataFrame:
        r_lo, r_hi = int(own.at[rank, "lo"]), int(own.at[rank, "hi"])
        data.rank_collectives(rank)  # warm its cache from this worker thread too
        return data.memo(
            ("lane", rank, lo, hi, r_lo, r_hi),
            lambda: aggregate.lane_segments(data.events_window(rank, lo, hi), r_lo, r_hi),
        )

    segments = list(_POOL.map(one_lane, lanes))
    labels = [f"stage {stages[r]} · rank {r}" if r in stages else f"rank {r}" for r in lanes]
    coll = window_collectives(data, lanes, lo, hi)
    options, widest = collective_options(coll)
    keys = {o["value"] for o in options}
    coll_key = coll_key if coll_key in keys else widest
    highlight = None
    if coll_key:
        hit = coll[coll["key"] == coll_key]
        index = {r: i for i, r in enumerate(lanes)}
        highlight = pd.DataFrame(
            {
                "lane": hit["rank"].map(index),
                "start_ns": hit["ts_ns"],
                "end_ns": hit["end_ns"],
                "rank": hit["rank"],
                "label": f"{hit['op'].iloc[0]} #{hit['seq'].iloc[0]}",
            }
        )
    marks_rank = focus if focus in own.index else lanes[0]
    marks = win[win["rank"] == marks_rank][["step", "start_ns"]].itertuples(index=False)
    focus_lane = lanes.index(focus) if focus in lanes else None
    title = f"Step {step}" + (f"–{step + span - 1}" if span > 1 else "") + f", {len(lanes)} ranks"
    fig = figures_timeline.timeline_figure(
        list(zip(labels, segments, strict=True)),
        lo,
        title,
        highlight,
        [(int(s), int(t)) for s, t in marks],
        bubbles=bool(stages),
        focus_lane=focus_lane,
    )
    critical_path_overlay.add_critical_path(fig, snap.table("critical_path"), lanes, range(step, step + span), lo)
    n_segments = sum(len(s) for s in segments)
    note = (
        f"{len(lanes)} of {len(snap.ranks):,} ranks, {n_segments:,} segments drawn "
        f"(events merged below ~{(hi - lo) / 4e9:.3f} ms)." + overall_last_arriver(snap, coll_key, lanes)
    )
    return fig, options, coll_key, note


def overall_last_arriver(snap: Snapshot, coll_key: str | None, lanes: list[int]) -> str:
    """The last arriver across all ranks (from the collectives analyzer), which the lanes may not include."""
    table = snap.table("collectives")
    if not coll_key or table is None or not {"pg", "seq", "last_arriver"} <= set(table.columns):
        return ""
    pg, seq = coll_key.rsplit("|", 1)
    row = table[(table["pg"].astype(str) == pg) & (table["seq"] == int(seq))]
    if row.empty or pd.isna(row["last_arriver"].iloc[0]):
        return ""
    rank = int(row["last_arriver"].iloc[0])
    skew = f" ({row['skew_us'].iloc[0] / 1000:.2f} ms after the first)" if "skew_us" in row.columns else ""
    shown = "" if rank in lanes else " (not shown: add it to the ranks)"
    return f" Across all ranks, rank {rank} arrives last at this collective{skew}{shown}."


def register(app: Dash, data: RunData) -> None:
    @app.callback(
        Output("timeline-graph", "figure"),
        Output("timeline-collective", "options"),
        Output("timeline-collective", "value"),
        Output("timeline-notes", "children"),
        Output("timeline-extra", "children"),
        Input("timeline-step", "value"),
        Input("timeline-span", "value"),
        Input("timeline-ranks", "value"),
        Input("timeline-collective", "value"),
        Input("timeline-view", "value"),
        Input("timeline-focus", "data"),
    )
    def draw_timeline(
        step: int | None, span: int | None, ranks_text: str, coll_key: str | None, view: str, focus: int | None
    ) -> tuple[Any, ...]:
        snap = data.snapshot
        if step is None or snap.steps.empty:
            return figures.empty_figure("choose a step"), [], None, "", None
        lanes = aggregate.parse_ranks(ranks_text, snap.ranks) or default_lanes(snap, focus, int(step))
        fig, options, key, note = build_timeline(data, int(step), span or 1, lanes, coll_key, view, focus)
        return fig, options, key, note, pipeline_panel(snap, int(step)) if view == "pipeline" else None


def pipeline_panel(snap: Snapshot, step: int) -> Any:
    pipeline = snap.table("pipeline")
    if pipeline is None:
        return None
    rows = pipeline[pipeline["step"] == step] if "step" in pipeline.columns else pipeline
    rows = rows if not rows.empty else pipeline
    numeric = [
        c
        for c in ("bubble_pct", "theory_pct", "bubble_us", "warmup_us", "steady_us", "cooldown_us")
        if c in rows.columns
    ]
    per_stage = rows.groupby("stage")[numeric].mean().reset_index()
    return html.Div(graph("timeline-bubbles", figures.bubble_figure(per_stage)), className="panel")
