"""Goodput: where the job's wall time went across attempts (a strip per attempt), checkpoints and cadence."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import pandas as pd
import plotly.graph_objects as go
from dash import Dash, html
from scope.analyzers import analyzer
from scope.app.data import RunData
from scope.app.links import href
from scope.app.pages.common import analysis_hint, empty_state, facts, finding_card, frame_table, graph

from scope import units
from scope.render.goodput import fmt_s, when

if TYPE_CHECKING:
    from scope.goodput_result import GoodputResult

PATH = "/goodput"
TITLE = "Goodput"
# The job-level findings this page shows: the kinds goodput's record declares.
JOB_KINDS = frozenset(analyzer("goodput").kinds)
# One colour per bucket: productive green, losses warm, waiting grey.
COLORS = {
    "productive": "#2ca02c",
    "warmup": "#98df8a",
    "training_unseen": "#d9f0d3",  # (inside training, no step line: productivity unknown)
    "initialization": "#9ecae1",
    "checkpoint_save": "#ff7f0e",
    "checkpoint_load": "#ffbb78",
    "evaluation": "#c5b0d5",
    "redone": "#d62728",
    "failure_to_restart": "#7f7f7f",
    "queued": "#c7c7c7",
    "between_jobs": "#ececec",
    "hung": "#8c564b",
    "data_stall": "#bcbd22",
    "unexplained": "#dddddd",
}


def strip_figure(timeline: pd.DataFrame, attempts: pd.DataFrame | None = None) -> go.Figure:
    """A Gantt-like strip: one row per attempt, each span coloured by its bucket, time from the job's start;
    each attempt that did not complete is labelled at its end with how it ended (and its diagnosis)."""
    fig = go.Figure()
    t0 = float(timeline["start"].min())
    rows = timeline.assign(
        row=timeline["attempt"].map(lambda a: f"attempt {int(a)}" if a >= 0 else "between"),
        x0=timeline["start"] - t0,
        width=timeline["end"] - timeline["start"],
    )
    for bucket, part in rows.groupby("bucket", sort=False):
        fig.add_trace(
            go.Bar(
                x=part["width"],
                base=part["x0"],
                y=part["row"],
                orientation="h",
                name=str(bucket),
                marker_color=COLORS.get(str(bucket), "#333333"),
                hovertemplate="%{y}: " + str(bucket) + " %{base:.1f} s + %{x:.1f} s<extra></extra>",
            )
        )
    for a in _ended_early(attempts):
        fig.add_annotation(
            x=float(a["end"]) - t0,
            y=f"attempt {int(a['attempt'])}",
            text=_ending_label(a),
            showarrow=True,
            arrowhead=2,
            ax=0,
            ay=-22,
            font={"size": 11, "color": "#d62728" if a["ended"] == "failed" else "#555555"},
        )
    fig.update_layout(
        barmode="overlay",
        height=140 + 40 * rows["row"].nunique(),
        margin={"l": 90, "r": 20, "t": 20, "b": 40},
        xaxis_title="seconds since the job started",
        yaxis={"autorange": "reversed"},
        legend={"orientation": "h", "y": -0.35},
    )
    return fig


def _ended_early(attempts: pd.DataFrame | None) -> list[dict[str, Any]]:
    if attempts is None or attempts.empty or "ended" not in attempts.columns:
        return []
    rows = attempts[attempts["ended"].isin(["failed", "restarted", "membership_change"])]
    return [r for r in rows.to_dict("records") if r.get("end") == r.get("end") and r.get("end") is not None]


def _text(value: Any) -> str:
    return "" if value is None or value != value else str(value)


def _int_text(value: Any) -> str:
    """A step number as an integer (a Parquet column with a null in it reads back as floats)."""
    number = _num(value)
    return f"{int(number):,}" if number is not None else "?"


def _ending_label(a: dict[str, Any]) -> str:
    what = str(a["ended"]).replace("_", " ")
    diag = _text(a.get("diagnosis_id"))
    return f"{what}: {diag}" if diag else what


def attempt_items(attempts: pd.DataFrame) -> html.Ul:
    """One line per attempt: steps, how it ended (per-rank exit codes and signals), the membership change it
    started with, and the diagnosis that explains a failure (linked to the failure page)."""
    items = []
    for a in attempts.to_dict("records"):
        first = a.get("from_step") if _text(a.get("from_step")) else a.get("first_step")
        head = f"attempt {int(a['attempt'])}: steps {_int_text(first)}..{_int_text(a.get('last_step'))}"
        if _text(a.get("world_size")):
            head += f", world size {int(a['world_size'])}"
        parts: list[Any] = [html.B(head), f" — {str(a['ended']).replace('_', ' ')}"]
        if _text(a.get("membership")):
            parts.append(f" (membership change: {a['membership']})")
        if _text(a.get("end_state")):
            parts.append(f"; ranks ended: {a['end_state']}")
        if _text(a.get("diagnosis")):
            parts += [html.Br(), "diagnosis: ", html.A(a["diagnosis"][:200], href=href("failure"))]
        items.append(html.Li(parts, className=f"attempt-{a['ended']}"))
    return html.Ul(items, id="goodput-attempt-list")


def _num(value: Any) -> float | None:
    """A finite number, else None (NaN from a Parquet null, infinity from a damaged record)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _human(seconds: Any) -> str | None:
    value = _num(seconds)
    return fmt_s(value) if value is not None else None


