"""From marks to the job's life: attempts, and every second of wall time in one bucket.

The marks are split into attempts (attempts.py). Between two marks the job is in the state the
first one left it in (STATE_AFTER); the interval goes to that state's bucket, with three corrections:

- a step interval longer than its steps at the ideal step time by more than the hang allowance is
  productive for the steps and hung for the rest (no progress while the job still ran);
- during and after a checkpoint save, the time until the next step beyond that step's ideal time is
  checkpoint work with no line of its own (NeMo's second save, a blocking finalize, HF's save with no end
  line), as is the gap up to another save line;
- a step interval that ends with a validation result and made no progress is the validation.

Work lost to a rollback is the failed attempt's productive time past the step the next attempt resumed
from, plus the time from its last step to its failure (or, past the hang allowance, hung).
"""

from __future__ import annotations

import statistics
from itertools import pairwise

from scope.analyzers.goodput.attempts import split_attempts
from scope.analyzers.goodput.cut_stretches import CUT_EXCESS_SHARE, is_cut, unlogged_in_cuts
from scope.analyzers.goodput.describe import describe_attempts
from scope.analyzers.goodput.formats import (
    BAR_ROWS,
    EPOCH_END_ROWS,
    EPOCH_ROWS,
    LAST_STEP_TIME_ROWS,
    TIMER_EXCLUDES_ROWS,
    TRAINING_CLOCK_ROWS,
)
from scope.analyzers.goodput.guards import finite, finite_or_none, no_overlap
from scope.analyzers.goodput.launches import discarded_steps, gaps, launched_without_steps, note_new_runs
from scope.analyzers.goodput.log_interval import log_interval
from scope.analyzers.goodput.mark import Mark
from scope.analyzers.goodput.prepare import data_stalls, prepare
from scope.analyzers.goodput.redone import (
    kept_steps,
    mark_redone,
    optimizer_steps,
    starts_unseen,
    step_marks,
)
from scope.analyzers.goodput.stated_hangs import carve_hangs
from scope.analyzers.goodput.states import (
    BUCKET_OF_STATE,
    BUCKETS,
    FAILED_ENDS,
    HANG_MIN_S,
    HANG_MIN_STEPS,
    PASSIVE,
    STATE_AFTER,
    Accounting,
    Attempt,
    Interval,
)

# An attempt's first steps slower than this many ideal steps are warm-up (compilation, autotuning, the
# allocator and the input pipeline filling): their time beyond the ideal is split out of productive time.
WARMUP_FACTOR = 2.0
WARMUP_STEP_LINES = 3
# States whose work the step lines' own timers leave out (a save, an evaluation before the next steps)
TIMER_EXCLUDES = frozenset({"save", "post_save", "eval", "eval_save"})
# A step line's timer covering this many times its interval reaches back before the line before it
TIMER_REACH_FACTOR = 1.2
# Checkpoint work with no line of its own after a save (a second copy, a finalize) counts up to this long;
# beyond it the time is unexplained (a stall, or a stop and a relaunch whose lines the log does not show).
UNLOGGED_SAVE_MAX_S = 1800.0
# Lines after which a save has shown all it will: its end, or a file it wrote (HF Trainer's `... saved in`)
SAVE_LAST_LINES = frozenset({"save_end", "save_progress"})
# The line that begins the wait for the async saves still pending when training ended (formats/megatron.py)
FINAL_FLUSH_ROW = "async_save_final_flush"
# A final flush of the pending async saves with no end line counts as the save up to the hang allowance (a
# flush that writes longer says so with its end line: NeMo's `Successfully saved checkpoint`, Megatron-LM's
# `successfully saved`); past it the log shows nothing of what the job did (an export, a hang)
FLUSH_NO_END_MAX_S = HANG_MIN_S
FLUSH_NO_END = "a final flush with no end line: counted as the save up to the hang allowance, the rest unexplained"
# After a save's last file line (not its end line), the most seconds over the next steps' pace read as their
# noise (LLaMA-Factory's LoRA saves, 0-1 s by their lines: the next 5 steps 3-10.6 s over the pace within a
# tenth of their stretch); beyond, the unlogged rest of the save (HF's optimizer.pt, trainer_state.json)
NOISE_AFTER_SAVE_FILE_MAX_S = 15.0
AFTER_SAVE_LINES = "after the save's last line, before the next line"
SAVED_BEFORE_ITS_LINE = "a save whose line is printed once it is written"


# A progress bar's elapsed clock counts whole seconds: a step time from two of its frames a step apart is off
# by up to a second (1.68 s steps read as 1 s and 2 s, their median 2 s; steps under a second as 0 s or 1 s).
# Its samples are taken over at least this many seconds of it (off by at most a fifth, mostly far less).
BAR_SAMPLE_MIN_S = 5.0


def step_times(marks: list[Mark]) -> list[tuple[int, float]]:
    """(step, seconds per step): from the lines' own elapsed-time fields where they have them, else from
    the intervals between consecutive step lines with nothing else between them (a bar's frames over at
    least BAR_SAMPLE_MIN_S of its clock)."""
    fields = [
        (m.step, m.step_s) for m in marks if m.kind == "step" and m.step is not None and m.step_s and m.step_s > 0
    ]
    # one sample per step line run: two rows printing the same step's time (DeepSpeed's and Megatron's) once
    fields = [f for i, f in enumerate(fields) if i + 1 == len(fields) or fields[i + 1][0] != f[0]]
    if len(fields) >= 2:
        return [(int(s), float(d)) for s, d in fields]
    per_step: list[tuple[int, float]] = []
    prev: Mark | None = None
    for m in marks:
        if m.kind == "step" and prev is not None and m.step is not None and prev.step is not None:
            d = m.step - prev.step
            if d > 0 and _within_bar_second(prev, m):
                continue  # (the window goes on from the same frame)
            timed = m.t is not None and prev.t is not None and "filled" not in (m.t_src, prev.t_src)
            if d > 0 and timed and (m.t or 0.0) > (prev.t or 0.0):
                per_step.append((m.step, ((m.t or 0.0) - (prev.t or 0.0)) / d))
        if m.kind == "step":
            prev = m
        elif m.kind not in PASSIVE:
            prev = None
    if not per_step:
        return [(int(s), float(d)) for s, d in fields]
    return per_step


