"""A steady slowdown of an attempt's steps (the step_time_drift finding's measure): the pace of each tenth of
the attempt, as the time its step lines span over the steps they span, and whether the pace grew gradually
and clearly (a leak, a growing cache, a throttled GPU) rather than by one change (a freeze -> unfreeze, a
batch-size ramp the lines state) or by the noise of a few quantised samples.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass
from itertools import pairwise

from scope.analyzers.goodput.mark import Mark
from scope.analyzers.goodput.states import PASSIVE

# The last tenth's pace this much above the first tenth's (maskrcnn-benchmark, 60,000 iterations: 0.665 s an
# iteration over the first 10,000, 0.833 s over the last: +25%).
DRIFT_RATIO = 1.15
# Each tenth at least this many steps, over this many intervals between step lines and this many seconds:
# a stretch of the run, not a few lines (seconds-resolution timestamps on a line a step read 0 s or 1 s
# each; summed over a minute they read the pace). In steps, not lines: a line every 20 iterations averages
# 20 (maskrcnn-benchmark's 60,000-iteration run, excerpted to 65 intervals of 20: +25%, 0.66 -> 0.83 s)
WINDOW_MIN_STEPS = 100
WINDOW_MIN_SAMPLES = 5
WINDOW_MIN_S = 60.0
WINDOWS = 10
# An interval this many times the attempt's median pace is a stall or a hang (its own findings), not the pace
STALL_FACTOR = 3.0
# Gradual: no one step from a tenth to the next carries more than this share of the whole growth
MAX_JUMP_SHARE = 0.5
# The lines state the work a step does (Megatron's `global batch size: N`, read by its row as the step's
# batch, a rampup; a sequence length): a step that does more work is no slowdown
_STATED_WORK = re.compile(r"\b(?:global[ _]batch[ _]size|seq(?:uence)?[ _]?len(?:gth)?)[:=]\s*(\d+)", re.IGNORECASE)


@dataclass
class Drift:
    first_s: float  # the first tenth's pace (seconds a step)
    last_s: float
    first_steps: tuple[int, int]  # the steps the first tenth spans
    last_steps: tuple[int, int]
    lost_s: float  # the time over the first tenth's pace, stalls and hangs left out
    samples: int


def paced_intervals(marks: list[Mark]) -> list[tuple[int, int, float]]:
    """(step, steps, seconds) between consecutive step lines with their own timestamps and nothing else
    between them; where the lines have no usable timestamps, each line's own step-time field over the steps
    since the line before."""
    timed: list[tuple[int, int, float]] = []
    prev: Mark | None = None
    for m in marks:
        if m.kind == "step" and prev is not None and m.step is not None and prev.step is not None:
            d = m.step - prev.step
            own = m.t is not None and prev.t is not None and "filled" not in (m.t_src, prev.t_src)
            if d > 0 and own and (m.t or 0.0) >= (prev.t or 0.0):
                timed.append((m.step, d, (m.t or 0.0) - (prev.t or 0.0)))
        if m.kind == "step":
            prev = m
        elif m.kind not in PASSIVE:
            prev = None
    if sum(s for _, _, s in timed) > 0:
        return timed
    fields: list[tuple[int, int, float]] = []
    last_step: int | None = None
    for m in marks:
        if m.kind == "step" and m.step is not None and m.step_s and m.step_s > 0:
            d = m.step - last_step if last_step is not None and m.step > last_step else 1
            if last_step != m.step:
                fields.append((m.step, d, m.step_s * d))
            last_step = m.step
    return fields


def states_changing_work(marks: list[Mark]) -> bool:
    """The step lines state the work a step does, and it changes over the attempt."""
    steps = [m for m in marks if m.kind == "step"]
    batches = {m.batch for m in steps if m.batch}
    stated = {found.group(1) for m in steps if (found := _STATED_WORK.search(m.text))}
    return len(batches) > 1 or len(stated) > 1


def step_time_drift(marks: list[Mark]) -> Drift | None:
    """The attempt's steps slowed steadily: its last tenth's pace DRIFT_RATIO times its first's, grown
    gradually, the last tenth's quartile of paces above the first's upper quartile; None otherwise."""
    if states_changing_work(marks):
        return None
    intervals = paced_intervals(marks)
    if len(intervals) < 2 * WINDOWS:
        return None
    median = statistics.median(s / n for _, n, s in intervals)
    intervals = [iv for iv in intervals if iv[2] / iv[1] <= STALL_FACTOR * median]
    intervals = intervals[len(intervals) // (2 * WINDOWS) :]  # (the first half-tenth: warm-up)
    size = len(intervals) // WINDOWS
    windows = [intervals[i * size : (i + 1) * size] for i in range(WINDOWS)]
    if size < WINDOW_MIN_SAMPLES or any(
        sum(s for _, _, s in w) < WINDOW_MIN_S or sum(n for _, n, _ in w) < WINDOW_MIN_STEPS for w in windows
    ):
        return None
    paces = [sum(s for _, _, s in w) / sum(n for _, n, _ in w) for w in windows]
    first, last = paces[0], paces[-1]
    growth = last - first
    if first <= 0 or last < DRIFT_RATIO * first:
        return None
    if max(b - a for a, b in pairwise(paces)) > MAX_JUMP_SHARE * growth:
        return None  # one change of pace, not a drift
    early = statistics.quantiles([s / n for _, n, s in windows[0]], n=4)
    late = statistics.quantiles([s / n for _, n, s in windows[-1]], n=4)
    if late[0] <= early[2]:
        return None  # the two tenths overlap: noise around a pace, not two paces
    lost = sum(max(0.0, p - first) * sum(n for _, n, _ in w) for p, w in zip(paces, windows, strict=True))
    return Drift(
        first_s=first,
        last_s=last,
        first_steps=(windows[0][0][0], windows[0][-1][0]),
        last_steps=(windows[-1][0][0], windows[-1][-1][0]),
        lost_s=lost,
        samples=len(intervals),
    )
