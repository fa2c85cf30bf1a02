"""Hangs a failure line states: PyTorch's c10d watchdog says how long the collective it timed out ran
(`WorkNCCL(SeqNum=.., OpType=ALLREDUCE, .., Timeout(ms)=600000) ran for 600009 milliseconds before timing
out`, formats/launchers.py c10d_watchdog_timeout: the mark's dur_s). The collective was enqueued that long
before the line and never completed, so that span is hung, not the productive tail of the last step:
https://github.com/pytorch/pytorch/blob/main/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp (the
watchdog's timeout message; the default timeout is 10 min, 30 min before torch 2.2 and in many launchers).

Two passes: one over the marks (the line printed with no timestamp of its own, as the C++ lines of torch
< 2.2 are, is placed at its stated end rather than at the time of the line before it), one over the
timeline's intervals (the stated span becomes `hung`)."""

from __future__ import annotations

from scope.analyzers.goodput.mark import Mark
from scope.analyzers.goodput.states import Interval

# Buckets a stated hang never overrides: the job's time before the collective began is theirs already
# (a hang found by its silence, a relaunch's gap).
_KEEP = frozenset({"hung", "failure_to_restart", "queued", "between_jobs"})


def _stated(m: Mark) -> bool:
    return m.kind == "failure" and m.row == "c10d_watchdog_timeout" and bool(m.dur_s) and m.t is not None


def place_untimed_timeouts(marks: list[Mark]) -> list[Mark]:
    """A watchdog line with no timestamp of its own (its time filled from the line before) ends the
    collective it names, which began after the last step line (else the last timed line: another logger
    goes on printing while the rank waits): it is printed its stated span after that line, and no earlier
    than the last timed line. Moved there, unless a later timed line comes before that (then the filled
    time stands: the log's own clock knows better)."""
    last_own: float | None = None
    last_step: float | None = None
    for i, m in enumerate(marks):
        if m.t is not None and m.t_src in ("own", "bar"):
            last_own = m.t
            last_step = m.t if m.kind == "step" else last_step
        if not (_stated(m) and m.t_src == "filled" and last_own is not None):
            continue
        # the collective began after the last step this rank logged, not after the last timed line of any
        # kind (another rank, or this one's other loggers, go on printing while it waits)
        anchor = last_step if last_step is not None else last_own
        end = max(last_own, anchor + (m.dur_s or 0.0))
        later = next((n.t for n in marks[i + 1 :] if n.t is not None and n.t_src in ("own", "bar")), None)
        if later is None or later >= end:
            m.t, m.t_src = end, "stated"
    return marks


def hung_spans(marks: list[Mark]) -> list[tuple[float, float, Mark]]:
    """(start, end, line) of each hang a watchdog line states, begun no earlier than the last step line
    before it (a step logged after the collective was enqueued: the span overstates, the step stands)."""
    spans: list[tuple[float, float, Mark]] = []
    last_step: float | None = None
    for m in marks:
        if m.kind == "step" and m.t is not None:
            last_step = m.t if last_step is None else max(last_step, m.t)
        if _stated(m):
            end = m.t or 0.0
            start = end - (m.dur_s or 0.0)
            if last_step is not None:
                start = max(start, last_step)
            if end > start:
                spans.append((start, end, m))
    return spans


def carve_hangs(intervals: list[Interval], marks: list[Mark]) -> list[Interval]:
    """The intervals with each stated hang's span taken out of whatever bucket held it (a step's lost tail,
    unexplained silence, a save's aftermath) and given to `hung`; the steps an interval completed stay
    with its part before the hang (they were logged before it)."""
    for start, end, m in hung_spans(marks):
        out: list[Interval] = []
        for iv in intervals:
            if iv.bucket in _KEEP or iv.end <= start or iv.start >= end:
                out.append(iv)
                continue
            if iv.start < start:
                out.append(Interval(iv.start, start, iv.bucket, iv.attempt, iv.steps, iv.why))
            why = f"{m.where()}: the collective timed out after {m.dur_s:.0f} s with no progress"
            out.append(Interval(max(iv.start, start), min(iv.end, end), "hung", iv.attempt, why=why))
            if iv.end > end:
                out.append(Interval(end, iv.end, iv.bucket, iv.attempt, 0 if iv.start < start else iv.steps, iv.why))
        intervals = out
    return intervals