def _within_bar_second(prev: Mark, m: Mark) -> bool:
    """Two frames of one bar less than BAR_SAMPLE_MIN_S apart on its whole-second clock, both timed by it."""
    if prev.rel is None or m.rel is None or prev.row != m.row or prev.row not in BAR_ROWS:
        return False
    return "bar" in (prev.t_src, m.t_src) and 0.0 <= m.rel - prev.rel < BAR_SAMPLE_MIN_S


def ideal_step_time(marks: list[Mark]) -> tuple[float | None, list[tuple[int, float]]]:
    """The median step time (the ideal, as ml-goodput-measurement takes it) and the samples it came from."""
    samples = step_times(marks)
    return (statistics.median(d for _, d in samples) if samples else None), samples


# An attempt with this many step-time samples of its own is measured against its own median, not the job's
ATTEMPT_IDEAL_MIN_SAMPLES = 20


def _attempt_ideal(a: Attempt, ideal: float | None) -> float | None:
    """The ideal step time an attempt's stretches are measured against: its own median where it has enough
    samples. Relaunches from scratch may train another configuration (YOLOX on a 518-iteration dataset at
    0.53 s, then a 157-iteration one at 0.30 s): against the job's 0.39 s median the first run's cut stretches,
    at its own steady pace, read as 1.2 h of hangs."""
    own = step_times(a.marks)
    return statistics.median(d for _, d in own) if len(own) >= ATTEMPT_IDEAL_MIN_SAMPLES else ideal


def account(marks: list[Mark], wall_bounds: tuple[float | None, float | None] = (None, None)) -> Accounting:
    marks = prepare(finite(marks))
    wall_bounds = (finite_or_none(wall_bounds[0]), finite_or_none(wall_bounds[1]))
    ideal, step_times = ideal_step_time(marks)
    marks = _open_with_start(marks, wall_bounds[0])
    attempts = split_attempts(marks)
    for a in attempts:
        data_stalls(a.marks)
    describe_attempts(attempts, ideal)
    note_new_runs(attempts)
    intervals: list[Interval] = []
    every = log_interval(step_marks(attempts))  # the cuts' measure, for the timeline and unlogged_in_cuts alike
    ideals = {a.index: _attempt_ideal(a, ideal) for a in attempts}
    stepless = not any(m.kind == "step" for m in marks)  # (no step line in the whole log: steps unseen)
    for a in attempts:
        intervals.extend(_attempt_intervals(a, ideals[a.index], every, stepless))
    intervals.extend(gaps(attempts))
    _teardown_after_failure(attempts, intervals)
    redone, bound = mark_redone(attempts, intervals, ideal)
    _stopped_tails(attempts, intervals, ideal)
    start, end = _bounds(intervals, wall_bounds)
    if start is not None and end is not None:
        _trailing(attempts, intervals, end, stepless)
        _cover_edges(intervals, start, end)
        intervals = carve_hangs(no_overlap(intervals, start, end), marks)
        intervals = unlogged_in_cuts(intervals, every, ideal, ideals)
    if len(attempts) < 2:
        _no_restart_no_failure_to_restart(intervals, marks)
    buckets = dict.fromkeys(BUCKETS, 0.0)
    warnings = [m.note for m in marks if m.note] + _flush_no_end_notes(intervals)
    for iv in intervals:
        buckets[iv.bucket] += max(0.0, iv.end - iv.start)
    wall = (end - start) if start is not None and end is not None else 0.0
    iterations, optimizer = kept_steps(attempts), optimizer_steps(attempts)
    return Accounting(
        attempts=attempts,
        intervals=intervals,
        buckets=buckets,
        wall_s=wall,
        start=start,
        end=end,
        ideal_step_s=ideal,
        step_times=step_times,
        steps_completed=_steps_completed(attempts, buckets, iterations, optimizer),
        # (an optimizer step counter says how many steps ran, whatever the lines' interval)
        completed_is_bound=optimizer is None and starts_unseen(attempts) and log_interval(step_marks(attempts)) > 1,
        iterations_completed=iterations if optimizer is not None else None,
        steps_redone=redone,
        redone_is_bound=bound,
        saves=_timed_by_the_span_before(_spans(marks, "save"), intervals),
        loads=_spans(marks, "load"),
        failures=[m for m in marks if m.kind == "failure"],
        steps_discarded=discarded_steps(attempts),
        warnings=warnings,
    )


TEARDOWN_AFTER_FAILURE = "the failed process's own last lines (its teardown) after its failure line"


def _flush_no_end_notes(intervals: list[Interval]) -> list[str]:
    """What the report says of a final flush with no end line cut at FLUSH_NO_END_MAX_S (_trailing)."""
    rest = [iv for iv in intervals if iv.why == FLUSH_NO_END and iv.bucket == "unexplained"]
    return [
        f"a final flush of the pending async saves has no end line: counted as checkpoint_save for "
        f"{FLUSH_NO_END_MAX_S:.0f} s (the hang allowance), the {iv.end - iv.start:.0f} s after it unexplained"
        for iv in rest
    ]


def _teardown_after_failure(attempts: list[Attempt], intervals: list[Interval]) -> None:
    """An attempt that failed, relaunched after: from its failure to its own last line (a teardown line with
    nothing to say of training: torchtitan's `Destroying the purge thread.` 30 s after the watchdog's
    timeout) the job was still failing, the restart's cost as the gap after it is."""
    for a in attempts[:-1]:
        said = [m.t for m in a.marks if m.t is not None and m.kind not in PASSIVE]
        if a.end is None or not said or BUCKET_OF_STATE.get(a.final_state) != "failure_to_restart":
            continue
        if a.end > max(said):
            intervals.append(Interval(max(said), a.end, "failure_to_restart", a.index, why=TEARDOWN_AFTER_FAILURE))


