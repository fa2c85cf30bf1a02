"""Work lost to rollbacks, and the steps a log shows run and kept: each failed attempt's time past the
step the next attempt resumed from is redone (a bound where the log does not name the resume step)."""

from __future__ import annotations

from itertools import pairwise

from scope.analyzers.goodput.formats import BAR_ROWS
from scope.analyzers.goodput.launches import shown
from scope.analyzers.goodput.log_interval import log_interval
from scope.analyzers.goodput.mark import Mark
from scope.analyzers.goodput.states import HANG_MIN_S, HANG_MIN_STEPS, Attempt, Interval


def mark_redone(attempts: list[Attempt], intervals: list[Interval], ideal: float | None) -> tuple[int, bool]:
    """Each failed attempt's productive time past the next attempt's resume step is redone (or hung).
    Where the log does not name the step the next attempt resumed from, resume_point estimates it (the same
    estimate kept_steps counts with): the count (and the time) is then a lower bound (returned True). An
    attempt the next launch resumed past, from an earlier launch's checkpoint (superseded), redid all it ran. A launch
    from scratch after a run that completed (or that the user left) is a new run and rolls nothing back
    (Attempt.new_run, set by launches.note_new_runs); after a failure it redoes every step the attempt before ran."""
    redone = 0
    bound = False
    for prev, nxt in _with_next_resume(attempts):
        if prev.last_step is None:
            continue
        known = nxt.resume_known
        if _from_scratch(nxt, [x for x in attempts if x.index < nxt.index]) and not known:
            resume: int | None = 0
            known = True
        else:
            resume = resume_point(nxt, attempts)
        if superseded(prev, nxt, attempts):
            resume = resume_point(prev, attempts) or 0  # all it ran was redone: the next resumed past it
            known = prev.resume_known
        elif (
            resume is None
            or resume >= prev.last_step
            or nxt.new_run  # (launches.note_new_runs decided it)
            or resumed_past(prev, [x for x in attempts if x.index > prev.index], attempts)
        ):
            continue
        bound = bound or not known
        redone += prev.last_step - resume
        lost_from = _time_of_step(prev, resume)
        for iv in intervals:
            if iv.attempt != prev.index or iv.bucket != "productive" or lost_from is None or iv.end <= lost_from:
                continue
            if iv.why == "lost tail" and ideal and iv.end - iv.start > max(HANG_MIN_S, HANG_MIN_STEPS * ideal):
                iv.bucket = "hung"
                continue
            if iv.start < lost_from:
                intervals.append(Interval(iv.start, lost_from, "productive", iv.attempt))
                iv.start = lost_from
            iv.bucket = "redone"
    return redone, bound


def resume_point(a: Attempt, attempts: list[Attempt]) -> int | None:
    """The step a launch resumed from, the one estimate mark_redone, resumed_past and kept_steps share (three
    estimates counted steps twice: a relaunch read as resumed at 1071 by one and at 972 by another). A load
    line's step where one names it; else between its first step line less the log interval (describe.py's
    resume_step) and just before its first step line: the latest step an earlier launch of the same run
    reached in that window (its checkpoint), else the window's end nearest it (before the window: its
    start, so no step between is lost; past the window: just before the first step line, the least the
    log shows rolled back)."""
    if a.resume_known or a.first_step is None:
        return a.resume_step
    latest = max(0, a.first_step - 1)
    earliest = min(latest, a.resume_step) if a.resume_step is not None else latest
    reached = [x.last_step for x in _same_run_before(a, attempts) if x.last_step is not None]
    below = [r for r in reached if r <= latest]
    if below and max(below) >= earliest:
        return max(below)
    return latest if len(below) < len(reached) else earliest


def _same_run_before(a: Attempt, attempts: list[Attempt]) -> list[Attempt]:
    """The launches of a's run before it (back to the one that began the run: Attempt.new_run)."""
    if a.new_run:
        return []
    before: list[Attempt] = []
    for x in reversed([x for x in attempts if x.index < a.index]):
        before.append(x)
        if x.new_run:
            break
    return before


