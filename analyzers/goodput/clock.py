"""One clock per log: its own timestamps made to run forward, and untimed step lines placed on it.

Lines several writers flushed in turn are first put back in the order of their timestamps, when that order
makes the step counter go back far less often than the file's (time_order).

A log's wall clock can misbehave: lines written out of order (several writers, buffered output, shuffled
lines), a clock stepped back or forward (NTP, a time-zone change). The lines in time order are the longest
run of non-decreasing timestamps; a block of lines outside it, itself in order, is a clock step and moves
as a block next to the line before it (or, at the log's start, the line after it); a line out of order on
its own takes the time of the line before it. A forward jump between two step lines is a step of the
clock where the later line's own elapsed-time field says far less time passed. Whatever was corrected is
returned for a warning: the job's shares still sum to its wall time, and no time is invented.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from itertools import pairwise
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scope.analyzers.goodput.mark import Mark

# Own timestamps of one log may step back a little (second-resolution lines between millisecond ones).
CLOCK_JITTER_S = 1.5
# A forward jump of the wall clock between two step lines is a clock step (NTP, a time-zone change), not a
# stall, when it exceeds this many seconds and this many times what the step line's own elapsed-time field
# says the steps took.
CLOCK_STEP_MIN_S = 60.0
CLOCK_STEP_FACTOR = 10.0
# A block of at least this many timestamped lines, in order among themselves, outside the log's time order
# is a clock step (moved as a block); fewer are lines out of order (each at the time before it).
BLOCK_MIN_LINES = 3
# Lines that say nothing of the job's state (a bare timestamp, a timer): a clock step may sit among them.
QUIET_KINDS = frozenset({"clock", "step_time", "data_dur", "world"})


def time_order(marks: list[Mark]) -> tuple[list[Mark], int]:
    """Lines written out of order (several writers flushing buffers in turn): when reading the lines in the
    order of their own timestamps makes the step counter go back less than half as often as in the file,
    the file's order is the writers', not the job's; the marks come back in time order (each untimed line
    after the timed one before it), with the number of step lines that moved. A clock stepped back while
    training went on keeps the file's order: sorted by time, its later steps would come first."""
    before = _steps_back(marks)
    if before == 0:
        return marks, 0
    groups: list[list[Mark]] = []
    for m in marks:
        if groups and groups[-1][0].line == m.line and groups[-1][0].file == m.file:
            groups[-1].append(m)
        else:
            groups.append([m])
    keys: list[float] = []
    key = -math.inf
    for g in groups:
        own = [m.t for m in g if m.t is not None and m.t_src == "own"]
        key = own[0] if own else key
        keys.append(key)
    ordered = [g for _, _, g in sorted(zip(keys, range(len(groups)), groups, strict=True), key=lambda x: (x[0], x[1]))]
    after = _steps_back([m for g in ordered for m in g])
    if after * 2 >= before:
        return marks, 0
    moved = sum(1 for a, b in zip(groups, ordered, strict=True) if a is not b and any(m.kind == "step" for m in a))
    return [m for g in ordered for m in g], moved


def _steps_back(marks: list[Mark]) -> int:
    steps = [m.step for m in marks if m.kind == "step" and m.step is not None]
    return sum(1 for a, b in pairwise(steps) if b < a)


def correct_clock(marks: list[Mark]) -> list[tuple[Mark, float]]:
    """Make the log's own timestamps non-decreasing (see the module docstring). Returns each correction:
    the first line it moved, and by how many seconds (negative: the clock had gone back)."""
    own = [m for m in marks if m.t is not None and m.t_src == "own"]
    if not own:
        return []
    found = _back_steps(own)
    found += _forward_steps(marks)
    last: float | None = None
    for m in own:  # what is left is jitter below CLOCK_JITTER_S: time never goes back
        if last is not None and (m.t or 0.0) < last:
            m.t = last
        last = m.t
    return found


def _in_order(times: list[float]) -> set[int]:
    """Indices of the longest non-decreasing subsequence of `times` (patience sorting, O(n log n))."""
    tails: list[float] = []
    tail_idx: list[int] = []
    parent = [-1] * len(times)
    for i, t in enumerate(times):
        k = bisect_right(tails, t)
        if k == len(tails):
            tails.append(t)
            tail_idx.append(i)
        else:
            tails[k], tail_idx[k] = t, i
        parent[i] = tail_idx[k - 1] if k else -1
    keep: set[int] = set()
    i = tail_idx[-1] if tail_idx else -1
    while i >= 0:
        keep.add(i)
        i = parent[i]
    return keep


def _back_steps(own: list[Mark]) -> list[tuple[Mark, float]]:
    """Lines outside the log's time order: a block in order among itself is moved next to the in-order
    line before it (the clock stepped); a shorter run takes the time of the line before it."""
    times = [m.t or 0.0 for m in own]
    keep = _in_order(times)
    found: list[tuple[Mark, float]] = []
    i = 0
    while i < len(own):
        if i in keep:
            i += 1
            continue
        j = i
        while j < len(own) and j not in keep:
            j += 1
        run = own[i:j]
        before = times[i - 1] if i else None
        after = times[j] if j < len(own) else None
        found += _place_run(run, before, after)
        i = j
    return found