SURVIVED_FAILURE = "a failure line the process went past: no restart followed"


def _no_restart_no_failure_to_restart(intervals: list[Interval], marks: list[Mark]) -> None:
    """With one attempt nothing restarted: time after a failure line the process survived (an optional import's
    traceback in start-up, then the trainer's own start seconds later) is no failure's restart. Before the
    first step it is the start-up's (initialization); after, unexplained."""
    first_step = min((m.t for m in marks if m.kind == "step" and m.t is not None), default=None)
    for iv in intervals:
        if iv.bucket == "failure_to_restart":
            started = first_step is not None and first_step <= iv.start
            iv.bucket, iv.why = ("unexplained" if started else "initialization"), SURVIVED_FAILURE


def _stopped_tails(attempts: list[Attempt], intervals: list[Interval], ideal: float | None) -> None:
    """The step under way when Ctrl-C or a SIGTERM from outside stopped an attempt never completed: not
    productive time. A silence after the last step far longer than a step (and than a hang's least span)
    before any ending, a stop or a failure, is a hang: a job hanging until its time limit cancels it."""
    stopped = {a.index for a in attempts if a.ended == "interrupted" or (a.ended == "stopped" and not a.silent_end)}
    ended = {a.index for a in attempts if a.ended in ("interrupted", "stopped", *FAILED_ENDS)}
    hang_s = max(HANG_MIN_S, HANG_MIN_STEPS * ideal) if ideal else None
    for iv in intervals:
        if iv.bucket != "productive" or iv.why != "lost tail":
            continue
        if iv.attempt in ended and hang_s is not None and iv.end - iv.start > hang_s:
            iv.bucket, iv.why = "hung", "no line after the last step until the attempt ended"
        elif iv.attempt in stopped:
            iv.bucket, iv.why = "unexplained", "stopped (Ctrl-C, SIGINT or SIGTERM) before the step completed"


def _open_with_start(marks: list[Mark], start: float | None) -> list[Mark]:
    """The log's first line, when it comes before the first line that says anything: the job was starting."""
    said = [m.t for m in marks if m.t is not None and m.kind not in PASSIVE]
    if start is None or not said or min(said) <= start:
        return marks
    return [Mark("init_begin", 0, "", "first line", t=start, t_src="own", text="the log's first line"), *marks]


def _steps_completed(
    attempts: list[Attempt], buckets: dict[str, float], iterations: int | None, optimizer: int | None
) -> int | None:
    """The steps the log shows completed: unknown where time went by inside training with no step line in the
    whole log (training_unseen: its steps, if any, are not shown), 0 where launches never reached training."""
    if buckets["training_unseen"] > 0:
        return None
    if launched_without_steps(attempts):
        return 0
    return iterations if optimizer is None else optimizer


def _attempt_intervals(a: Attempt, ideal: float | None, every: int = 1, stepless: bool = False) -> list[Interval]:
    out: list[Interval] = []
    timed = [m for m in a.marks if m.t is not None and m.kind not in PASSIVE]
    state = "init"
    last_step: int | None = a.resume_step
    trained = False
    carry: tuple[str, float] | None = None  # a save / load with no timed span: its duration, from the next gap
    step_lines = 0  # step lines reached so far in this attempt (its first ones may be warm-up)
    counted_mark: Mark | None = None  # an evaluation or save line whose steps were counted before it
    counted_to: int | None = None  # the step those counted steps reached
    before: Mark | None = None
    flush_ends = _final_flush_ends(timed)
    for i, (cur, nxt) in enumerate(pairwise(timed)):
        state = STATE_AFTER.get(cur.kind, state)
        if id(cur) in flush_ends:
            # the final flush's last end line (one per pending save): training was over before it, the
            # process goes on to other work (an export, its shutdown), no more the save's
            state = "done"
        if _save_after_untimed_eval(before, cur):
            state = "eval_save"
        before = cur
        if cur.kind == "step" and cur.step is not None:
            last_step = cur.step if last_step is None else max(last_step, cur.step)
            trained = True
        if cur.kind == "load_end":
            state = "productive" if trained else "init"
        if cur is counted_mark and counted_to is not None:
            last_step = counted_to  # steps an evaluation line counts (nanoGPT's `step N: train loss`) ran before it
        carry = _untimed_span(a, cur) or carry
        length = (nxt.t or 0.0) - (cur.t or 0.0)
        if length <= 0:
            continue
        t0 = cur.t or 0.0
        if carry is not None:
            take = min(carry[1], length)
            out.append(Interval(t0, t0 + take, carry[0], a.index, why="timer of an untimed save/load"))
            t0, length, carry = t0 + take, length - take, None
            if length <= 0:
                continue
        steps = 0
        if nxt.kind == "step" and nxt.step is not None:
            steps = max(0, nxt.step - last_step) if last_step is not None else 1
            if step_lines and cur.kind != "step":
                step_lines = WARMUP_STEP_LINES  # past the attempt's first run of steps: no more warm-up
            step_lines += 1
        elif _eval_counts_steps(state, nxt, last_step) and nxt.step is not None and last_step is not None:
            steps, counted_mark, counted_to = nxt.step - last_step, nxt, nxt.step  # an evaluation, no line before
        elif _save_counts_steps(state, nxt, last_step) and nxt.step is not None and last_step is not None:
            steps, counted_mark, counted_to = nxt.step - last_step, nxt, nxt.step  # a save after cut step lines
        elif (reached := _end_line_after_cut(state, nxt, timed[i + 2 :], last_step, every)) is not None:
            counted_mark, counted_to = nxt, reached
            out.extend(_cut_ending_at(t0, nxt, reached - (last_step or 0), a.index))
            continue
        elif nxt.kind == "save_end" and nxt.row in EPOCH_END_ROWS:
            steps = _epoch_rest(cur)  # (counted by the next step line: here only the time they took)
        shifted = Mark(cur.kind, cur.line, cur.file, cur.row, t=t0, t_src=cur.t_src)
        warm = step_lines if state == "productive" and step_lines <= WARMUP_STEP_LINES and nxt.kind == "step" else 0
        out.extend(_classify(state, shifted, nxt, length, steps, ideal, a.index, warm, every))
    # (a step line that is the attempt's last timed line completed its steps too: it is never `cur` above)
    trained = trained or any(m.kind == "step" and m.step is not None for m in timed)
    a.final_state = STATE_AFTER.get(timed[-1].kind, state) if timed else state
    if timed and _ends_final_flush(timed):
        a.final_state = "done"  # (the final flush's end line is the attempt's last: the save is over)
    a.final_carry = carry or _untimed_span(a, timed[-1]) if timed else None
    return out if trained else [_no_step_yet(iv, _unseen_from(a, stepless)) for iv in out]