def _summary_facts(result: GoodputResult) -> list[tuple[str, Any]]:
    """The job's figures, from goodput's typed result (the object `scope goodput` prints)."""
    wall, pct, cad = _num(result.wall_s), _num(result.goodput_pct), result.cadence
    # litgpt's `iter N | step M`: the redone count and the step times are the iterations' (steps_text's words)
    unit = "iteration" if result.iterations_completed is not None else "step"
    redone: Any = result.steps_redone
    if redone and result.steps_redone_is_lower_bound:
        counted = f"{int(redone):,} iterations" if unit == "iteration" else f"{int(redone):,}"
        redone = f"at least {counted} (the {unit} a later attempt resumed from is not in the log)"
    elif redone and unit == "iteration":
        redone = f"{int(redone):,} iterations"
    done: Any = result.steps_completed
    if done is not None and result.iterations_completed is not None:
        done = f"{int(done):,} optimizer steps, over {result.iterations_completed:,} iterations"
    elif done and result.steps_completed_is_lower_bound:
        done = f"at least {int(done):,} (the log starts mid-run, printing every few steps)"
    between = _num(result.buckets.get("between_jobs"))  # (not the job's: left out of the goodput %)
    held = f" (less {fmt_s(between)} between jobs)" if between else ""
    out: list[tuple[str, Any]] = [
        ("goodput", _goodput_fact(pct, _num(result.goodput_pct_at_most), wall, held, result.wall_is_lower_bound)),
        ("wall time", _wall_fact(wall, result.wall_is_lower_bound)),
        ("steps completed", done),
        ("steps redone", redone),
        ("steps discarded (a relaunch from scratch)", result.steps_discarded or None),
        ("restarts", result.restarts),
        ("of which membership changes (not failures)", result.membership_changes or None),
        ("ideal step time (median)", _human(result.ideal_step_s)),
        (f"slow steps (> {result.slow_step_factor}x ideal)", result.slow_steps),
        ("checkpoint cost (median blocking save)", _human(cad.get("checkpoint_cost_s"))),
        ("checkpoint interval used", _human(cad.get("interval_used_s"))),
        ("Young/Daly interval sqrt(2*C*MTBF)", _human(cad.get("young_s"))),
        ("hours per week it would save", cad.get("hours_per_week_saved")),
        ("cadence note", cad.get("note")),
        ("not computed", "; ".join(result.cannot) or None),
    ]
    return [(k, v) for k, v in out if v is not None and v == v]


def _wall_fact(wall: float | None, lower_bound: bool) -> str:
    """The wall time, `at least` where it is only a training clock's span."""
    if not wall:
        return "unknown (no times)"
    return f"at least {fmt_s(wall)}" if lower_bound else fmt_s(wall)


def _goodput_fact(
    pct: float | None, at_most: float | None, wall: float | None, held: str, wall_is_lower_bound: bool = False
) -> str | None:
    """The goodput over the wall (less the time between jobs), or, where no step line shows what the training
    did or the wall is only a training clock's span, its bound over the same time (`scope goodput`'s words);
    None where neither is known."""
    if not wall:
        return None
    if pct is not None:
        return f"{pct:.1f}% of {fmt_s(wall)}{held}"
    if at_most is not None and wall_is_lower_bound:
        return f"unknown (the wall is at least the training clock's {fmt_s(wall)}), at most {at_most:.1f}%"
    if at_most is not None:
        return f"unknown (no step line shows what the training did), at most {at_most:.1f}% of {fmt_s(wall)}{held}"
    return None


