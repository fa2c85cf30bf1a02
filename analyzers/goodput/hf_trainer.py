"""HF Trainer's console lines as steps: its logs dict (`{'loss': 2.31, 'learning_rate': ..., 'epoch': 0.5}`)
prints a step counter only in some versions, and no time; its closing summary (`{'train_runtime': 116.2,
..., 'train_steps_per_second': 1.72, 'epoch': 0.15}`, `TrainOutput(global_step=200, ...)`) gives the loop's
runtime and step count. Here the logs dict's steps are worked out from the epoch where a line gives steps
per epoch, and a log with no clock at all is timed by the summary's runtime (a mean over the run, and the
report says so). Where a progress bar gives the steps and their clock, the bar is read and the dicts are not.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from itertools import pairwise
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scope.analyzers.goodput.mark import Mark

_LOG = "hf_log_line"
_SUMMARY = ("hf_train_summary", "hf_train_output")
# A bar with at least this many lines gives the steps and their clock; the logs dicts are then not steps.
_BAR_LINES = 3


def trainer_steps(marks: list[Mark], file: str) -> tuple[list[Mark], list[str]]:
    """The marks with HF Trainer's logs-dict steps numbered (or dropped), and notes on what was derived."""
    logs = [m for m in marks if m.row == _LOG]
    summaries = [m for m in marks if m.row in _SUMMARY]
    if not logs and not summaries:
        return marks, []
    notes: list[str] = []
    timed_steps = [m for m in marks if m.kind == "step" and m.row != _LOG and (m.rel is not None or m.t is not None)]
    if len(timed_steps) >= _BAR_LINES:
        return [m for m in marks if m.row != _LOG], notes  # the bar's steps and clock
    per_epoch = _steps_per_epoch(marks)
    unnumbered = [m for m in logs if m.step is None]
    if unnumbered and per_epoch is None:
        notes.append(
            f"{file}: {len(unnumbered)} HF Trainer log line(s) print no step and no line gives the steps per "
            f"epoch: progress is counted in logging intervals (epoch {unnumbered[0].epoch_f} -> "
            f"{unnumbered[-1].epoch_f}), not steps"
        )
        for i, m in enumerate(unnumbered, 1):
            m.step = i  # logging intervals: increasing, so still an attempt with progress, never refused
    for m in unnumbered:
        if per_epoch is not None and m.epoch_f is not None:
            m.step = round(m.epoch_f * per_epoch)
    _snap_to_interval(unnumbered, marks)
    return _timed_by_runtime(marks, summaries, file, notes), notes


def _snap_to_interval(unnumbered: list[Mark], marks: list[Mark]) -> None:
    """The epoch is printed rounded (2 decimals), so a step worked out from it may be a few steps off; the
    dict is printed every `logging_steps`: where the final step count is that many lines' worth of an
    integer interval, each step is the multiple of it nearest to the estimate; else where the estimates'
    usual spacing is an interval every save's step is a multiple of, the same (LLaMA-Factory's every 5 steps,
    checkpoint-100 ...: its last dict read as step 2104 for 2105), kept where the steps still increase."""
    final = next((m.step for m in reversed(marks) if m.row == "hf_train_output" and m.step), None)
    if final and unnumbered and final % len(unnumbered) == 0:
        interval = final // len(unnumbered)
        snapped = [round((m.step or 0) / interval) * interval for m in unnumbered]
        if snapped == [interval * i for i in range(1, len(unnumbered) + 1)]:
            _set_steps(unnumbered, snapped)
        return
    usual = _usual_interval(unnumbered, marks)
    if usual:
        snapped = [round((m.step or 0) / usual) * usual for m in unnumbered]
        if all(b > a for a, b in pairwise(snapped)):
            _set_steps(unnumbered, snapped)


def _set_steps(marks: list[Mark], steps: list[int]) -> None:
    for m, step in zip(marks, steps, strict=True):
        m.step = step


def _usual_interval(unnumbered: list[Mark], marks: list[Mark]) -> int | None:
    """The spacing most of the estimated steps show (a log cut between some dicts leaves bigger gaps), where
    at least two saves name their steps and each is a multiple of it."""
    gaps = Counter(b.step - a.step for a, b in pairwise(unnumbered) if a.step is not None and b.step is not None)
    saves = [m.step for m in marks if m.kind in ("save_begin", "save_progress") and m.step]
    if not gaps or len(saves) < 2:
        return None
    (interval, seen), *rest = gaps.most_common(2)
    if interval < 2 or (rest and rest[0][1] == seen) or any(step % interval for step in saves):
        return None
    return interval


def _steps_per_epoch(marks: list[Mark]) -> float | None:
    """Steps per epoch from a line giving both (a logs dict with 'step', the summary with 'step'), else from
    the final step count (TrainOutput's global_step) over the summary's epoch."""
    for m in marks:
        if m.row in (_LOG, "hf_train_summary") and m.step and m.epoch_f:
            return m.step / m.epoch_f
    final = next((m.step for m in reversed(marks) if m.row == "hf_train_output" and m.step), None)
    summary = next((m for m in reversed(marks) if m.row == "hf_train_summary" and m.epoch_f), None)
    if summary is not None and not final and summary.rate and summary.dur_s:
        final = round(summary.rate * summary.dur_s)  # train_steps_per_second x train_runtime
    if final and summary is not None and summary.epoch_f:
        return final / summary.epoch_f
    return _per_epoch_at_a_save(marks)


def _per_epoch_at_a_save(marks: list[Mark]) -> float | None:
    """A save names its step (`checkpoint-500`) right after the logs dict of that step (log, then save, at
    the same step): that dict's epoch gives the steps per epoch."""
    epoch: float | None = None
    for m in marks:
        if m.row == _LOG:
            epoch = m.epoch_f
        elif m.kind in ("save_begin", "save_progress") and m.step and epoch:
            return m.step / epoch
    return None


def _timed_by_runtime(marks: list[Mark], summaries: list[Mark], file: str, notes: list[str]) -> list[Mark]:
    """A log with no clock of its own (no timestamp, no elapsed field on its steps) is timed by the summary's
    runtime: each step takes the run's mean step time, counted from a training start at step 0."""
    runtime = next((m.dur_s for m in summaries if m.dur_s), None)
    steps = [m for m in marks if m.kind == "step"]
    if not runtime or not steps or any(m.t is not None or m.step_s is not None for m in steps):
        return marks
    if any(m.t is not None for m in marks):  # a wall clock: never joined with a relative one from 0
        return marks
    if sum(1 for m in steps if m.rel is not None) >= _BAR_LINES:
        return marks
    total = next((m.step for m in reversed(marks) if m.row in _SUMMARY and m.step), None)
    rate = next((m.rate for m in summaries if m.rate), None)
    count = total or (round(runtime * rate) if rate else None) or max(m.step or 0 for m in steps)
    if not count:
        return marks
    mean = runtime / count
    for m in steps:
        m.step_s = mean
    first = marks.index(steps[0])
    out = list(marks)
    if not any(m.kind in ("train_begin", "load_begin", "load_end", "resume") for m in marks[:first]):
        start = replace(steps[0], kind="train_begin", row="hf_train_summary", step=0, step_s=None, line=0)
        start.text = "the training loop's start, train_runtime before its end"
        start.t, start.t_src = 0.0, "derived"  # the relative clock's zero: the loop's start
        out.insert(first, start)
    notes.append(
        f"{file}: no clock on the steps: timed by HF Trainer's train_runtime ({runtime:g} s for {count} steps, "
        f"a mean of {mean:.3g} s a step): per-step times, warm-up and stalls inside training are not measured"
    )
    return out
