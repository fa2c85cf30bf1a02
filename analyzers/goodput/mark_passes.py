"""Passes over a log's marks before they are timed and after: steps timed by a rate and the batch, the
epoch's last step a save implies, one record per step in JSON-lines logs, the training bar among
evaluation bars, and the clock's 0 where a log with no timestamps opens with its first step."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from scope.analyzers.goodput.formats import BAR_ROWS, JSONL_ROWS, LINE_FORMATS, SHARED_BARS, UNITLESS_MS_ROWS
from scope.analyzers.goodput.formats.startup import JOB_REPORT_END, JOB_REPORT_START
from scope.analyzers.goodput.mark import Mark

EVAL_BAR = "eval bar"  # the row of the marks an evaluation's bare progress bar gives


def steps_timed_by_rate(marks: list[Mark]) -> list[Mark]:
    """A step line with no timestamp whose only time is a rate in samples/s is timed by the batch the log's
    config states (the last stated before it): seconds per step = batch / rate (a timestamped line is timed
    by its clock: the batch may count gradient-accumulation micro steps the rate does not). The batch lines
    become plain clock marks."""
    batch: int | None = None
    out: list[Mark] = []
    for m in marks:
        if m.kind == "batch_size":
            batch = m.batch or batch
            if m.t is not None:
                out.append(Mark("clock", m.line, m.file, "clock", t=m.t, t_src=m.t_src))
            continue
        if m.kind == "step" and m.t is None and m.step_s is None and m.sample_rate and batch:
            m.step_s = batch / m.sample_rate
        out.append(m)
    return out


def evaluations_after_epoch_end(marks: list[Mark]) -> list[Mark]:
    """A line saying an epoch's training is over, then an evaluation's result before any other progress: the
    evaluation began at that line (the steps since the last progress line ran before it). Otherwise the
    line only says when it was printed (a clock mark)."""
    out: list[Mark] = []
    for i, m in enumerate(marks):
        if m.kind == "epoch_end":
            nxt = next((n for n in marks[i + 1 :] if n.kind not in ("clock", "epoch_end")), None)
            kind = "eval_begin" if nxt is not None and nxt.kind == "eval_end" else "clock"
            m = Mark(kind, m.line, m.file, m.row if kind != "clock" else "clock", t=m.t, t_src=m.t_src, text=m.text)
        out.append(m)
    return out


# Result lines that end an evaluation only when one is open: detectron2's `copypaste:` rows (print_csv_format)
# come after the evaluator's own lines; alone after a step line (a log cut to its results) they say when the
# results were printed, not that the stretch since the step was an evaluation
RESULT_ROWS = frozenset({"d2_eval_result"})
# the lines that open an evaluation a result line may close: its start, its inference's end, the save the
# eval hook follows (detectron2's EvalHook after the PeriodicCheckpointer), an earlier result row
_OPENS_EVAL = frozenset({"eval_begin", "eval_end", "save_begin", "save_end"})


def results_close_open_evaluations(marks: list[Mark]) -> list[Mark]:
    """A result row (RESULT_ROWS) with no evaluation, save or result line since the last step line becomes a
    clock mark: a log cut between an events line and the results (49,000 iterations and 49 evaluations
    left out) is a cut stretch of steps (cut_stretches.py), not 11 hours of evaluation."""
    out: list[Mark] = []
    opened = False
    for m in marks:
        if m.kind == "step":
            opened = False
        elif m.kind == "eval_end" and m.row in RESULT_ROWS and not opened:
            m = Mark("clock", m.line, m.file, "clock", t=m.t, t_src=m.t_src, text=m.text)
        elif m.kind in _OPENS_EVAL:
            opened = True
        out.append(m)
    return out


def epoch_end_steps(marks: list[Mark]) -> list[Mark]:
    """A save at an epoch's end (mmcv's `Saving checkpoint at 12 epochs`) says that epoch's last step ran,
    though a log every N iterations may not have printed it ([900/930] then the save): that step is
    placed at the save line, so the steps count the whole epoch."""
    rows = {f.name: f for f in LINE_FORMATS if f.epoch_from is not None}
    out: list[Mark] = []
    last: Mark | None = None
    for m in marks:
        if m.kind == "step" and m.row in rows:
            last = m
        elif m.kind == "save_begin" and m.epoch is not None and m.step is None and last is not None and last.total:
            step = (m.epoch - (rows[last.row].epoch_from or 0) + 1) * last.total
            if last.step is not None and step > last.step and m.epoch == last.epoch:
                end = Mark("step", m.line, m.file, "epoch end", step=step, total=last.total, epoch=m.epoch, text=m.text)
                end.t, end.t_src = m.t, m.t_src
                out.append(end)
                last = end
        out.append(m)
    return out


def one_record_per_step(marks: list[Mark]) -> list[Mark]:
    """A JSON-lines trainer log (JSONL_ROWS) may hold two writers' records of the same steps, interleaved and
    drifting apart (two ranks appending to one file): a record of a step already read is dropped (its time
    kept as a clock mark where it is the launch's latest), and the launch's clock never goes back within
    it. A counter that drops while the `elapsed` clock restarts near its 0 is a new launch (a resume from a
    checkpoint): its records are read from there; a record of a step this launch already read at about the
    same clock is the other writer's, lagging (two writers a record apart in a launch's first minutes, when
    the clock is small, must not read as a resume, but a relaunch from scratch or an early crash's resume, whose
    counter is more than a log interval behind, is one: _same_record)."""
    out: list[Mark] = []
    top, clock, every = -1, 0.0, 0  # (every: the launch's log interval, its last rise of the counter)
    seen: dict[int, float] = {}  # this launch's steps and the clock of their first record
    for m in marks:
        if m.row not in JSONL_ROWS or m.step is None or m.rel is None:
            out.append(m)
            continue
        lagging = top - m.step <= every and _same_record(m.step, m.rel, seen)
        if m.step <= top and m.rel < 0.5 * clock and not lagging:
            top, clock, every, seen = -1, 0.0, 0, {}  # the clock restarted with the counter behind: a new launch
        seen.setdefault(m.step, m.rel)
        if m.step <= top:
            if m.rel > clock:  # the other writer's later record still shows the launch alive then
                clock = m.rel
                out.append(Mark("clock", m.line, m.file, "clock", rel=clock, text=m.text))
            continue
        every = m.step - top if top >= 0 else every
        top, clock = m.step, max(clock, m.rel)
        m.rel = clock
        out.append(m)
    return out


def _same_record(step: int, rel: float, seen: dict[int, float]) -> bool:
    """The step was read in this launch at about this clock (within a minute, or a tenth of it). With the
    launch's counter at most one log interval past it (the writers interleave), the other writer's record
    of it: a relaunch from scratch logs each step at the same clock too, but its counter is far behind."""
    first = seen.get(step)
    return first is not None and abs(rel - first) <= max(60.0, 0.1 * first)


def open_at_zero(marks: list[Mark]) -> list[Mark]:
    """A log with no clock whose first step line is a counter's 0 printed after its step (nanoGPT's `iter 0`,
    placed at its own step time): the training began at the relative clock's 0, and that first step's time
    (compilation, warm-up) is the attempt's, not before it."""
    first = next((i for i, m in enumerate(marks) if m.kind == "step"), None)
    if first is None or any(m.t is not None and m.kind != "clock" for m in marks[:first]):
        return marks
    m = marks[first]
    if m.step != 0 or m.t_src != "derived" or not m.t or not m.step_s:
        return marks
    start = Mark("train_begin", m.line, m.file, "derived start", t=0.0, t_src="derived", text="the clock's 0")
    return [*marks[:first], start, *marks[first:]]


