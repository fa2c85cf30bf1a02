"""Whether a relaunch runs the configuration the launch before it ran, as the two launches' own lines state
it: a relaunch from scratch with another configuration (another planned length in its config dump, another
number of steps per epoch: another dataset or batch size) is a new run, not a rollback of the run before, so
the steps of that run are not redone work. Where either launch states neither, nothing is said. Steps per
epoch count only between launches that state the same world size: the ranks an epoch is split over change
them too (an elastic restart on fewer or more GPUs resumes the same run)."""

from __future__ import annotations

import re

from scope.analyzers.goodput.plan_ends import eta_left_s
from scope.analyzers.goodput.states import Attempt

# Two launches' planned lengths estimated from their progress lines' eta differ when they are this far apart
# (the estimate is the median step time's, the line's time another average; both round)
ETA_PLAN_TOLERANCE = 0.2

# The learning rate a progress line prints (detectron2's `lr: 0.000400`, mmcv's `lr: 9.6e-03`, Megatron's
# `learning rate: 1.000000E-04`, DeepSpeed's `lr=[5e-05, 5e-05]`, HF's `'learning_rate': 4e-05`)
_LR = re.compile(r"\b(?:lr|learning[ _]rate)'?\s*[:=]\s*\[?\s*(?P<lr>\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)")
# Two learning rates printed at the same step differ when they are this far apart (relative): the same
# schedule prints the same figure to its printed digits
LR_TOLERANCE = 0.01


def config_change(prev: Attempt, nxt: Attempt) -> str:
    """What the next launch's lines change from the previous one's ('' where they change nothing they both
    state): the planned length its plan line states (`MAX_ITER: 2000` -> `MAX_ITER: 10000`, `EPOCHS: 12`),
    the steps an epoch's counter counts to (PaddleDetection's `Epoch: [0] [0/1320]` -> `[0/660]`)."""
    changes = []
    before, after = _plan(prev), _plan(nxt)
    if before and after and before != after:
        changes.append(f"planned length {before} -> {after}")
    elif not (before or after) and (eta_change := _eta_plan_change(prev, nxt)):
        changes.append(eta_change)
    before_n, after_n = _steps_per_epoch(prev), _steps_per_epoch(nxt)
    same_world = prev.world_size is not None and prev.world_size == nxt.world_size
    if same_world and before_n and after_n and before_n != after_n:
        changes.append(f"steps per epoch {before_n:,} -> {after_n:,}")
    if lr_change := _lr_change(prev, nxt):
        changes.append(lr_change)
    return "; ".join(changes)


def _plan(a: Attempt) -> str:
    plan = next((m for m in reversed(a.marks) if m.kind == "plan"), None)
    if plan is None:
        return ""
    return f"{plan.total:,} steps" if plan.total else f"{plan.epoch} epochs" if plan.epoch else ""


def _steps_per_epoch(a: Attempt) -> int | None:
    """The total of the attempt's first step line that counts within an epoch (its epoch stated)."""
    return next((m.total for m in a.marks if m.kind == "step" and m.epoch is not None and m.total), None)


def _eta_plan_change(prev: Attempt, nxt: Attempt) -> str:
    """With no plan line in either launch: the planned length each one's first progress line implies (its
    step, plus its `eta:` over its own step time: detectron2's iter 19 with `eta: 0:02:55` at 0.98 s is a
    200-iteration run, one with `eta: 1:09:03` at 0.44 s a 10,000-iteration one), where they differ."""
    before, after = _eta_plan(prev), _eta_plan(nxt)
    if before is None or after is None or abs(before - after) <= ETA_PLAN_TOLERANCE * max(before, after):
        return ""
    return f"planned length about {before:,} -> {after:,} steps (from the progress lines' eta)"


def _eta_plan(a: Attempt) -> int | None:
    """The planned length the attempt's first timed progress line implies: its step, plus one, plus its
    `eta:` over its own step time (None where no such line prints an eta)."""
    for m in a.marks:
        if m.kind == "step" and m.step is not None and m.step_s and m.step_s > 0:
            left = eta_left_s(m.text)
            return None if left is None else m.step + 1 + round(left / m.step_s)
    return None


def _lr_at(a: Attempt) -> dict[int, float]:
    """The learning rate each of the attempt's step lines prints, by its step."""
    out: dict[int, float] = {}
    for m in a.marks:
        if m.kind == "step" and m.step is not None and (found := _LR.search(m.text)):
            out.setdefault(m.step, float(found.group("lr")))
    return out


def _lr_change(prev: Attempt, nxt: Attempt) -> str:
    """The learning rate the two launches' progress lines print at the same step, where it differs (the
    first such step): an operator's relaunch with another setting (detectron2's `lr: 0.020000` at iter 999,
    then `lr: 0.040000` at iter 999 after a relaunch from 0), a new run. A rollback of the same run replays
    the same schedule, so the same figure at each step."""
    before, after = _lr_at(prev), _lr_at(nxt)
    for step in sorted(before.keys() & after.keys()):
        x, y = before[step], after[step]
        if abs(x - y) > LR_TOLERANCE * max(abs(x), abs(y)):
            return f"learning rate at step {step:,} {x:g} -> {y:g}"
    return ""