SHUTDOWN_AFTER_LAST_STEP = "after the last step: shutdown"
TRAINING_UNSEEN = "inside training (after its start line) with no step line in the log: what it did is not shown"


def _unseen_from(a: Attempt, stepless: bool) -> float | None:
    """Where an attempt's training with steps unseen begins: its training-start line (a train_begin row:
    `Starting training!`, `***** Running training *****`), in a log with no step line at all, where the
    training's steps, if it ran any, are not shown. None where the log shows step lines elsewhere: a launch
    without one there never reached its first step."""
    return a.training_start if stepless else None


def _no_step_yet(iv: Interval, unseen_from: float | None = None) -> Interval:
    """In a launch that never completed a step, no second was productive: its training loop had begun (a
    `Running training` line) but the time until it ended is still its start-up's. In a log that shows no
    step line at all (`unseen_from`: the training start), the time after the training began is training whose
    productivity is unknown (training_unseen), neither start-up nor productive."""
    in_training = iv.bucket == "productive" or iv.why == SHUTDOWN_AFTER_LAST_STEP  # (no step: no last one)
    if in_training and unseen_from is not None and iv.start >= unseen_from - 1e-9:
        iv.bucket, iv.why = "training_unseen", TRAINING_UNSEEN
    elif iv.bucket == "productive":
        iv.bucket, iv.why = "initialization", "no step completed in this launch"
    elif iv.why == AFTER_SAVE_LINES:
        # with no step line read, nothing bounds a save from after: the time to the next line (an evaluation,
        # 35 min later) is not shown to be the save's (LLaMA-Factory's 1-s saves booked 11.6 h, a critical stall)
        iv.bucket, iv.why = "unexplained", "no step line read: what ran after the save is not shown"
    return iv


def _save_after_untimed_eval(before: Mark | None, cur: Mark) -> bool:
    """A save line right after an evaluation's result line, neither with a time of its own (nanoGPT with no
    timestamps: `step 100: train loss .., val loss ..`, `saving checkpoint`, then the iteration whose timer
    holds both): the time both took shows only in the next step's, and the evaluation, which ran before
    its line, is most of it (nanoGPT's first iteration after the step-0 evaluation, with no save, is as slow)."""
    if before is None or before.kind not in ("eval_begin", "eval_end") or cur.kind != "save_begin":
        return False
    return "filled" == cur.t_src == before.t_src and cur.t == before.t


def _end_line_after_cut(state: str, nxt: Mark, after: list[Mark], last_step: int | None, every: int) -> int | None:
    """The step an evaluation's result line or a save's end line with no step of its own (PaddleDetection's
    `Total sample number` and `Save checkpoint`, detectron2's `copypaste:`) closes at, where the step line
    after it jumps a cut from the last one before (cut_stretches.is_cut: whole epochs left out of the log):
    the steps to that line ran before it, so the cut is not all that evaluation's or save's. None where no
    cut ends at the line."""
    if state != "productive" or nxt.kind not in ("eval_end", "save_end") or nxt.step is not None or last_step is None:
        return None
    ahead = next((m for m in after if m.kind == "step" and m.step is not None), None)
    if ahead is None or ahead.step is None or not is_cut(ahead.step - last_step, every):
        return None
    return ahead.step


def _cut_ending_at(t0: float, nxt: Mark, steps: int, attempt: int) -> list[Interval]:
    """A cut stretch that ends at an evaluation's or a save's line (_end_line_after_cut): the steps it counts,
    productive as any cut stretch, for unlogged_in_cuts to split as it splits every cut (its steps at the
    ideal step time productive, the rest unexplained: the evaluations and saves of the epochs left out, and
    this one's, are in it, how long each is not shown)."""
    t1 = nxt.t or t0
    return [Interval(t0, t1, "productive", attempt, steps)] if t1 > t0 else []


def _eval_counts_steps(state: str, nxt: Mark, last_step: int | None) -> bool:
    """A timed evaluation line, with no start line before it, whose step is past the last step line: the
    steps between ran before the evaluation (nanoGPT evaluates at the top of iteration N; LLaMA-Factory's
    eval record at step 25 logging every 10). Timed by its own clock or its own elapsed field (BAR_ROWS:
    LLaMA-Factory's `elapsed_time`), not by a time filled in from the lines around it."""
    timed = nxt.t_src == "own" or (nxt.t_src == "bar" and nxt.row in BAR_ROWS)
    if nxt.kind != "eval_end" or not timed or nxt.step is None or last_step is None:
        return False
    return state == "productive" and nxt.step > last_step