def open_at_bar_zero(marks: list[Mark]) -> list[Mark]:
    """A log timed by a progress bar alone whose first line, at about the pace of the lines after it, has
    been running since step 0: the bar's clock starts with the bar (a bar resumed at step N jumps there
    within a second), so training began at its 0, not at its first printed line."""
    bar = [(i, m) for i, m in enumerate(marks) if m.kind == "step" and m.rel is not None and m.step is not None][:2]
    if len(bar) < 2 or any(m.t is not None and m.kind != "clock" for m in marks[: bar[0][0]]):
        return marks
    (i, first), (_, second) = bar
    s1, r1, s2, r2 = first.step or 0, first.rel or 0.0, second.step or 0, second.rel or 0.0
    if first.t is not None and second.t is not None and second.t > first.t:
        r2 = r1 + second.t - first.t  # (the second on a bar of its own, restarted: its placed time is its pace)
    if first.t is None or s1 <= 0 or s2 <= s1 or r2 <= r1 or r1 / s1 < 0.5 * (r2 - r1) / (s2 - s1):
        return marks
    zero = first.t - r1
    start = Mark("train_begin", first.line, first.file, "bar start", step=0, t=zero, t_src="bar", text="the bar's 0")
    return [*marks[:i], start, *marks[i:]]


