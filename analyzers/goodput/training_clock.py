"""Step lines whose only clock is the run's cumulative training time (formats rows with `training_clock`:
modded-nanoGPT's `train_time`, stopped around validation and saves). Each step's time is the clock's growth
since the step line before; and a log whose step lines carry no timestamp of their own has no wall clock:
the timestamps of its other lines (torch's glog warnings on stderr, written ahead of the buffered stdout) do
not say when the steps ran, so they are not read as times (no wall span is made of a few seconds of warnings),
and the report's wall is the training time alone, a lower bound (report.wall_is_lower_bound)."""

from __future__ import annotations

from itertools import pairwise

from scope.analyzers.goodput.formats import TRAINING_CLOCK_ROWS
from scope.analyzers.goodput.mark import Mark


def training_clock_steps(marks: list[Mark], file: str) -> tuple[list[Mark], list[str]]:
    """The marks with the training clock's steps given their own times, and, where every step line is such
    a row with no timestamp, the other lines' timestamps dropped; with a note saying so."""
    steps = [m for m in marks if m.kind == "step" and m.row in TRAINING_CLOCK_ROWS]
    if not steps:
        return marks, []
    _per_step(steps)
    if any(m.kind == "step" and m.row not in TRAINING_CLOCK_ROWS for m in marks) or any(
        m.t_src == "own" for m in steps
    ):
        return marks, []
    stamped = [m for m in marks if m.t_src == "own"]
    note = (
        f"{file}: the step lines' only clock is their cumulative training time ({steps[0].row}: it stops for "
        "validation and checkpoint saves), no wall clock: the wall time is at least the training time"
    )
    if stamped:
        note += (
            f"; the {len(stamped)} timestamped line(s) of other programs (from line {stamped[0].line}) do not "
            "say when the steps ran and are not read as times"
        )
    kept = [m for m in marks if m.kind != "clock"]
    for m in kept:
        if m.t_src == "own":
            m.t, m.t_src = None, ""
    first = steps[0]
    if (first.step or 0) <= 1 or any(m.kind == "eval_end" and m.step == 0 for m in kept):
        # the clock's 0 is the training's start (its step-0 validation, or its first step, shown): the first
        # step's time is the attempt's, from there
        at = kept.index(first)
        start = Mark("train_begin", first.line, first.file, "derived start", t=0.0, t_src="derived")
        start.text = "the clock's 0"
        kept.insert(at, start)
    return kept, [note]


def _per_step(steps: list[Mark]) -> None:
    """Each step line's time: the clock's growth over the steps since the line before; the first line's, its
    clock over its steps (the clock starts at the training's step 0); a clock that went back (reset after the
    warm-up steps, or a new launch) has run at most the steps since it restarted."""
    clock = [m.step_s for m in steps]
    first = steps[0]
    first.step_s = clock[0] / max(first.step or 0, 1) if clock[0] is not None else None
    for (a, b), (ta, tb) in zip(pairwise(steps), pairwise(clock), strict=True):
        d = (b.step or 0) - (a.step or 0)
        if ta is None or tb is None:
            b.step_s = None
        elif d > 0 and tb >= ta:
            b.step_s = (tb - ta) / d
        else:
            b.step_s = tb / (d if d > 0 else max(b.step or 0, 1))