def _save_counts_steps(state: str, nxt: Mark, last_step: int | None) -> bool:
    """A save line, after a save with no step line between, whose step (its file's iteration: detectron2's
    model_0001999.pth) is past the last step counted: the steps between ran before it (a log cut to its save
    lines; the saves of HaowenGuan/NYU-Semi-Supervise-Object-Detection's log_supervised_*.txt 500 iterations
    apart), so the save before did not block until it. After steps, the same: mmcv's IterBasedRunner prints
    `Saving checkpoint at 1000 iterations` once iteration 1000 ran (CheckpointHook.after_train_iter), before
    that iteration's own line; the iterations since the line before ran before the save line, not after it."""
    if nxt.kind != "save_begin" or nxt.step is None or last_step is None:
        return False
    return state in ("save", "post_save", "productive") and nxt.step > last_step


def _untimed_span(a: Attempt, m: Mark) -> tuple[str, float] | None:
    """A save or load end line with a duration (its own, or a timer's) but no timed begin before it."""
    if m.kind not in ("save_end", "load_end") or not m.dur_s:
        return None
    kind = m.kind[:4]
    idx = next((i for i, x in enumerate(a.marks) if x is m), None)
    if idx is None:
        return None
    begin = next((x for x in reversed(a.marks[:idx]) if x.kind in (f"{kind}_begin", f"{kind}_progress")), None)
    if begin is not None and begin.t is not None and m.t is not None and m.t - begin.t > 0.5 * m.dur_s:
        return None
    return ("checkpoint_save" if kind == "save" else "checkpoint_load", m.dur_s)


def _classify(
    state: str,
    cur: Mark,
    nxt: Mark,
    length: float,
    steps: int,
    ideal: float | None,
    attempt: int,
    warm: int = 0,
    every: int = 1,
) -> list[Interval]:
    t0, t1 = cur.t or 0.0, nxt.t or 0.0
    counts = nxt.kind == "step" or (nxt.kind == "save_begin" and steps > 0)  # (_save_counts_steps)
    if state in ("productive", "post_save", "save", "init", "eval", "eval_save") and counts:
        work = min(length, steps * ideal) if ideal else length
        if state in TIMER_EXCLUDES and (stated := _stated_work(cur, nxt, steps)) is not None:
            work = min(length, max(work, stated))
        rest = length - work
        lost = _lost_before_steps(state, rest, ideal)
        if lost is not None and nxt.row in TRAINING_CLOCK_ROWS and lost[0] in ("checkpoint_save", "evaluation"):
            # the step's time is the training clock's growth, which stops for a save or a validation: none of
            # it is theirs (their own time is not in the log: report.wall_is_lower_bound)
            lost = None
        if lost is not None and lost[0] == "checkpoint_save" and _steps_noise_after_save(cur, rest, length):
            lost = None
        if lost is not None and lost[0] == "checkpoint_save" and _unended_worded_save(cur):
            lost = _lost_before_steps("productive", rest, ideal) or lost  # (past the hang allowance: hung)
        if lost is not None and lost[0] == "hung" and ideal and is_cut(steps, every):
            # many steps (a log cut between two lines hours apart): no hang shown. At about the steady pace
            # the rest is the pace's variation (epoch turnovers, unlogged saves; PaddleSeg's 57,950 iterations
            # over 18 h at 1.129 s against 1.10 s left 1,668 s); past it, what the cut lines would have shown
            # (YOLOX's 24 evaluations cut from 249 epochs): unexplained, as unlogged_in_cuts reads it. One log
            # interval's steps (a line every 1,000 iterations, one 390 s late) is no cut: its stall is a hang
            lost = None
        if lost is not None and lost[0] == "hung" and warm == 1:
            lost = None  # the attempt's first step line, however late: its compilation, not a stall (it came)
        if lost is None and warm and ideal and _warming(warm, rest, length, steps, ideal):
            lost = ("warmup", "first steps slower than the ideal (compilation, autotuning, warm caches)")
        out: list[Interval] = []
        mid = t0
        if lost is not None:  # the interval's lost part first (it comes before the steps complete)
            mid = t0 + rest
            cap = max(UNLOGGED_SAVE_MAX_S, HANG_MIN_STEPS * (ideal or 0.0))
            if lost[0] == "checkpoint_save" and rest > cap:
                # no save runs on for hours without a line: a stall, or a stop and a relaunch the log hides
                out.append(Interval(t0, t0 + cap, lost[0], attempt, why=lost[1]))
                lost, t0 = ("unexplained", "no line after the save for this long: a stall or a relaunch"), t0 + cap
            out.append(Interval(t0, mid, lost[0], attempt, why=lost[1]))
        # of the steps' own time, what their timer (or the hook) says they waited for input
        data = (
            min(t1 - mid, steps * nxt.data_stall_s)
            if nxt.data_stall_s and not _timer_reaches_back(nxt, steps, length)
            else 0.0
        )
        if data > 0:
            out.append(Interval(mid, mid + data, "data_stall", attempt, why="input data"))
            mid += data
        out.append(Interval(mid, t1, "productive", attempt, steps))
        return out
    if state == "productive" and nxt.kind == "save_end" and not nxt.dur_s and _save_alone_before(cur, nxt):
        return _save_before_its_line(cur, nxt, steps, ideal, attempt)
    if state == "eval_save":
        # an evaluation and a save whose lines have no time of their own, between two timestamped lines
        # (DeepSpeed-Chat's final `Evaluating rewards` and `saving the final model ...`): each took at most this
        why = "an evaluation, then a save, untimed lines between two timestamps: together at most this span"
        return [Interval(t0, t1, "evaluation", attempt, why=why)]
    if state == "productive" and nxt.kind == "eval_end":
        # the steps the evaluation line counts past the last step line ran first, then the evaluation
        work = min(length, steps * ideal) if ideal and steps else 0.0
        evaluation = Interval(t0 + work, t1, "evaluation", attempt, why="validation with no line of its own")
        return [Interval(t0, t0 + work, "productive", attempt, steps), evaluation] if work > 0 else [evaluation]
    if state == "done" and cur.kind == "train_end" and nxt.kind == "eval_end":
        # the evaluation after the training's summary (HF / LLaMA-Factory do_eval: trainer.evaluate() once
        # train() returned, its record 220 s after the closing one): its line ends it
        return [Interval(t0, t1, "evaluation", attempt, why="the evaluation after training")]
    if not counts and _untimed_eval_end(cur):
        return [Interval(t0, t1, "evaluation", attempt, why=UNTIMED_EVAL_END)]
    if state == "productive" and nxt.kind in ("job_end", "train_end", "exit"):
        return [Interval(t0, t1, "unexplained", attempt, why=SHUTDOWN_AFTER_LAST_STEP)]
    if state in ("save", "post_save") and nxt.kind == "eval_end":
        # mmcv's epoch end: `Saving checkpoint at N epochs`, then the validation pass, whose metrics line is
        # the next; no line between them splits the save from the pass, which is most of it (minutes of
        # inference against seconds of torch.save): evaluation, the save's own share unknown. After a save's
        # end line (PaddleDetection's epoch-end `Save checkpoint`, then its evaluation) the pass is all of it.
        return [Interval(t0, t1, "evaluation", attempt, why="a save, then an evaluation with no line between")]
    if state == "post_save" and nxt.kind == "eval_begin":
        # after a save's end line, up to the evaluation's first batch line (PaddleDetection's `Eval iter: 0`):
        # the validation loader's set-up, the evaluation's as where that first line is missing (above)
        return [Interval(t0, t1, "evaluation", attempt, why="the evaluation's set-up after the save's end line")]
    if state == "productive" and nxt.kind in ("failure", "restart", "stop", "interrupt"):
        # the step under way when the attempt ended: lost if it failed (redone) or was stopped (_stopped_tails)
        return [Interval(t0, t1, "productive", attempt, why="lost tail")]
    why = AFTER_SAVE_LINES if state in ("save", "post_save") and cur.kind in SAVE_LAST_LINES else ""
    return [Interval(t0, t1, BUCKET_OF_STATE.get(state, "unexplained"), attempt, why=why)]


