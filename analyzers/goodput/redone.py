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
    """Each attempt's productive time past the steps of it kept (kept_ranges: the final line of
    checkpoints) is redone (or hung). Where the step that cut it is an estimate (resume_point: the log does
    not name the step the launch after resumed from), the count (and the time) is a lower bound (returned
    True). Each attempt is charged only the steps it ran (never below its own start): a rollback past it
    into an earlier attempt charges that attempt the rest, and the redone time is the time of the attempts
    whose steps were redone."""
    redone = 0
    bound = False
    ranges = kept_ranges(attempts)
    for a in attempts:
        if a.index not in ranges or a.last_step is None:
            continue
        lo, hi, known = ranges[a.index]
        floor = _first_run_step(a, lo, attempts)
        cut = max(hi, floor)
        if cut >= a.last_step:
            continue
        bound = bound or not known or floor > lo
        redone += a.last_step - cut
        lost_from = _time_of_step(a, cut)
        for iv in intervals:
            if iv.attempt != a.index or iv.bucket != "productive" or lost_from is None or iv.end <= lost_from:
                continue
            if iv.why == "lost tail" and ideal and iv.end - iv.start > max(HANG_MIN_S, HANG_MIN_STEPS * ideal):
                iv.bucket = "hung"
                continue
            if iv.start < lost_from:
                intervals.append(Interval(iv.start, lost_from, "productive", iv.attempt))
                iv.start = lost_from
            iv.bucket = "redone"
    return redone, bound


def kept_ranges(attempts: list[Attempt]) -> dict[int, tuple[int, int, bool]]:
    """Each attempt that ran steps: (its start, the last of its steps kept, whether that cut is known).
    The steps kept are the final line of checkpoints of each run (runs split at Attempt.new_run): the run's
    last launch kept all it ran; the step it resumed from came from the latest earlier launch that had run
    to it (started below it and reached it; else, a checkpoint past its last step line, the one that got
    furthest below it), which kept its steps up to there; and so back. Every other step was redone: a
    launch the next resumed past, from an earlier launch's checkpoint (PaddleDetection's `--resume
    model_final` after relaunches from the pretrained weights), redid all it ran; a launch that went past
    and that a later launch rolled back below (the furthest-later rollback wins) redid the steps past the
    rollback. One resume estimate (start_of) for every count."""
    out: dict[int, tuple[int, int, bool]] = {}
    for run in _runs(shown(attempts)):
        starts = {a.index: start_of(a, attempts) for a in run}
        for a in run:
            if a.last_step is not None:
                lo = starts[a.index]
                lo = a.last_step if lo is None else min(lo, a.last_step)
                out[a.index] = (lo, lo, _start_known(a, attempts))  # (nothing kept unless the line says so)
        cur = run[-1]
        if cur.last_step is not None:
            out[cur.index] = (out[cur.index][0], cur.last_step, True)
        while (r := starts[cur.index]) is not None:
            earlier = [x for x in run if x.index < cur.index and x.index in out and out[x.index][0] < r]
            reached = [x for x in earlier if x.last_step is not None and x.last_step >= r]
            below = [x for x in earlier if x not in reached]
            src = reached[-1] if reached else max(below, key=lambda x: (x.last_step, x.index), default=None)
            if src is None or src.last_step is None:
                _before_the_log(run, r, _start_known(cur, attempts), out)
                break
            lo = out[src.index][0]
            out[src.index] = (lo, max(lo, min(src.last_step, r)), _start_known(cur, attempts))
            cur = src
    return out


def _before_the_log(run: list[Attempt], back: int, known: bool, out: dict[int, tuple[int, int, bool]]) -> None:
    """A rollback below every start in the run (to a checkpoint from before the log began, or a relaunch
    from scratch after a failure): the run's first attempt, or the launches before it the log does not
    show, ran those steps too; they are its redone work (fairseq's relaunch from the 30000-update checkpoint
    after a log that began at 40015: 12,833 redone, the 10,015 before the log with them)."""
    first = next((a for a in run if a.index in out), None)
    if first is not None and back < out[first.index][0] and out[first.index][0] == out[first.index][1]:
        out[first.index] = (back, back, known)