def training_bar_only(marks: list[Mark]) -> list[Mark]:
    """A bare progress bar (HF Trainer's) is also drawn for evaluation and prediction: the training bar is
    the one (by its total) that runs longest; the others' lines are not steps. A run of another bar's lines
    after a training step is an evaluation pass (its first line begins it, its last ends it), so the time
    it takes is evaluation, not a hang."""
    bars: dict[int | None, float] = {}
    for m in marks:
        if m.row in SHARED_BARS:
            bars[m.total] = max(bars.get(m.total, 0.0), m.rel or 0.0)
    if len(bars) <= 1:
        return marks
    train = max(bars, key=lambda total: (bars[total], total or 0))
    out: list[Mark] = []
    run: list[Mark] = []
    trained = False
    seq: list[Mark | None] = [*marks, None]  # (None: the end, closing a last run)
    for cur in seq:
        if cur is not None and cur.row in SHARED_BARS and cur.total != train:
            run.append(cur)
            continue
        if run and trained and len({r.step for r in run}) > 1:
            took = max((r.rel or 0.0) for r in run) - (run[0].rel or 0.0)
            out += [_as_eval(run[0], "eval_begin"), _as_eval(run[-1], "eval_end", took)]
        run = []
        if cur is not None:
            trained = trained or (cur.row in SHARED_BARS and (cur.step or 0) > 0)
            out.append(cur)
    return out


def _as_eval(m: Mark, kind: str, took: float | None = None) -> Mark:
    """A line of an evaluation bar as the evaluation's begin or end: its begin is timed by the line before
    it (its own elapsed clock restarts with the bar), its end `took` (the bar's elapsed) after the begin."""
    return Mark(kind, m.line, m.file, EVAL_BAR, t=m.t, t_src=m.t_src, text=m.text, dur_s=took)


def time_eval_bars(marks: list[Mark]) -> None:
    """An evaluation bar's end at its begin plus the bar's own elapsed time, never past the next timed
    line after it (the training bar drawn again when the evaluation is over)."""
    begin: Mark | None = None
    for i, m in enumerate(marks):
        _finished_bar_at_its_result(marks, i)
        if m.row != EVAL_BAR:
            continue
        if m.kind == "eval_begin":
            begin = m
        elif begin is not None and begin.t is not None and m.dur_s:
            nxt = next((n.t for n in marks[i + 1 :] if n.t is not None and n.t_src != "filled"), None)
            m.t = begin.t + m.dur_s if nxt is None else min(begin.t + m.dur_s, max(nxt, m.t or nxt))