def _save_before_its_line(cur: Mark, nxt: Mark, steps: int, ideal: float | None, attempt: int) -> list[Interval]:
    """A save whose only line is printed once it is written (PaddleDetection's `Save checkpoint: ...`, logged
    after paddle.save of the .pdparams and .pdopt): it ran since the line before. The STEPS before it (the
    epoch's iterations after the last step line: ppdet logs iteration 200 of 232) ran first, at the ideal
    step time; the rest is the save's."""
    t0, t1 = cur.t or 0.0, nxt.t or 0.0
    work = min(t1 - t0, steps * ideal) if ideal else 0.0
    why = SAVED_BEFORE_ITS_LINE
    save = Interval(t0 + work, t1, "checkpoint_save", attempt, why=why)
    return [Interval(t0, t0 + work, "productive", attempt), save] if work > 0 else [save]


def _save_alone_before(cur: Mark, nxt: Mark) -> bool:
    """What ran between `cur` and a save's end line with no begin line is known to be the save (and the
    epoch's last iterations before an epoch-end save): after a line other than a step's, or at an epoch's
    end. Mid-epoch (OpenPCDet's `Save latest model` every N minutes) unlogged steps ran before it too."""
    return cur.kind != "step" or nxt.row in EPOCH_END_ROWS


def _epoch_rest(m: Mark) -> int:
    """The iterations of its epoch after an epoch row's step line (0 for any other line)."""
    if m.kind != "step" or m.row not in EPOCH_ROWS or not m.total or m.step is None:
        return 0
    return -m.step % m.total


def _stated_work(cur: Mark, nxt: Mark, steps: int) -> float | None:
    """The seconds the interval's steps took by the step line's own timer (Megatron's elapsed time per
    iteration, mmcv's `time: 9.172`: the mean over the iterations since the line before), where both ends are
    the lines' own timestamps and the timer leaves the operation before out (TIMER_EXCLUDES_ROWS): Megatron
    stops its interval timer for a save and an evaluation; mmcv's and MMEngine's IterTimerHook restarts only
    at an epoch's start, so only a next line whose stretch begins a new epoch excludes the epoch-end save.
    There the operation before blocked at most what the timer leaves of the interval (a slow stretch after it
    is the steps', not the save's). Elsewhere (mmcv's IterBasedRunner: CheckpointHook, priority NORMAL, runs
    before IterTimerHook, LOW, so the save is inside that iteration's time) None: no bound. A timer of the
    last step alone (LAST_STEP_TIME_ROWS) says nothing of the others."""
    if not steps or not nxt.step_s or nxt.row in LAST_STEP_TIME_ROWS or cur.t_src != "own" or nxt.t_src != "own":
        return None
    excludes = TIMER_EXCLUDES_ROWS.get(nxt.row, "")
    if excludes == "epoch" and not _starts_epoch(nxt, steps):
        return None
    return steps * nxt.step_s if excludes else None


