"""Stretches a log leaves out: between two consecutive step lines several log intervals apart (lines cut
from a pasted log, `...` in an issue, a log's middle elided by head/tail) nothing says what the job did.
The steps the later line counts ran; time beyond them at the ideal step time is not shown to be work (an
evaluation, a checkpoint or a stall the missing lines would have shown), so it is unexplained, not
productive. A stretch at the steady pace (its steps at the ideal time fill it) stays productive: a
cut alone is no loss. Pasted logs in issues are often cut this way (OpenPCDet's, MMF's, mmdetection's
every-50/100-iteration lines with the middle of an epoch left out)."""

from __future__ import annotations

from scope.analyzers.goodput.states import Interval

# A step jump of this many log intervals: lines are missing (one late or skipped line is not a cut).
CUT_MIN_INTERVALS = 3
# Of the stretch's time, the share beyond its steps at the ideal time that is more than step-time noise
# (steady logs vary a few percent between intervals), and never less than one log interval's steps.
CUT_EXCESS_SHARE = 0.1


def is_cut(steps: int, every: int) -> bool:
    """A stretch of this many steps between two step lines, in a log every `every` steps, left lines out."""
    return steps >= CUT_MIN_INTERVALS * every


def at_steady_pace(length: float, steps: int, ideal: float, every: int) -> bool:
    """A cut stretch (is_cut) whose time beyond its steps at the ideal step time is step-time noise: at most
    CUT_EXCESS_SHARE of the stretch, and never less than one log interval's steps: unlogged_in_cuts leaves
    it productive (the timeline reads no hang in any cut: what the missing lines showed is not known)."""
    excess = length - steps * ideal
    return is_cut(steps, every) and excess <= max(CUT_EXCESS_SHARE * length, every * ideal)


def unlogged_in_cuts(
    intervals: list[Interval], every: int, ideal: float | None, ideals: dict[int, float | None] | None = None
) -> list[Interval]:
    """Each productive interval spanning a cut split: its steps at the ideal step time productive, the
    excess (placed at the stretch's end: where in it the time went is not known) unexplained. `every`: the
    log's interval in steps (log_interval of its step lines); `ideals`: an attempt's own ideal step time where
    it has one (the timeline measured its stretches against it)."""
    out: list[Interval] = []
    for iv in intervals:
        own = (ideals or {}).get(iv.attempt, ideal)  # (the job's for an attempt with none of its own)
        if not own:
            out.append(iv)
            continue
        length = iv.end - iv.start
        excess = length - iv.steps * own
        if iv.bucket != "productive" or not is_cut(iv.steps, every) or at_steady_pace(length, iv.steps, own, every):
            out.append(iv)
            continue
        lines = iv.steps // every - 1
        why = (
            f"about {lines} step lines missing here (a cut in the log): time beyond the {iv.steps} steps at the "
            "ideal step time is not shown to be work"
        )
        mid = iv.end - excess
        out += [
            Interval(iv.start, mid, "productive", iv.attempt, iv.steps, iv.why),
            Interval(mid, iv.end, "unexplained", iv.attempt, why=why),
        ]
    return out