def _finished_bar_at_its_result(marks: list[Mark], i: int) -> None:
    """A finished evaluation bar with no timestamp (mmcv's `764/764, .. elapsed: 70s`), its time filled from
    the line before, right before its result line (`Epoch(val) [2][764]`): it began its elapsed time before
    the result, not at the line before, which may be far earlier (a log cut between the epoch before's result
    and this bar: the epoch's training ran in the cut, not the evaluation)."""
    m = marks[i]
    if m.kind != "eval_begin" or m.t_src != "filled" or not m.dur_s or m.t is None:
        return
    nxt = next((n for n in marks[i + 1 :] if n.t is not None and n.t_src == "own"), None)
    if nxt is not None and nxt.kind == "eval_end" and nxt.t is not None and nxt.t - m.dur_s > m.t:
        m.t = nxt.t - m.dur_s


# Lines that start a process (again): a step after one of these is a new launch's, never a buffered one.
_STARTS = frozenset({"init_begin", "init_mark", "train_begin", "load_begin", "load_end", "restart"})


def buffered_steps_before_end(marks: list[Mark]) -> list[Mark]:
    """Untimed step lines printed after the line that says training finished, with no step line before it
    and no start line between: the trainer's stdout was flushed at exit (NeMo 2's progress printer after
    Lightning's "`Trainer.fit` stopped"), the steps ran before the end line. They move before it (to be
    timed there), instead of reading as a second attempt that trained after the run ended."""
    end = next((i for i, m in enumerate(marks) if m.kind in ("train_end", "job_end", "step")), None)
    if end is None or marks[end].kind == "step":
        return marks
    block: list[int] = []
    for i in range(end + 1, len(marks)):
        m = marks[i]
        if m.kind in _STARTS or m.kind in ("failure", "train_end", "job_end"):
            break
        if m.kind == "step":
            if m.t is not None:  # a step line with its own time says when it ran: no buffering to undo
                return marks
            block.append(i)
    if not block:
        return marks
    moved = [marks[i] for i in block]
    bound = next((m.t for m in marks[end + 1 :] if m.t is not None and m.t_src == "own"), None)
    if bound is not None:
        _timed_back(moved, bound)
    rest = [m for i, m in enumerate(marks) if i not in set(block)]
    return [*rest[:end], *moved, *rest[end:]]


def _timed_back(steps: list[Mark], bound: float) -> None:
    """Buffered steps ran before the first timestamped line after the end line: the last one ends there, each
    earlier one its successor's own step time before (the other lines' stamps say nothing of them: stderr
    came through while stdout waited)."""
    t = bound
    later: Mark | None = None
    for m in reversed(steps):
        if later is not None:
            t -= max(0.0, later.step_s or 0.0)
        m.t, m.t_src = t, "derived"
        later = m


def negative_step_times(marks: list[Mark]) -> list[Mark]:
    """A step time printed negative is a timer artefact, not a time (NeMo 2's train_step_timing: 13.75 s, then
    -12.71 s): the timer's interval ran into the step before, so the two steps together took their sum, which
    goes to the earlier one (the later one took none of its own)."""
    prev: Mark | None = None
    for m in marks:
        if m.kind != "step" or m.step_s is None:
            continue
        if m.step_s < 0 and prev is not None and prev.step_s is not None and prev.step_s + m.step_s >= 0:
            prev.step_s, m.step_s = prev.step_s + m.step_s, 0.0
        elif m.step_s < 0:
            m.step_s = None
        prev = m
    return marks