def _place_run(run: list[Mark], before: float | None, after: float | None) -> list[tuple[Mark, float]]:
    """Move a run of lines outside the time order; returns the clock's movement it undid (negative: back)."""
    ordered = all((a.t or 0.0) <= (b.t or 0.0) for a, b in pairwise(run))
    start, end = run[0].t or 0.0, run[-1].t or 0.0
    if ordered and _lines(run) >= BLOCK_MIN_LINES:
        shift = (before - start) if before is not None else ((after if after is not None else end) - end)
        for m in run:
            m.t = (m.t or 0.0) + shift
        movement = -shift if before is not None else shift
        return [(run[0], movement)] if abs(shift) >= CLOCK_JITTER_S else []
    anchor = before if before is not None else after
    worst = max(run, key=lambda m: abs((anchor or 0.0) - (m.t or 0.0)))
    moved = (anchor or 0.0) - (worst.t or 0.0)
    for m in run:
        m.t = anchor
    if abs(moved) < CLOCK_JITTER_S:
        return []
    return [(worst, -moved if before is not None else moved)]


def _lines(run: list[Mark]) -> int:
    return len({m.line for m in run})


def _forward_steps(marks: list[Mark]) -> list[tuple[Mark, float]]:
    """Forward jumps between two step lines that the later line's elapsed-time field contradicts: every
    later timestamp moves back by the jump."""
    found: list[tuple[Mark, float]] = []
    offset = 0.0
    prev_step: Mark | None = None
    between: list[Mark] = []  # bare timestamped lines since prev_step
    # a step's own time, from whichever line gives it (DeepSpeed dates `step=N` and prints its time apart)
    took = {m.step: m.step_s for m in reversed(marks) if m.kind == "step" and m.step is not None and m.step_s}
    for m in marks:
        if m.t is None or m.t_src != "own":
            continue
        t = m.t + offset
        jump = _forward_step(m, t, prev_step, between, took)
        if jump:
            found.append((m, jump))
            offset -= jump
            t -= jump
        m.t = t
        if m.kind == "step" and m.step is not None:
            prev_step, between = m, []
        elif m.kind in QUIET_KINDS:
            between.append(m)
        else:
            prev_step, between = None, []
    return found


def _forward_step(m: Mark, t: float, prev_step: Mark | None, between: list[Mark], took: dict[int, float]) -> float:
    """The seconds the clock jumped between prev_step and this step line beyond what its elapsed-time field
    says (0 when it did not); the bare lines after the jump are moved back with it."""
    said = _said_elapsed(m, prev_step, took)
    if said is None or prev_step is None or prev_step.t is None:
        return 0.0
    span = t - prev_step.t
    if span <= CLOCK_STEP_MIN_S or span <= CLOCK_STEP_FACTOR * said + CLOCK_STEP_MIN_S:
        return 0.0
    jump = span - said
    times = [prev_step.t, *(x.t or 0.0 for x in between), t]
    widest = max(range(len(times) - 1), key=lambda i: times[i + 1] - times[i])
    for x in between[widest:]:
        x.t = max(prev_step.t, (x.t or 0.0) - jump)
    return jump


def _said_elapsed(m: Mark, prev_step: Mark | None, took: dict[int, float]) -> float | None:
    """What a step line's own elapsed-time field (or another line's for the same step) says passed since the
    step line before it."""
    if m.kind != "step" or m.step is None or prev_step is None or prev_step.step is None:
        return None
    step_s = m.step_s or took.get(m.step)
    if step_s is None or m.step <= prev_step.step:
        return None
    return (m.step - prev_step.step) * step_s


def clock_note(file: str, steps: list[tuple[Mark, float]]) -> str:
    first, moved = steps[0]
    where = f"{file}:{first.line}" if file else f"line {first.line}"
    more = f" and {len(steps) - 1} more time(s)" if len(steps) > 1 else ""
    direction = "back" if moved < 0 else "forward"
    return (
        f"{where}: the log's clock stepped {direction} by {abs(moved):,.0f} s{more} (NTP, a time-zone change or "
        "lines out of order): those times were moved to keep the clock running on; shares still sum to the wall "
        "time"
    )


def derive_back(marks: list[Mark]) -> None:
    """Step lines with no time before a log's first timestamp: placed back from it by their own elapsed-time
    fields (the last one just before it), so they share the log's wall clock instead of starting at 0."""
    first = next((i for i, m in enumerate(marks) if m.t is not None and m.t_src in ("own", "bar")), None)
    if first is None:
        return
    t = marks[first].t or 0.0
    later: Mark | None = None
    for m in reversed(marks[:first]):
        if m.kind != "step" or m.step is None or m.step_s is None or m.t is not None:
            continue
        if later is not None and later.step is not None and later.step_s is not None and later.step > m.step:
            t -= (later.step - m.step) * later.step_s
        m.t, m.t_src = t, "derived"
        later = m
