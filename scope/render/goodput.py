"""The terminal report of `scope goodput`: wall time by bucket, attempts, checkpoints, cadence, findings,
and what the input could not tell."""

from __future__ import annotations

import datetime as dt
import math
from typing import TYPE_CHECKING, Any

from scope.analyzers.goodput.sources import WALL_CLOCK_AFTER
from scope.analyzers.goodput.states import ranks_text

if TYPE_CHECKING:
    from scope.goodput_result import GoodputResult
    from scope.render import Style

STRIP_WIDTH = 60
# One letter per bucket in the attempt strip.
STRIP_LETTER = {
    "productive": "#",
    "warmup": "w",
    "training_unseen": "t",
    "initialization": "i",
    "checkpoint_save": "S",
    "checkpoint_load": "L",
    "evaluation": "e",
    "redone": "R",
    "failure_to_restart": "x",
    "queued": "q",
    "between_jobs": "_",
    "hung": "H",
    "data_stall": "d",
    "unexplained": ".",
}


def fmt_s(seconds: float | None) -> str:
    """A duration in the unit that fits it: ms, s, min or h."""
    if seconds is None or not math.isfinite(seconds):
        return "unknown"
    if seconds >= 3600:
        return f"{seconds / 3600:.2f} h"
    if seconds >= 120:
        return f"{seconds / 60:.1f} min"
    if 0 < seconds < 0.1:
        return f"{seconds * 1000:.1f} ms"
    return f"{seconds:.2f} s" if seconds < 10 else f"{seconds:.1f} s"


def is_date(t: float | None) -> bool:
    """A time on the wall clock (epoch seconds), as against one relative to a log's start (no dates in it)."""
    return t is not None and math.isfinite(t) and t >= WALL_CLOCK_AFTER


def when(t: float | None, origin: float | None = None) -> str:
    """A readable UTC date, or, for a log without dates, the time since the job's start (never 1970)."""
    if t is None or not math.isfinite(t):
        return "?"
    if is_date(t):
        return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    return f"+{fmt_s(t - (origin or 0.0))}"