def unitless_step_times_by_clock(marks: list[Mark]) -> None:
    """A step time read as ms from a field with no unit (UNITLESS_MS_ROWS) where the timestamps of
    consecutive step lines are about a thousand times further apart than it: the program printed seconds
    (ezpz's `dt=0.0157` against lines 16 ms apart), and every step time of that row is scaled to match."""
    ratios: dict[str, list[float]] = {}
    prev: Mark | None = None
    for m in marks:
        if m.kind != "step" or m.t_src != "own":
            continue
        gap = _next_step_gap(prev, m) if m.row in UNITLESS_MS_ROWS else None
        if gap is not None and m.step_s:
            ratios.setdefault(m.row, []).append(gap / m.step_s)
        prev = m
    for row, seen in ratios.items():
        if len(seen) >= 5 and sorted(seen)[len(seen) // 2] > 100.0:
            for m in marks:
                if m.row == row and m.step_s is not None:
                    m.step_s *= 1000.0


def _next_step_gap(prev: Mark | None, m: Mark) -> float | None:
    """Seconds between two timestamped lines of one row a single step apart, else None."""
    if prev is None or prev.row != m.row or m.step != (prev.step or 0) + 1 or m.t is None or prev.t is None:
        return None
    return m.t - prev.t if m.t > prev.t else None


# A bar faster than this counts items, not training steps: a step (forward, backward, an optimizer update: a few
# dozen kernel launches or ops at several microseconds each, and Python around them) takes a millisecond or more.
DATA_BAR_MIN_RATE = 1000.0
_BAR_RATE = re.compile(r"(?P<rate>\d+(?:\.\d+)?)it/s\]")
# a bar counting bytes (tqdm's unit="B" / "KB": PaddleDetection's weight download `0/139208 [.., 81.72KB/s]`)
_BYTES_RATE = re.compile(r"\d(?:[kKMGT]i?)?B/s\]")


def data_bars_out(marks: list[Mark]) -> list[Mark]:
    """A progress bar's step marks whose bar (one total) ran faster than DATA_BAR_MIN_RATE items a second: a
    data-preparation bar (PaddleNLP converting 392,507 examples at 12,748 it/s before `start train`) is not
    the training loop, and its count is no step; nor is a bar counting bytes at so many B/s (a download)."""
    fast: set[tuple[str, int | None]] = set()
    for m in marks:
        if m.kind == "step" and m.row in BAR_ROWS:
            rate = _BAR_RATE.search(m.text)
            if (rate is not None and float(rate.group("rate")) >= DATA_BAR_MIN_RATE) or _BYTES_RATE.search(m.text):
                fast.add((m.row, m.total))
    if not fast:
        return marks
    return [m for m in marks if not (m.kind == "step" and (m.row, m.total) in fast)]


# What may come between a bar and the training-start line after it with the bar still the start-up's: more
# start-up (setup phases, a checkpoint loaded, the world and batch size, the plan) and timestamps
_SETUP_KINDS = frozenset({"init_mark", "init_dur", "load_begin", "load_progress", "load_end", "load_dur", "clock"})
_SETUP_KINDS |= {"world", "batch_size", "plan", "sched_time"}
_ROW_NAMES = frozenset(f.name for f in LINE_FORMATS)  # (a line's own row: no start derived from a clock or a bar)


def bars_before_training_out(marks: list[Mark]) -> list[Mark]:
    """A bar that ran to its total (n == total) and is followed by the run's training-start line (a train_begin
    row that names no epoch: HF's `***** Running training *****`, the template's `Starting training!`) with
    only start-up lines between was the start-up's: a loop over shard files, a download, a tokenization (an
    undescribed `100%|####| 4/4 [00:12<00:00, 3.01s/it]` before HF's training start), not the training's steps.
    A training bar cut short (a killed run, its relaunch's start after it) never ran to its total and stays;
    an epoch's start line (`begin training epoch 2`, YOLOX's `---> start train epoch2`) ends no start-up."""
    pending: dict[tuple[str, int | None], list[int]] = {}  # (row, total) -> the bar's frames so far
    finished: set[tuple[str, int | None]] = set()
    drop: set[int] = set()
    for i, m in enumerate(marks):
        if m.kind == "step" and m.row in BAR_ROWS and m.row not in JSONL_ROWS and m.total:
            key = (m.row, m.total)
            pending.setdefault(key, []).append(i)
            if m.step is not None and m.step >= m.total:
                finished.add(key)
        elif m.kind == "train_begin" and m.epoch is None and m.row in _ROW_NAMES:
            drop.update(i for key in finished for i in pending[key])
            pending, finished = {}, set()
        elif m.kind not in _SETUP_KINDS:
            pending, finished = {}, set()
    return [m for i, m in enumerate(marks) if i not in drop] if drop else marks


def job_reports_first(marks: list[Mark]) -> list[Mark]:
    """A scheduler's job report printed after the job's own output (LSF's `Started at ...`): its start line
    is read where the job's output begins (after the report before it), so the job's lines are its launch's."""
    if not any(m.row in JOB_REPORT_START for m in marks):
        return marks
    out: list[Mark] = []
    begins = 0  # where the current job's output begins in `out`
    started: Mark | None = None
    ran: float | None = None  # the report's run time
    for m in marks:
        if m.row in JOB_REPORT_START:
            out.insert(begins, m)
            begins = len(out)  # (a report cut before its end line: the next job's output begins after it)
            started, ran = m, None
            continue
        if m.kind == "sched_time":  # turnaround less run time: how long the job waited to start
            if m.row == "lsf_run_time":
                ran = m.dur_s
            elif started is not None and ran is not None and m.dur_s is not None and m.dur_s >= ran:
                started.queued_s = m.dur_s - ran
            continue
        out.append(m)
        if m.row in JOB_REPORT_END:
            begins = len(out)
    return out


def steps_flushed_after_end(marks: list[Mark]) -> list[Mark]:
    """A step line stamped in the same second as the end line just before it, its counter on from the
    attempt's last step and no start line between: the trainer's last writer flushed after the summary that
    ended the loop (detectron2's PeriodicWriter.after_train after the IterationTimer's `Total training time`).
    It moves before the end line, instead of reading as an attempt of its own."""
    out: list[Mark] = []
    last_step: Mark | None = None
    end: int | None = None  # where in `out` the end line since the last step is
    for m in marks:
        if m.kind == "step":
            top = last_step.step if last_step is not None and last_step.step is not None else None
            if end is not None and top is not None and (m.step or 0) > top and _same_second(out[end], m):
                out.insert(end, m)
                end, last_step = end + 1, m
                continue
            end, last_step = None, m
        elif m.kind == "train_end":
            end = len(out)
        elif m.kind in _STARTS:
            end = None
        out.append(m)
    return out


def _same_second(a: Mark, b: Mark) -> bool:
    return a.t is not None and b.t is not None and a.t_src == b.t_src == "own" and 0 <= b.t - a.t < 1.0


# A bar's elapsed clock that falls back this far (or more) within a bar is a writer behind the others, not
# the bar's own next frame (tqdm prints whole seconds: one writer's frames never go back by a second)
_BAR_CLOCK_BACK_S = 1.0
# A frame behind is another writer's only where the bar itself drew that count at about that clock: ranks in
# lockstep draw the same counts at about the same moments, their bars opened within seconds of each other
# (within this many seconds, or half the bar's clock early on, and no less than _SAME_FRAME_S). A count the
# bar drew at another clock is the bar drawn afresh: a resume whose clock carried the batches it skipped, a
# bar whose count is set back to 0 every epoch while its clock goes on (`pbar.n = 0`, ONT Remora's loop).
_WRITER_CLOCK_S = 5.0
_SAME_FRAME_S = 2.0
# ... and it is behind by at most half the bar's clock or, early in a bar (its clock too short to halve), by at
# most this many counts (a bar drawn again from 0 after its first steps is a relaunch's)
_WRITER_LAG_STEPS = 2
# Lines after which a bar is drawn afresh (a process started, or one ended)
_BAR_AFRESH = _STARTS | {"failure", "interrupt", "stop"}


def other_writers_bar_frames_out(marks: list[Mark]) -> list[Mark]:
    """Two processes drawing the same bar (every rank's tqdm, not only the main one's) interleave their frames,
    one a step or a few seconds behind the other (`6/100 [00:09<..]  5/100 [00:08<..]  7/100 ...`): a frame
    behind the bar's furthest (a lower count, or the same count at an earlier clock) that the bar drew at
    about that clock, and whose clock is still the bar's (at least half the bar's furthest elapsed or, early
    on, a count a step or two back), is the other writer's, not a fall back to an earlier step. A relaunch's
    bar (or a reset one) starts its clock again near 0, and a line that starts or ends a process between them
    starts the bar afresh. A frame of a later epoch than the bar's furthest is never behind: Lightning resets
    its bar and the bar's clock every epoch, and the new epoch's 0 has the count the last epoch ended on
    (`Epoch 0: 2/2 [00:02..]  Epoch 1: 0/2 [00:00..]`); its clock is the new epoch's. The frame is dropped
    (its timestamp, if its line has one, kept as a clock mark)."""
    out: list[Mark] = []
    bars: dict[tuple[str, int | None], _Bar] = {}  # (row, total) -> the bar so far
    for m in marks:
        if m.kind in _BAR_AFRESH:
            bars = {}
        if m.kind != "step" or m.row not in BAR_ROWS or m.row in JSONL_ROWS or m.step is None or m.rel is None:
            out.append(m)
            continue
        key = (m.row, m.total)
        bar = bars.setdefault(key, _Bar())
        if m.epoch is not None and bar.epoch is not None and m.epoch > bar.epoch:
            bar.clock = 0.0  # the next epoch's bar: its count goes on, its clock starts again
        elif _behind(m.step, m.rel, bar):
            if _other_writers(m.step, m.rel, bar):
                if m.t is not None and m.t_src == "own":
                    out.append(Mark("clock", m.line, m.file, "clock", t=m.t, t_src="own", text=m.text))
                continue
            bars[key] = bar = _Bar()  # the bar drawn afresh
        bar.draw(m.step, m.rel, m.epoch)
        out.append(m)
    return out


@dataclass
class _Bar:
    """One bar as other_writers_bar_frames_out has read it: its furthest count and the epoch of it, its furthest
    clock (in that epoch), and each count it drew further than before with the clock it drew it at (rising)."""

    top: int = -1
    epoch: int | None = None
    clock: float = 0.0
    counts: list[int] = field(default_factory=list)
    clocks: list[float] = field(default_factory=list)

    def draw(self, step: int, rel: float, epoch: int | None) -> None:
        if step > self.top or (epoch is not None and self.epoch is not None and epoch > self.epoch):
            if self.counts and self.counts[-1] == step:  # (an epoch's 0 at the count the last one ended on)
                self.clocks[-1] = rel
            else:
                self.counts.append(step)
                self.clocks.append(rel)
        self.top, self.clock = max(self.top, step), max(self.clock, rel)
        self.epoch = max(self.epoch, epoch) if self.epoch is not None and epoch is not None else epoch

    def clock_at(self, step: int) -> float | None:
        """The clock at which the bar first drew this count or a higher one."""
        i = bisect.bisect_left(self.counts, step)
        return self.clocks[i] if i < len(self.clocks) else None


def _behind(step: int, rel: float, bar: _Bar) -> bool:
    """A frame at a lower count than the bar's furthest, or at that count a second or more earlier."""
    return step < bar.top or (step == bar.top and rel < bar.clock - _BAR_CLOCK_BACK_S)


def _other_writers(step: int, rel: float, bar: _Bar) -> bool:
    """A frame behind that the bar drew at about its clock, still on the bar's clock (see _WRITER_CLOCK_S)."""
    drawn = bar.clock_at(step)
    tolerance = min(_WRITER_CLOCK_S, max(_SAME_FRAME_S, 0.5 * bar.clock))
    if drawn is None or abs(rel - drawn) > tolerance:
        return False
    return rel >= 0.5 * bar.clock or bar.top - step <= _WRITER_LAG_STEPS