def _first_run_step(a: Attempt, start: int, attempts: list[Attempt]) -> int:
    """The step before the first the attempt itself ran, for its redone count: its start (start_of),
    unless that estimate is an earlier launch's last line in an earlier epoch than the attempt's first
    line: a relaunch whose first line is epoch 4's resumed from the end of epoch 3 (a save each epoch), past
    that line (1004), so it ran from just before its first line (1071). Never more steps redone than the
    attempt ran: the rest of a rollback below it is the earlier launch's."""
    first = next((m for m in a.marks if m.kind == "step" and m.step is not None), None)
    if _start_known(a, attempts) or first is None or first.step is None or first.epoch is None:
        return start
    ended = [
        m.epoch
        for x in attempts
        if x.index < a.index
        for m in x.marks
        if m.kind == "step" and m.step == start and m.epoch is not None
    ]
    return max(start, first.step - 1) if ended and max(ended) < first.epoch else start


def _runs(shown_attempts: list[Attempt]) -> list[list[Attempt]]:
    """The shown attempts split into runs at each that starts a new one (Attempt.new_run)."""
    runs: list[list[Attempt]] = []
    for a in shown_attempts:
        if a.new_run or not runs:
            runs.append([])
        runs[-1].append(a)
    return runs


def start_of(a: Attempt, attempts: list[Attempt]) -> int | None:
    """The step the attempt started from, the one estimate every count here reads: 0 for a relaunch whose
    first line is its first log interval's and that names no resume step (_from_scratch), else
    resume_point, else (nothing says where it started) its first step line's step. The log's first
    attempt, starting mid-run and printing every step, starts one before its first step line (that line
    says the step ran)."""
    if a.first_step is None and a.resume_step is None:
        return None
    shown_before = [x for x in shown(attempts) if x.index < a.index]
    if shown_before and not a.resume_known and _from_scratch(a, shown_before):
        return 0
    # (no resume step at all: the log's first attempt, starting mid-run: from its first step line)
    start = resume_point(a, attempts) if a.resume_step is not None else a.first_step
    if start is not None and attempts and a is attempts[0] and starts_unseen(attempts) and _every_step_recorded(a):
        start -= 1
    return start


def _start_known(a: Attempt, attempts: list[Attempt]) -> bool:
    """The attempt's start is read from the log (a load line, a start at 0), not estimated."""
    shown_before = [x for x in shown(attempts) if x.index < a.index]
    return a.resume_known or (bool(shown_before) and _from_scratch(a, shown_before))


def resume_point(a: Attempt, attempts: list[Attempt]) -> int | None:
    """The step a launch resumed from, the one estimate start_of (and so every count here) reads (three
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
    """Steps the log shows run and not lost to a later rollback: the steps kept_ranges keeps (never 0 beside
    productive time, as a net count from the log's first step to its last can be when a rollback goes back
    before the log began). A log that starts mid-run and prints every step counts its first step line's
    step too, where that line is a step's own record (it says the step ran: steps 22..29 are 8 lines, 8
    steps); a progress bar's first redraw is only the counter's position (189 -> 210: 21). Printed every
    N > 1 steps, the count is the span's (500 -> 550: 50), a lower bound of the steps the job ran in the
    log (see completed_is_bound). The run's span bounds it: an invariant (a step kept once however often it
    ran) the count itself holds, checked here, not a correction."""
    ranges = kept_ranges(attempts)
    if not ranges:
        return None
    kept = sum(hi - lo for lo, hi, _ in ranges.values())
    return min(kept, _runs_span(attempts))


def _runs_span(attempts: list[Attempt]) -> int:
    """Each run's steps from its lowest start (start_of) to its last step, summed: no count of steps kept
    can exceed it."""
    span = 0
    for run in _runs(shown(attempts)):
        ran = [a for a in run if a.last_step is not None]
        starts = [s for a in ran if (s := start_of(a, attempts)) is not None]
        if ran:
            hi = max(a.last_step or 0 for a in ran)
            span += max(0, hi - min([*starts, hi]))
    return span