def bytes_rate(bps: float | None) -> str:
    """A throughput in bytes per second, in the unit that fits (B/s .. GB/s)."""
    if bps is None or not math.isfinite(bps) or bps < 0:
        return "unknown"
    for unit, size in (("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3)):
        if bps >= size:
            return f"{bps / size:,.1f} {unit}"
    return f"{bps:,.0f} B/s"


def steps_text(report: GoodputResult) -> str:
    """Steps completed and redone, a redone count whose resume step the log does not show as a bound."""
    done = f"{report.steps_completed:,}" if report.steps_completed is not None else "unknown"
    if report.steps_completed_is_lower_bound and report.steps_completed:
        done = f"at least {done}"
    redone = f"{report.steps_redone:,}"
    if report.steps_redone_is_lower_bound and report.steps_redone:
        redone = f"at least {redone}"
    if report.iterations_completed is not None:  # (the step times below are then the iterations')
        iters = report.iterations_completed
        return f"{done} completed (optimizer steps, over {iters:,} iterations), {redone} iterations redone"
    if report.steps_discarded:  # (a relaunch from scratch: the run before it is left, not redone)
        return f"{done} completed, {redone} redone, {report.steps_discarded:,} discarded by a relaunch from scratch"
    return f"{done} completed, {redone} redone"


def summary_line(report: GoodputResult, see_also: bool = True) -> str:
    """Goodput in one line (`scope analyze`): the share of productive time, then every other bucket's;
    SEE_ALSO: with where the whole report is."""
    if not report.timed or report.wall_s is None or not math.isfinite(report.wall_s) or report.wall_s <= 0:
        return f"Goodput: unknown (no times in the logs); {report.steps_completed} steps (scope goodput)"
    wall = report.wall_s  # no times (steps only) above
    parts = [
        f"{name} {100 * seconds / wall:.1f}%"
        for name, seconds in report.buckets.items()
        if seconds and seconds > 0 and name != "productive"
    ]
    pct = "unknown (untimed steps)" if report.goodput_pct is None else f"{report.goodput_pct:.1f}%"
    if report.evaluation_only:
        pct = f"not applicable (no training: {report.evaluation_only})"
    if report.goodput_pct is None and report.goodput_pct_at_most is not None:
        why = "the wall is at least the training clock" if report.wall_is_lower_bound else "no step line"
        pct = f"unknown, at most {report.goodput_pct_at_most:.1f}% ({why})"
    between = report.buckets.get("between_jobs")
    # (the goodput and its bound divide by the wall less the time between jobs; the parts below by the wall)
    held = f" less {fmt_s(between)} between jobs" if between else ""
    head = f"Goodput {pct} of {fmt_s(wall)}{held} over {report.restarts + 1} attempt(s)"
    return head + (": " + ", ".join(parts) if parts else "") + (" (details: scope goodput PATH)" if see_also else "")


def _goodput_line(
    pct: float | None,
    between_jobs: float | None = None,
    at_most: float | None = None,
    bound_s: float | None = None,
    evaluation_only: str = "",
) -> str:
    if evaluation_only:  # no training asked for or shown: goodput does not apply (never 0%)
        return f"  goodput unknown, not applicable: no training in this log: {evaluation_only}"
    if pct is None and at_most is not None:  # no step line shows what the training did: a bound, never 0%
        # (divided as the goodput is: by the wall time less the time between jobs, where there is some)
        of = f" of the wall time less {fmt_s(between_jobs)} between jobs" if between_jobs else " of the wall time"
        return (
            f"  goodput unknown: no step line shows what the training did; at most {at_most:.1f}%{of} "
            f"(at most {fmt_s(bound_s)} productive: the time inside training)"
        )
    if pct is None:  # a wall time, but step lines with no time of their own, or no step line shown
        return "  goodput unknown (the step lines carry no time, or none is shown: see Not computed)"
    if between_jobs:
        return f"  goodput {pct:.1f}% (productive steps / wall time less {fmt_s(between_jobs)} between jobs)"
    return f"  goodput {pct:.1f}% (productive steps / wall time)"


def _goodput_args(d: dict[str, Any]) -> tuple[float | None, float | None, float | None, float | None, str]:
    """The goodput line's figures from the JSON contract (a file of an older version has no bounds)."""
    return (
        d["goodput_pct"],
        d["buckets"].get("between_jobs"),
        d.get("goodput_pct_at_most"),
        d.get("productive_at_most_s"),
        d.get("evaluation_only") or "",
    )


def render_goodput(report: GoodputResult) -> str:
    """The whole report (`scope goodput`); `scope analyze` shows its summary line (render/text.py)."""
    d = report.to_dict()
    out = [
        f"Goodput of {report.path}",
        f"  read: {', '.join(report.inputs[:6]) or 'nothing'}"
        + (f" and {len(report.inputs) - 6} more" if len(report.inputs) > 6 else ""),
    ]
    if report.timed and report.wall_is_lower_bound:  # a training clock only: the wall is at least its span
        clock = "the steps' training clock, stopped for validation and saves"
        out.append(f"  wall time at least {fmt_s(d['wall_s'])} ({clock})")
        out.append(
            f"  goodput unknown: at most {d['goodput_pct_at_most']:.1f}% (the validations, the saves and the "
            "start-up are outside the clock, their time unknown: see Not computed)"
        )
    elif report.timed and not is_date(d["start"]):  # no wall clock: times relative to the log's start
        source = "timestamps without a year" if report.clock == "own" else f"{report.clock} elapsed-time fields"
        out.append(f"  wall time {fmt_s(d['wall_s'])} (relative times, from {source})")
        out.append(_goodput_line(*_goodput_args(d)))
    elif report.timed:
        out.append(
            f"  wall time {fmt_s(d['wall_s'])} ({when(d['start'])} -> {when(d['end'])} UTC; times from {report.clock})"
        )
        out.append(_goodput_line(*_goodput_args(d)))
    if report.timed:
        out += ["", "Where the time went"]
        for name, seconds in d["buckets"].items():
            if seconds:
                out.append(f"  {name:20s} {fmt_s(seconds):>10s}  {100 * seconds / d['wall_s']:5.1f}%")
        if report.steps_redone_is_lower_bound and d["buckets"].get("redone"):
            out.append("  (redone: at least; the step a later attempt resumed from is not in the log)")
    out += [
        "",
        f"Steps: {steps_text(report)}; {len(d['attempts'])} attempt(s), {d['restarts']} restart(s)"
        + (f", {d['membership_changes']} of them membership changes" if d["membership_changes"] else ""),
    ]
    if d["ideal_step_s"]:
        unit = "iteration" if report.iterations_completed is not None else "step"  # (litgpt: iter N | step M)
        out.append(
            f"  ideal {unit} time {fmt_s(d['ideal_step_s'])} (median); {d['slow_steps']} {unit} samples slower "
            f"than {d['slow_step_factor']}x it"
        )
        for s in d["slowest_steps"][:3]:
            out.append(f"    {unit} {s['step']}: {fmt_s(s['seconds'])}")
    out += _attempt_lines(report)
    out += _checkpoint_lines(d)
    out += _cadence_lines(d["cadence"])
    if report.findings:
        out += ["", "Findings"]
        for f in report.findings:
            out.append(f"  {f.severity.upper()} {f.kind}: {f.summary}")
            if f.caused_by:
                out.append(f"    caused by {f.caused_by}")
            if f.suggestion:
                out.append(f"    suggestion: {f.suggestion}")
    if report.cannot:
        out += ["", "Not computed"] + [f"  - {c}" for c in report.cannot]
    for w in report.warnings:
        out.append(f"warning: {w}")
    return "\n".join(out) + "\n"


def _attempt_lines(report: GoodputResult) -> list[str]:
    out = ["", "Attempts"]
    for a in report.attempts:
        start, end, first = a.get("start"), a.get("end"), a.get("first_step")
        dur = fmt_s(end - start) if start is not None and end is not None else "?"
        unit = "iteration" if report.iterations_completed is not None else "step"  # (litgpt: iter N | step M)
        resume = f", resumed from {unit} {a.get('resume_step')}" if a.get("resume_step") not in (None, 0) else ""
        if resume and not a.get("resume_known") and first is not None:
            resume = f", resumed at {unit} {first - 1} at the latest"
        world = f", world size {a['world_size']}" if a.get("world_size") else ""
        ended = str(a.get("ended", "")).replace("_", " ")
        if a.get("exited") and ended == "unknown":  # (its exit line, no line saying how: returned or stopped)
            ended = "unknown (it printed its exit line; no failure or Ctrl-C line says how it ended)"
        steps = (
            f"{unit}s {a.get('from_step')}..{a.get('last_step')}" if a.get("last_step") is not None else "no step line"
        )
        if a.get("training_unseen_s"):  # (in a log with no step line: its time after its training-start line)
            steps += f", {fmt_s(a['training_unseen_s'])} inside training"
        out.append(f"  #{a.get('attempt')}: {when(start, report.start)}, {dur}, {steps}{resume}{world}; {ended}")
        out += _attempt_details(a)
    if report.timed and report.start is not None and report.end and report.end > report.start:
        out.append("  strip: " + strip(report))
        out.append("         " + "  ".join(f"{v}={k}" for k, v in STRIP_LETTER.items() if report.buckets.get(k)))
    for r in report.ranks[:8]:
        out.append(f"  rank {r.get('rank')}: last step per attempt {r.get('last_steps')}")
    return out


def _attempt_details(a: dict[str, Any]) -> list[str]:
    out = []
    if a.get("membership"):
        out.append(f"      membership change: {a['membership'][:140]}")
    if a.get("new_run"):
        out.append(f"      a new run: {a['new_run'][:140]}")
    # (`unknown`: its lines stop inside the evaluation after training; `running` with no step: in start-up)
    if a.get("end_evidence") and a.get("ended") in ("failed", "stopped", "interrupted", "unknown", "running"):
        out.append(f"      {a['end_evidence'][:140]}")
    planned, last = a.get("planned_steps"), a.get("last_step")
    if planned and last is not None:
        out.append(f"      step {last:,} of {planned:,} planned: {planned - last:,} planned steps not run")
    failed = a.get("failed_ranks") or []
    if failed:
        first, rest = failed[0], sorted(failed[1:])
        then = f", then {ranks_text(rest)}" if rest else ""
        out.append(f"      failed: rank {first} first{then} (the others stopped by the launcher)")
    if a.get("end_state"):
        out.append(f"      ranks ended: {a['end_state'][:200]}")
    if a.get("diagnosis"):
        out.append(f"      diagnosis: {a['diagnosis'][:140]}")
    return out


def strip(report: GoodputResult, width: int = STRIP_WIDTH) -> str:
    """A Gantt-like strip of the job: each cell the bucket that holds most of its time; | marks attempts."""
    assert report.start is not None and report.end is not None
    origin, span = report.start, report.end - report.start
    cells: list[dict[str, float]] = [{} for _ in range(width)]
    for iv in report.timeline:
        a = (iv["start"] - origin) / span * width
        b = (iv["end"] - origin) / span * width
        i = int(a)
        while i < width and i < b:
            lo, hi = max(a, i), min(b, i + 1)
            if hi > lo:
                cells[i][iv["bucket"]] = cells[i].get(iv["bucket"], 0.0) + hi - lo
            i += 1
    return "".join(STRIP_LETTER.get(max(c, key=lambda k: c[k]), "?") if c else " " for c in cells)


def _checkpoint_lines(d: dict[str, Any]) -> list[str]:
    cps = d["checkpoints"]
    if not cps:
        return []
    saves = [c for c in cps if c["op"] == "save"]
    loads = [c for c in cps if c["op"] == "load"]
    out = ["", f"Checkpoints: {len(saves)} saves, {len(loads)} loads"]
    for c in cps[:12]:
        size = f", {c['bytes'] / 1e6:.1f} MB" if c.get("bytes") else ""
        rate = f" at {bytes_rate(c['throughput_bytes_per_s'])}" if c.get("throughput_bytes_per_s") else ""
        step = c["step"] if c["step"] is not None else "?"
        out.append(
            f"  {c['op']} step {step}: blocked {fmt_s(c['blocking_s'])}{size}{rate}"
            + ("" if c["ended"] else " (no end line)")
        )
    if len(cps) > 12:
        out.append(f"  ... {len(cps) - 12} more (--json)")
    return out


def _cadence_lines(c: dict[str, Any]) -> list[str]:
    out = ["", "Checkpoint cadence (Young/Daly)"]
    out.append(
        f"  checkpoint cost C = {fmt_s(c['checkpoint_cost_s'])}; failures {c['failures']}; MTBF = {fmt_s(c['mtbf_s'])}"
    )
    used = fmt_s(c["interval_used_s"]) + (
        f" ({c['interval_used_steps']:.0f} steps)" if c.get("interval_used_steps") else ""
    )
    out.append(f"  interval used: {used}")
    if c["young_s"]:
        out.append(f"  best interval sqrt(2*C*MTBF) = {fmt_s(c['young_s'])} (Daly: {fmt_s(c['daly_s'])})")
        if c["hours_per_week_saved"] is not None:
            out.append(
                f"  at the best interval this job would lose {c['hours_per_week_saved']:.2f} h per week less "
                f"({100 * (c['waste_used'] or 0):.1f}% -> {100 * (c['waste_best'] or 0):.1f}% of its time)"
            )
    if c["note"]:
        out.append(f"  note: {c['note']}")
    out.append("  assumptions: " + "; ".join(c["assumptions"]))
    return out


def text_of(report: GoodputResult, style: Style) -> str:
    """The renderer table's entry (scope.render.RENDERERS)."""
    return render_goodput(report)


def markdown_of(report: GoodputResult, style: Style) -> str:
    """The goodput report in Markdown: the summary, the buckets and attempts as tables, what is unknown."""
    from scope.render.markdown import code, escape, md_table

    out = [f"# scope goodput: {code(report.path)}", "", escape(summary_line(report, see_also=False))]
    if report.timed and report.wall_s:
        rows = [[name, fmt_s(s), f"{100 * s / report.wall_s:.1f}%"] for name, s in report.buckets.items() if s]
        out += ["", "## Where the time went", "", *md_table(["bucket", "time", "share"], rows)]
    attempts = [
        [str(a.get("attempt")), f"{a.get('from_step')}..{a.get('last_step')}", str(a.get("ended", ""))]
        for a in report.attempts
    ]
    if attempts:
        out += ["", "## Attempts", "", *md_table(["attempt", "steps", "ended"], attempts)]
    if report.findings:
        out += ["", "## Findings"] + [f"- {escape(f.severity.upper())} {escape(f.summary)}" for f in report.findings]
    if report.cannot:
        out += ["", "## Not computed"] + [f"- {escape(c)}" for c in report.cannot]
    return "\n".join(out) + "\n"