def resumed_past(prev: Attempt, later: list[Attempt], attempts: list[Attempt] | None = None) -> bool:
    """A later launch of the same run resumed at or past the attempt's last step before any launch between
    ran as far again: those between (relaunches from an earlier checkpoint) rolled nothing of it back for
    good; its checkpoint was still there to resume from (PaddleDetection's `--resume model_final` after five
    relaunches from the pretrained weights, each killed at its first step). What those between ran is the
    work redone (superseded), however many steps: a relaunch from scratch that trained two epochs, killed,
    then a resume from the first run's checkpoint redid those two epochs for nothing."""
    if prev.last_step is None:
        return False
    every = attempts if attempts is not None else [prev, *later]
    for a in later:
        if a.new_run:
            return False  # (another run: what it resumed says nothing of this one)
        back = resume_point(a, every)
        if back is None:
            continue
        if back >= prev.last_step:
            return True
        if a.last_step is not None and a.last_step >= prev.last_step:
            return False  # it ran the attempt's steps again: they were redone
    return False


def superseded(a: Attempt, nxt: Attempt, attempts: list[Attempt]) -> bool:
    """The next launch resumed past all the attempt ran, at a step only an earlier launch of the run had
    reached: it resumed from that launch's checkpoint, not this one's, and every step this one ran was
    redone work (resumed_past's launches between)."""
    if a.last_step is None or nxt.new_run:
        return False
    back = resume_point(nxt, attempts)
    if back is None or back <= a.last_step:
        return False
    return any(x.last_step is not None and x.last_step >= back for x in _same_run_before(a, attempts))


def _from_scratch(a: Attempt, before: list[Attempt]) -> bool:
    """The attempt's first step line is its first log interval's (PaddleSeg's `iter: 10/80000` logging every
    10, detectron2's `iter: 19` every 20) and no line names a resume step: it ran from step 0, so the step
    it resumed from is known, not a bound. Unless an earlier launch saved below that first step (saves more
    frequent than log lines: a save at iteration 5 logging every 10): a resume from it logs the same first
    line, and the step resumed from stays a bound."""
    steps = [m for m in a.marks if m.kind == "step" and m.step is not None]
    if a.resume_known or a.first_step is None or len(steps) < 2:
        return False
    return a.first_step <= log_interval(steps) and not _saved_below(before, a.first_step)


def _saved_below(attempts: list[Attempt], step: int) -> bool:
    """A save in these attempts at a step past 0 and below `step` (its own step, its file's iteration, else
    the last step line's before it)."""
    for a in attempts:
        reached: int | None = None
        for m in a.marks:
            if m.kind == "step" and m.step is not None:
                reached = m.step if reached is None else max(reached, m.step)
            elif m.kind == "save_begin":
                at = m.step if m.step is not None else reached
                if at is not None and 0 < at < step:
                    return True
    return False


def _with_next_resume(attempts: list[Attempt]) -> list[tuple[Attempt, Attempt]]:
    """Each attempt with the next one that says where it resumed (a load line, or a first step): a launch
    that never reached a step nor loaded anything between them (a crash at start-up) rolls nothing back."""
    return list(pairwise(shown(attempts)))


def _next_shown(a: Attempt, attempts: list[Attempt]) -> Attempt | None:
    """The launch after the attempt that mark_redone pairs it with (_with_next_resume)."""
    return next((nxt for prev, nxt in _with_next_resume(attempts) if prev is a), None)


def _time_of_step(a: Attempt, step: int) -> float | None:
    """When the attempt had completed `step` (its first step line at or past it, minus the excess)."""
    prev_t = a.training_start
    for m in a.marks:
        if m.kind == "step" and m.step is not None and m.t is not None:
            if m.step > step:
                return prev_t if prev_t is not None else m.t
            prev_t = m.t
    return prev_t


def starts_unseen(attempts: list[Attempt]) -> bool:
    """The log starts mid-run: its first attempt's resume step is not shown (no load line, no start)."""
    return bool(attempts) and attempts[0].resume_step is None and attempts[0].first_step is not None


def _every_step_recorded(a: Attempt) -> bool:
    """Its step lines are one record per step (not a progress bar's redraws, not every N steps)."""
    steps = [m for m in a.marks if m.kind == "step" and m.step is not None]
    return bool(steps) and steps[0].row not in BAR_ROWS and log_interval(steps) == 1


