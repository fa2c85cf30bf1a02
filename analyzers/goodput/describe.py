"""Each attempt described: its time span and steps, the step it resumed from, when training started, its
group's size, how it ended (endings.py) and any membership change from the attempt before it.
"""

from __future__ import annotations

from itertools import pairwise

from scope.analyzers.goodput.endings import ending
from scope.analyzers.goodput.formats import MEMBERSHIP_ROWS
from scope.analyzers.goodput.log_interval import log_interval
from scope.analyzers.goodput.mark import Mark
from scope.analyzers.goodput.states import FAILED_ENDS, STOPPED_ROWS, Attempt


def describe_attempts(attempts: list[Attempt], ideal: float | None) -> None:
    for i, a in enumerate(attempts):
        timed = [m.t for m in a.marks if m.t is not None]
        a.start, a.end = (min(timed), max(timed)) if timed else (None, None)
        steps = [m for m in a.marks if m.kind == "step" and m.step is not None]
        if steps:
            a.first_step = steps[0].step
            a.last_step = max(m.step for m in steps if m.step is not None)
            a.first_step_t = steps[0].t
        first_i = next((j for j, m in enumerate(a.marks) if m.kind == "step"), len(a.marks))
        resumes = [
            m.step for m in a.marks[:first_i] if m.kind in ("load_end", "load_begin", "resume") and m.step is not None
        ]
        begins = [m for m in a.marks if m.kind == "train_begin"]
        if resumes:
            a.resume_step, a.resume_known = resumes[-1], True
        elif begins and begins[0].step is not None:
            a.resume_step, a.resume_known = begins[0].step, True
        elif a.first_step is not None and i == 0 and (a.first_step <= 1 or _starts_here(a, log_interval(steps))):
            a.resume_step, a.resume_known = 0, True  # the log shows the job starting, with nothing to load
        elif a.first_step is not None and a.first_step <= 1 and _starts_here(a, log_interval(steps)):
            a.resume_step, a.resume_known = 0, True  # a relaunch seen starting at iteration 1, nothing loaded
        elif a.first_step is not None and i > 0:
            a.resume_step = max(0, a.first_step - log_interval(steps))
        base = a.resume_step if a.resume_step is not None else a.first_step
        a.steps_done = max(0, (a.last_step or 0) - (base or 0)) if a.last_step is not None else 0
        if begins and begins[0].t is not None:
            a.training_start = begins[0].t
        elif steps and steps[0].t is not None:
            # the first progress line comes after every step since the resume step (a log every N steps)
            ran = (steps[0].step or 0) - a.resume_step if a.resume_step is not None else 1
            a.training_start = steps[0].t - max(1, ran) * (steps[0].step_s or ideal or 0.0)
        worlds = [m for m in a.marks if m.kind == "world"]
        a.world_size = next((m.world for m in reversed(worlds) if m.world), a.world_size)
        a.nodes = next((m.nodes for m in reversed(worlds) if m.nodes), a.nodes)
        ending(a, is_last=i == len(attempts) - 1)
    for prev, nxt in pairwise(attempts):
        _membership(prev, nxt)


def _membership(prev: Attempt, nxt: Attempt) -> None:
    """The next attempt started in a group of another size: an elastic membership change. The previous
    attempt ended by it (not by a failure) when the launcher says so, or when the group changed and no rank
    failed on its own (every rank stopped by the launcher, or no failure line at all)."""
    changes = []
    if prev.world_size and nxt.world_size and prev.world_size != nxt.world_size:
        changes.append(f"world size {prev.world_size} -> {nxt.world_size}")
    if prev.nodes and nxt.nodes and prev.nodes != nxt.nodes:
        changes.append(f"nodes {prev.nodes} -> {nxt.nodes}")
    # the launcher's restart line opens the next attempt
    first_step = next((i for i, m in enumerate(nxt.marks) if m.kind == "step"), len(nxt.marks))
    said = [m for m in [*_ending_marks(prev), *nxt.marks[:first_step]] if m.row in MEMBERSHIP_ROWS]
    if said and not changes:
        changes.append(said[0].text)
    if not changes:
        return
    nxt.membership = "; ".join(changes)
    own = [m for m in _ending_marks(prev) if m.kind == "failure" and m.row not in STOPPED_ROWS]
    if prev.ended in FAILED_ENDS and (said or not own):
        prev.ended = "membership_change"


def _ending_marks(a: Attempt) -> list[Mark]:
    last_step_i = max((i for i, m in enumerate(a.marks) if m.kind == "step"), default=-1)
    return [m for m in a.marks[last_step_i + 1 :] if m.kind in ("failure", "restart")]


def _starts_here(a: Attempt, interval: int) -> bool:
    """The attempt's lines show it starting before its first step (a fresh start, when nothing loads): an
    initialization line, or any line before a first step line that comes within two log intervals of 0."""
    for n, m in enumerate(a.marks):
        if m.kind == "step":
            return n > 0 and m.step is not None and m.step <= 2 * interval
        if m.kind in ("init_begin", "train_begin") and m.row != "first line":
            return True  # (the log's first line opening the attempt says nothing of a start: a cut log has one)
    return False