def _starts_epoch(nxt: Mark, steps: int) -> bool:
    """The steps up to `nxt` (an epoch row's line) include its epoch's first iteration."""
    if nxt.step is None or not nxt.total:
        return False
    return nxt.step - steps < nxt.total * ((nxt.step - 1) // nxt.total) + 1


def _timer_reaches_back(nxt: Mark, steps: int, length: float) -> bool:
    """The line's timer covers more than the interval (its steps at its own mean step time past
    TIMER_REACH_FACTOR times the interval): its stretch began before the line before it, so the data wait it
    states is partly another stretch's (mmseg 0.x's IterBasedRunner: the evaluation after iteration 4000
    runs after IterTimerHook, so the next iteration's data_time holds it, time 1.7 s over 50 iterations 25 s
    after the evaluation's line): not this interval's stall, nor to be taken twice."""
    return bool(nxt.step_s and steps * nxt.step_s > TIMER_REACH_FACTOR * length)


def _warming(line: int, rest: float, length: float, steps: int, ideal: float) -> bool:
    """An attempt's early step lines ran slow enough to be warm-up: WARMUP_FACTOR times slower than ideal
    per step, or, the first one (however many steps it covers: a log every N steps), by more than
    WARMUP_FACTOR ideal steps."""
    if rest <= 0:
        return False
    return length > WARMUP_FACTOR * max(1, steps) * ideal or (line == 1 and rest > WARMUP_FACTOR * ideal)


def _steps_noise_after_save(cur: Mark, rest: float, length: float) -> bool:
    """After a save's last line (its end, or the last file it wrote: HF Trainer's `Special tokens file saved
    in ...`), time beyond the next steps at the ideal step time that is step-time noise (CUT_EXCESS_SHARE of
    the stretch, as for a cut) is the steps', not the save's: the save blocked no longer than its lines show.
    LLaMA-Factory's LoRA saves, 0-1 s by their lines, were each booked the 3-10 s by which the next 5 steps ran
    over the median pace (71 s for 22 saves). Minutes past it (NeMo's .nemo written ~100 s after its line,
    steps 2.7 s) stay the save's."""
    if cur.kind not in SAVE_LAST_LINES or rest > CUT_EXCESS_SHARE * length:
        return False
    # a file's line is not the save's end: HF Trainer writes the optimizer, scheduler and trainer state after
    # its last `saved in` line, seconds to minutes for a full model's optimizer
    return cur.kind == "save_end" or rest <= NOISE_AFTER_SAVE_FILE_MAX_S


def _unended_worded_save(cur: Mark) -> bool:
    """A save line read by its wording alone (`Saving trained model to DIR`, structural_words.py), no end line
    after: it says a save began, not that it blocked what follows. Silence after it past the hang allowance
    is what it would be without the line (hung), not a checkpoint stall the line alone would make."""
    return cur.kind == "save_begin" and cur.row == "structural"


def _lost_before_steps(state: str, rest: float, ideal: float | None) -> tuple[str, str] | None:
    """Where the time of an interval beyond its steps at the ideal step time went, by the state before."""
    if rest <= 0:
        return None
    if state in ("post_save", "save"):
        return "checkpoint_save", "unlogged checkpoint work"
    if state == "eval":  # no line says the validation ended: until the next step's work
        return "evaluation", "validation"
    if state == "eval_save":
        return "evaluation", "an evaluation, then a save, inside the next step's time (the save's share unknown)"
    if state == "init":  # no line says training began: the first step's own time is work
        return "initialization", "setup"
    if ideal and rest > max(HANG_MIN_S, HANG_MIN_STEPS * ideal):
        return "hung", "no progress"
    return None


def _bounds(intervals: list[Interval], wall: tuple[float | None, float | None]) -> tuple[float | None, float | None]:
    starts = [iv.start for iv in intervals] + ([wall[0]] if wall[0] is not None else [])
    ends = [iv.end for iv in intervals] + ([wall[1]] if wall[1] is not None else [])
    return (min(starts) if starts else None, max(ends) if ends else None)


def final_flush_end(marks: list[Mark], i: int) -> Mark | None:
    """Where marks[i] begins the final flush of the pending async saves (FINAL_FLUSH_ROW): its end, the last
    of the timed save_end lines right after it (one per pending save: NeMo finalizes each with its own
    `Successfully saved`), before any other line that says something; None where no line ends it."""
    if marks[i].row != FINAL_FLUSH_ROW or marks[i].t is None:
        return None
    end: Mark | None = None
    for x in marks[i + 1 :]:
        if x.kind == "save_end":
            end = x if x.t is not None else end
        elif x.kind not in PASSIVE:
            break
    return end


def _final_flush_ends(marks: list[Mark]) -> set[int]:
    """The ids of the marks that end a final flush (final_flush_end)."""
    return {id(end) for i in range(len(marks)) if (end := final_flush_end(marks, i)) is not None}


def _ends_final_flush(timed: list[Mark]) -> bool:
    """The last line is the end of the wait for the saves still pending when training ended (FINAL_FLUSH_ROW)."""
    return id(timed[-1]) in _final_flush_ends(timed)


def _trailing(attempts: list[Attempt], intervals: list[Interval], end: float, stepless: bool = False) -> None:
    """After the last line that says anything, the job stays in the state that line left it in (a final
    save finishing, or shutting down) until the log's last timestamp."""
    if not attempts or attempts[-1].end is None:
        return
    last = attempts[-1]
    said = [m.t for m in last.marks if m.t is not None and m.kind not in PASSIVE]
    t0 = max(said) if said else (last.end or end)
    if last.final_carry is not None:
        take = min(last.final_carry[1], end - t0)
        intervals.append(Interval(t0, t0 + take, last.final_carry[0], last.index))
        t0 += take
    if end > t0 + 1e-9:
        final = [m for m in last.marks if m.t is not None and m.kind not in PASSIVE]
        if final and _untimed_eval_end(final[-1]):
            intervals.append(Interval(t0, end, "evaluation", last.index, why=UNTIMED_EVAL_END))
            return
        bucket = BUCKET_OF_STATE.get(last.final_state, "unexplained")
        if final and final[-1].row == FINAL_FLUSH_ROW and bucket == "checkpoint_save" and end - t0 > FLUSH_NO_END_MAX_S:
            # a final flush no line ends: the save's for at most the hang allowance, the rest is not shown to be
            intervals.append(Interval(t0, t0 + FLUSH_NO_END_MAX_S, bucket, last.index, why=FLUSH_NO_END))
            intervals.append(Interval(t0 + FLUSH_NO_END_MAX_S, end, "unexplained", last.index, why=FLUSH_NO_END))
            return
        unseen = _unseen_from(last, stepless)
        if bucket == "productive" and unseen is not None and t0 >= unseen:
            # the log ends in training with no step line in it: still training, what it did not shown
            intervals.append(Interval(t0, end, "training_unseen", last.index, why=TRAINING_UNSEEN))
            return
        intervals.append(Interval(t0, end, "unexplained" if bucket == "productive" else bucket, last.index))


UNTIMED_EVAL_END = "an evaluation whose result line has no time of its own: it ended within this span"


def _untimed_eval_end(m: Mark) -> bool:
    """An evaluation's result line with no time of its own (HF's `***** eval metrics *****` block after
    trainer.evaluate()), its time taken from the line before: the evaluation ended somewhere before the
    next timestamped line, so the span up to it is the evaluation's (at most)."""
    return m.kind == "eval_end" and m.t_src == "filled"


def _cover_edges(intervals: list[Interval], start: float, end: float) -> None:
    """Time before the first mark (a job started before its first line we read) and after the last is
    unexplained; gaps no interval covers are too."""
    spans = sorted((iv.start, iv.end) for iv in intervals)
    cursor = start
    gaps: list[tuple[float, float]] = []
    for s, e in spans:
        if s > cursor + 1e-6:
            gaps.append((cursor, s))
        cursor = max(cursor, e)
    if end > cursor + 1e-6:
        gaps.append((cursor, end))
    for s, e in gaps:
        # Before the first mark the job was starting (its first lines name no phase we know).
        bucket = "initialization" if s <= start and e <= (spans[0][0] if spans else end) else "unexplained"
        intervals.append(Interval(s, e, bucket, 0 if bucket == "initialization" else -1, why="no line covers it"))


def _timed_by_the_span_before(
    spans: list[tuple[Mark, Mark | None, float | None]], intervals: list[Interval]
) -> list[tuple[Mark, Mark | None, float | None]]:
    """A save whose only line is its end (PaddleDetection's `Save checkpoint:`) blocked for the span the
    timeline gave it before that line (_save_before_its_line): its blocking time in the checkpoint table."""
    before = {iv.end: iv.end - iv.start for iv in intervals if iv.why == SAVED_BEFORE_ITS_LINE}
    return [
        (b, e, before.get(e.t, span) if e is b and span is None and e.t is not None else span) for b, e, span in spans
    ]


def _ended_later(span: tuple[Mark, Mark | None, float | None], end: Mark) -> tuple[Mark, Mark | None, float | None]:
    """A save whose end line is followed, with no other line between, by a second end line saying no
    duration: the save blocked until that one (NeMo 2's dist-ckpt save line, then `Scheduled async
    checkpoint save` once its callback handed the rest to the background)."""
    begin = span[0]
    if end.t is None or begin.t is None or end.t < begin.t:
        return span
    return (begin, end, end.t - begin.t)


def _spans(marks: list[Mark], kind: str) -> list[tuple[Mark, Mark | None, float | None]]:
    """Each checkpoint save (or load): its first line, its last, and how long it blocked training. A file
    line outside a save (a backup removed after the last one) starts one only if no begin line follows."""
    out: list[tuple[Mark, Mark | None, float | None]] = []
    begin: Mark | None = None
    pending: Mark | None = None
    last: Mark | None = None
    reached: int | None = None  # the step a save with no step of its own follows
    just_ended = False  # the last line that does anything was this kind's end line
    flush_end: Mark | None = None  # the end of the final flush under way (final_flush_end)
    for i, m in enumerate(marks):
        if m.row == FINAL_FLUSH_ROW and begin is None and pending is None and out and m.t is not None:
            # the same save's finalization (the save before it): it runs to the flush's end line; with none,
            # how long it took is unknown, the save blocked at least what it blocked before
            flush_end = final_flush_end(marks, i)
            b, _, before = out[-1]
            done = before or 0.0
            out[-1] = (b, flush_end, done + (flush_end.t or m.t) - m.t) if flush_end is not None else (b, None, before)
            continue
        if flush_end is not None:
            flush_end = None if m is flush_end else flush_end
            if m.kind == f"{kind}_end":
                continue  # (each pending save's end line: NeMo writes one per save it finalizes)
        if m.kind == f"{kind}_end" and just_ended and begin is None and pending is None and m.dur_s is None:
            out[-1] = _ended_later(out[-1], m)  # the same save's blocking part went on to this line
            continue
        if m.kind not in PASSIVE:
            just_ended = m.kind == f"{kind}_end"
        if m.kind == "step" and m.step is not None:
            reached = m.step if reached is None else max(reached, m.step)
        if m.kind.startswith(kind) and m.step is None and kind == "save":
            # a step-less line of an open save is that save's (detectron2's model_final.pth right after
            # model_0002999.pth when MAX_ITER is a multiple of CHECKPOINT_PERIOD: one save of two files)
            m.step = begin.step if begin is not None and begin.step is not None else reached
        if m.kind == f"{kind}_begin":
            if begin is not None and m.step is not None and begin.step is not None and m.step != begin.step:
                # another step's save begins with no end line of the open one's: two saves, its span unknown
                out.append((begin, None, begin.dur_s))
                begin = None
            begin = begin or m
            pending, last = None, m
        elif m.kind == f"{kind}_progress":
            if begin is None and pending is None:
                pending = m
            last = m
        elif m.kind == f"{kind}_end":
            b = begin or pending or m
            span = (m.t - b.t) if b is not m and m.t is not None and b.t is not None else None
            if span is not None and "filled" in (m.t_src, b.t_src) and span <= 0:
                span = None  # lines with no time of their own: how long the save took is unknown, not 0
            if (span is None or span <= 0) and m.dur_s is not None:
                span = m.dur_s
            if span is None and b.dur_s is not None:
                span = b.dur_s
            out.append((b, m, span))
            begin, pending, last = None, None, None
        elif (begin or pending) is not None and m.kind not in PASSIVE and m.t is not None:
            if begin is not None:  # a save with no end line: until its last file line
                span = (last.t - begin.t) if last is not None and last.t is not None and begin.t is not None else None
                out.append((begin, None, span if span else begin.dur_s))
            begin, pending, last = None, None, None
    if begin is not None:
        span = (last.t - begin.t) if last is not None and last.t is not None and begin.t is not None else None
        out.append((begin, None, span if span else begin.dur_s))
    return out
