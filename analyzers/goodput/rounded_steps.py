"""Step counters the log does not print whole: rounded (LeRobot's `step:1K`, `step:2K`, ... each value on
several lines), each line's step placed by the log's interval inside the window its rounded value allows;
or not at all (ColossalAI's DreamBooth prints one memory line per step), the lines counted."""

from __future__ import annotations

import itertools
import math

from scope.analyzers.goodput.formats import COUNTED_ROWS
from scope.analyzers.goodput.mark import Mark


def _window(m: Mark) -> tuple[float, float]:
    """The steps the printed value can stand for (0 decimals: `2K` is 1500..2500)."""
    unit = m.step_unit or 1
    return (m.step or 0) - unit / 2, (m.step or 0) + unit / 2


def _interval(steps: list[Mark]) -> int | None:
    """Steps between two lines: from the exact values the log prints before its rounding starts (`step:400`,
    `step:600`), else from the lines of the first rounded value seen whole (5 lines of `2K`: every 200)."""
    exact = [m.step for m in steps if m.step_unit is None and m.step is not None]
    gaps = [b - a for a, b in itertools.pairwise(exact) if b > a]
    if gaps:
        return gaps[-1]
    values = [m.step for m in steps]
    starts = [i for i in range(1, len(values)) if values[i] != values[i - 1]]
    for a, b in itertools.pairwise(starts):
        unit = steps[a].step_unit
        if unit:
            return max(1, round(unit / (b - a)))
    return None


def _first_of_window(m: Mark, every: int) -> int:
    return int(math.ceil(_window(m)[0] / every) * every)


def rounded_steps(marks: list[Mark]) -> list[Mark]:
    """Each rounded step line takes the step before it plus the log's interval, where that falls in the
    window its printed value allows; outside it (a gap, a relaunch) the window's first multiple of the
    interval. A log that opens with rounded lines is anchored at its first change of value (`1K` -> `2K`:
    the first multiple of the interval past 1500) and counted back from there."""
    steps = [m for m in marks if m.kind == "step" and m.step is not None]
    if not any(m.step_unit for m in steps):
        return marks
    every = _interval(steps)
    if not every:
        return marks
    start, prev = 0, None
    if steps[0].step_unit:
        change = next((i for i in range(1, len(steps)) if steps[i].step != steps[i - 1].step), 0)
        steps[change].step = _first_of_window(steps[change], every)
        for i in range(change):
            steps[i].step = (steps[change].step or 0) - (change - i) * every
        start, prev = change + 1, steps[change].step
    for m in steps[start:]:
        if m.step_unit:
            lo, hi = _window(m)
            guess = prev + every if prev is not None else None
            m.step = guess if guess is not None and lo <= guess <= hi else _first_of_window(m, every)
        prev = m.step
    return marks


def counted_steps(marks: list[Mark]) -> list[Mark]:
    """A step line with no number (formats' `counted` rows) is the next step: 1, 2, ... in the log's order."""
    done = 0
    for m in marks:
        if m.kind == "step" and m.row in COUNTED_ROWS and m.step is None:
            done += 1
            m.step = done
    return marks
