"""From prepared marks (prepare.py) to attempts: the marks split where the job started again.

An attempt ends where the launcher restarts the job, where a new process starts initializing after
training had begun, where a checkpoint is loaded again after training had begun, or where the step
number goes back (a rollback with no line of its own). Each attempt is then described (describe.py) and
its ending read (endings.py).
"""

from __future__ import annotations

from scope.analyzers.goodput.formats import MEMBERSHIP_ROWS
from scope.analyzers.goodput.launches import (
    Launch,
    background_launch,
    launch_lines_forward,
    next_decisive,
    silent_before,
)
from scope.analyzers.goodput.mark import Mark
from scope.analyzers.goodput.states import HANG_MIN_S, PASSIVE, SAID_IT_ENDED, Attempt


def split_attempts(marks: list[Mark]) -> list[Attempt]:
    attempts = [Attempt(0)]
    cur = attempts[0]
    trained = False  # the current attempt has made progress
    failed = False
    ended = False  # the current attempt said it ended (training done, a planned exit, Ctrl-C)
    row_max: dict[str, int] = {}
    last_t: float | None = None  # the time of the line before that says something
    guessed: set[int] = set()  # attempts opened on a guess (a load or a start after an end or a silence)
    launch = Launch()
    last_said: Mark | None = None  # the line before that says something
    upcoming = next_decisive(marks)
    for i, m in enumerate(marks):
        boundary = (
            _starts_attempt(m, trained, failed, row_max)
            or launch.again(m, last_t)
            or launch.after_start_up_end(m, failed or ended, last_t)
        )
        if boundary and not failed and background_launch(m, upcoming[i], row_max):
            boundary = False
        if boundary and ended and m.kind in ("load_begin", "load_end"):
            guessed.add(len(attempts))  # a load after the run said it ended: a test of the best checkpoint?
        if not boundary and trained and ((ended and _goes_on(m, row_max)) or _relaunched(m, last_t)):
            boundary, cur.silent_end = True, not ended
            guessed.add(len(attempts))
        if boundary and m.kind == "init_begin" and not (failed or ended) and silent_before(m, last_said):
            cur.unknown_end = True  # silence, then a launch: no line says how the attempt before ended
        if m.t is not None and m.kind not in PASSIVE:
            last_t, last_said = m.t, m
        if not boundary and m.kind == "step" and failed and trained:
            # progress after a failure line with no restart line: the failure did not end the attempt
            failed = False
        if boundary and m.row in MEMBERSHIP_ROWS:
            # the agent stops a healthy group when a node joins: until this line the old attempt trained
            cur.marks.append(m)
            cur = Attempt(len(attempts))
            attempts.append(cur)
            trained, failed, row_max, launch = False, False, {}, Launch()
            continue
        if boundary:
            cur = Attempt(len(attempts))
            attempts.append(cur)
            trained, failed, ended, row_max = False, False, False, {}
            launch = Launch()
        launch.note(m)
        cur.marks.append(m)
        if m.kind in SAID_IT_ENDED:
            ended = True
        if m.kind == "step" and m.step is not None:
            trained = True
            row_max[m.row] = max(row_max.get(m.row, m.step), m.step)
        elif m.kind == "failure":
            failed = True
    return launch_lines_forward(_without_stepless_guesses([a for a in attempts if a.marks], guessed))


def _without_stepless_guesses(attempts: list[Attempt], guessed: set[int]) -> list[Attempt]:
    """An attempt opened on a guess that never trained (Lightning's `trainer.test(ckpt_path=...)` restoring
    a checkpoint after fit ended) is the attempt before it, going on: its lines go back to it."""
    out: list[Attempt] = []
    for a in attempts:
        if out and a.index in guessed and not any(m.kind == "step" for m in a.marks):
            out[-1].marks.extend(a.marks)
            out[-1].silent_end = out[-1].unknown_end = False
            continue
        a.index = len(out)
        out.append(a)
    return out


def _relaunched(m: Mark, last_t: float | None) -> bool:
    """A setup line after training began (Megatron's "[after megatron is initialized]"), or a checkpoint
    load or a training start after a silence longer than the hang allowance: a new process (a relaunch
    whose start lines the log does not show), never the same attempt's save running on for days."""
    if m.kind == "init_mark":
        return True
    if m.kind in ("load_begin", "load_end", "train_begin") and m.t is not None and last_t is not None:
        return m.t - last_t > HANG_MIN_S
    return False


def _goes_on(m: Mark, row_max: dict[str, int]) -> bool:
    """After the attempt said it ended (a planned exit, Ctrl-C): training that goes on is the next attempt;
    a last progress line printed again (a bar's final refresh after "Training completed") is not."""
    if m.kind == "step":
        return m.step is not None and m.step > max(row_max.values(), default=-1)
    return m.kind in ("init_begin", "train_begin", "load_begin", "load_end")


def _starts_attempt(m: Mark, trained: bool, failed: bool, row_max: dict[str, int]) -> bool:
    if m.kind == "restart":
        return trained or failed
    if m.kind == "init_begin":
        return trained
    if m.kind == "train_begin":  # training starts again after a failure: the relaunch
        return trained and failed
    if m.kind in ("load_begin", "load_end"):
        # loading an earlier step after training began rolls back (in process, or in a new process whose
        # start we did not see); loading what was just saved (an evaluation, a check) does not
        top = max(row_max.values(), default=None)
        return trained and (m.step is None or top is None or m.step < top)
    return m.kind == "step" and m.step is not None and m.step < row_max.get(m.row, -1)