def attempts_view(attempts: pd.DataFrame) -> pd.DataFrame:
    """The attempt records in words that fit the page: a date (or the time since the job's start for a log
    without dates), a duration, the steps it ran from its first step (not its first progress line)."""
    starts = [t for t in (_num(v) for v in attempts.get("start", [])) if t is not None]
    origin = min(starts) if starts else None
    rows = []
    for a in attempts.to_dict("records"):
        first = _num(a.get("from_step")) if "from_step" in a else _num(a.get("first_step"))
        last, resume = _num(a.get("last_step")), _num(a.get("resume_step"))
        steps = f"{int(first):,}..{int(last):,}" if first is not None and last is not None else "–"
        resumed = "–" if resume is None else f"{int(resume):,}" + ("" if a.get("resume_known") is not False else " ?")
        rows.append(
            {
                "attempt": int(a["attempt"]),
                "started (UTC)": when(_num(a.get("start")), origin),
                "duration": _human(a.get("duration_s")) or "–",
                "steps": steps,
                "resumed from step": resumed,
                "ended": str(a.get("ended", "")).replace("_", " "),
                "world size": int(w) if (w := _num(a.get("world_size"))) is not None else "–",
            }
        )
    return pd.DataFrame(rows)


def checkpoints_view(checkpoints: pd.DataFrame, origin: float | None) -> pd.DataFrame:
    """Checkpoint saves and loads with their units: when, how long they blocked, size, throughput."""
    rows = []
    for c in checkpoints.to_dict("records"):
        size = _num(c.get("bytes"))
        step = _num(c.get("step"))
        rows.append(
            {
                "op": c.get("op"),
                "step": f"{int(step):,}" if step is not None else "–",
                "started (UTC)": when(_num(c.get("start")), origin),
                "blocked": _human(c.get("blocking_s")) or "unknown",
                "size": units.nbytes(size) if size is not None else "–",
                "throughput": units.nbytes(rate) + "/s" if (rate := _num(c.get("throughput_bytes_per_s"))) else "–",
                "ended": "yes" if c.get("ended") else "no end line",
            }
        )
    return pd.DataFrame(rows)


def layout(data: RunData, params: dict[str, str]) -> html.Div:
    snap = data.snapshot
    if not snap.analyzed:
        return html.Div([html.H2(TITLE), empty_state("Not analyzed yet", analysis_hint(data), data.message)])
    result = snap.analysis.goodput if snap.analysis is not None else None
    buckets = snap.table("goodput")
    if result is None or buckets is None:
        return html.Div(
            [
                html.H2(TITLE),
                empty_state(
                    "No training progress found",
                    "No scope run records (ranks/*/attempts.jsonl) and no log line of a known training framework.",
                    "Run the job under `scope run`, or put its logs in the folder, then analyze again.",
                ),
            ]
        )
    children: list[Any] = [html.H2(TITLE), facts(_summary_facts(result))]
    timeline = snap.table("goodput_timeline")
    attempts = snap.table("attempts")
    if timeline is not None and not timeline.empty:
        children += [html.H3("Attempts"), graph("goodput-strip", strip_figure(timeline, attempts))]
    if attempts is not None and not attempts.empty:
        children.append(attempt_items(attempts))
    shown = buckets[buckets["seconds"].fillna(0) > 0] if "seconds" in buckets.columns else buckets
    children += [html.H3("Where the time went"), frame_table(shown, max_rows=20, table_id="goodput-buckets")]
    if attempts is not None and not attempts.empty:
        view = attempts_view(attempts)
        children += [html.H3("Attempt records"), frame_table(view, max_rows=50, table_id="goodput-attempts")]
    checkpoints = snap.table("checkpoints")
    if checkpoints is not None and not checkpoints.empty:
        origin = _job_start(timeline)
        table = frame_table(checkpoints_view(checkpoints, origin), max_rows=50, table_id="goodput-checkpoints")
        children += [html.H3("Checkpoints"), table]
    cards = [finding_card(f, i) for i, f in enumerate(snap.findings) if f.kind in JOB_KINDS]
    if cards:
        children += [html.H3("Findings"), *cards]
    return html.Div(children)


def _job_start(timeline: pd.DataFrame | None) -> float | None:
    if timeline is None or timeline.empty:
        return None
    return _num(timeline["start"].min())


def register(app: Dash, data: RunData) -> None:
    """Static page: its content changes only with the data version."""