def step_marks(attempts: list[Attempt]) -> list[Mark]:
    return [m for m in attempts[0].marks if m.kind == "step" and m.step is not None] if attempts else []


def optimizer_steps(attempts: list[Attempt]) -> int | None:
    """Optimizer steps the log shows completed where its lines count iterations beside them (litgpt), else
    None: each attempt's optimizer-step span (from 0 where the attempt shows its start), less the steps past
    the one the next attempt's first line shows (a rollback: counting them in both attempts would count
    the redone steps twice). One iteration per optimizer step: the iterations kept (kept_steps)."""
    marks = [m for a in attempts for m in a.marks if m.kind == "step" and m.step is not None]
    if not marks or any(m.opt_step is None for m in marks):
        return None
    if len({(m.step or 0) - (m.opt_step or 0) for m in marks}) == 1:
        return kept_steps(attempts)  # (no accumulation: the counters are one; kept_steps reads its first line)
    spans: list[tuple[int, int]] = []  # each attempt's (first, last) optimizer step
    for a in attempts:
        opts = [m.opt_step for m in a.marks if m.kind == "step" and m.opt_step is not None]
        if opts:
            spans.append((0 if a.resume_known and a.resume_step == 0 else opts[0], max(opts)))
    done = sum(hi - lo for lo, hi in spans)
    for (_, hi), (nxt_lo, _) in pairwise(spans):
        done -= max(0, hi - nxt_lo)  # rolled back: run in this attempt, run again in the next
    return max(0, done)


def kept_steps(attempts: list[Attempt]) -> int | None:
    """Steps the log shows run and not lost to a later rollback: each attempt's steps, less those of them
    past the step the next attempt resumed from (never 0 beside productive time, as a net count from the
    log's first step to its last can be when a rollback goes back before the log began). A log that starts
    mid-run and prints every step counts its first step line's step too, where that line is a step's own
    record (it says the step ran: steps 22..29 are 8 lines, 8 steps); a progress bar's first redraw is only
    the counter's position (189 -> 210: 21). Printed every N > 1 steps, the count is the span's (500 -> 550:
    50), a lower bound of the steps the job ran in the log (see completed_is_bound)."""
    if not any(a.last_step is not None for a in attempts):
        return None
    kept = 0
    for i, a in enumerate(attempts):
        if a.last_step is None:
            continue
        lo = a.resume_step if a.resume_step is not None else a.first_step
        if i == 0 and starts_unseen(attempts) and lo is not None and _every_step_recorded(a):
            lo -= 1
        hi = a.last_step
        if (nxt := _next_shown(a, attempts)) is not None and superseded(a, nxt, attempts):
            continue  # (all it ran was redone)
        for later in [] if resumed_past(a, attempts[i + 1 :], attempts) else attempts[i + 1 :]:
            if later.new_run:
                break  # the attempts after belong to another run: they roll nothing of this one back
            back = resume_point(later, attempts)
            if back is not None:
                hi = min(hi, back)
        kept += max(0, hi - (lo if lo is not None else hi))
    return min(kept, _runs_span(attempts))


def _runs_span(attempts: list[Attempt]) -> int:
    """Each run's steps from its lowest resume point to its last step, summed: no count of steps kept can
    exceed it (a step run twice and kept once; the invariant kept_steps holds whatever the estimates)."""
    span = 0
    lo: int | None = None
    hi: int | None = None
    for i, a in enumerate(attempts):
        if a.new_run and hi is not None:
            span += max(0, hi - (lo if lo is not None else hi))
            lo, hi = None, None
        if a.last_step is None:
            continue
        start = a.resume_step if a.resume_step is not None else a.first_step
        if i == 0 and starts_unseen(attempts) and start is not None and _every_step_recorded(a):
            start -= 1
        if start is not None:
            lo = start if lo is None else min(lo, start)
        hi = a.last_step if hi is None else max(hi, a.last_step)
    return span + (max(0, hi - (lo if lo is not None else hi)) if hi is not None else 0)
