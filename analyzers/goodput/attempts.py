"""From marks to attempts: the marks prepared (one rank's voice, durations attached, repeated step lines
dropped), split where the job started again, and each attempt described: its steps, the step it resumed
from, how it ended (completed, failed, restarted, stopped, interrupted, running) and any membership change.

An attempt ends where the launcher restarts the job, where a new process starts initializing after
training had begun, where a checkpoint is loaded again after training had begun, or where the step
number goes back (a rollback with no line of its own).
"""

from __future__ import annotations

import statistics
from itertools import pairwise

from scope.analyzers.goodput.formats import BAR_ROWS, EPOCH_ROWS, MEMBERSHIP_ROWS
from scope.analyzers.goodput.launches import (
    Launch,
    background_launch,
    launch_lines_forward,
    next_decisive,
    silent_before,
)
from scope.analyzers.goodput.mark import Mark
from scope.analyzers.goodput.plan_ends import short_of_plan
from scope.analyzers.goodput.states import (
    FAILED_ENDS,
    HANG_MIN_S,
    PASSIVE,
    RECORD_ROWS,
    STOPPED_ROWS,
    Attempt,
)

# --- preparing the marks -------------------------------------------------------------------------------


def one_voice(marks: list[Mark]) -> list[Mark]:
    """Every rank printing its progress into one file (`[rank3]:` prefixes): the lowest rank speaks for the
    job; the others lend only their failures (their own "step 10" or "Saving" would read as a rollback or
    count a save twice)."""
    ranks = {m.rank for m in marks if m.kind == "step" and m.rank is not None}
    if len(ranks) <= 1:
        return marks
    voice = min(ranks)
    return [m for m in marks if m.rank is None or m.rank == voice or m.kind in ("failure", "restart", "clock")]


def prepare(marks: list[Mark]) -> list[Mark]:
    """Attach postfix step times and durations, expand initialization durations, and drop step lines that
    repeat the step before them (a bar reprinted): what is left are the marks that change state."""
    marks = one_voice(marks)
    out: list[Mark] = []
    last_step: Mark | None = None  # the step line just before (no other line between)
    for m in marks:
        if m.kind == "step_time":
            if last_step is not None and last_step.step_s is None:
                last_step.step_s = m.step_s
            continue
        if m.kind == "data_dur":
            target = last_step or next((x for x in reversed(out) if x.kind == "step"), None)
            if target is not None and m.dur_s is not None:
                target.data_s = m.dur_s
            continue
        if m.kind == "init_dur" and m.dur_s and m.t is not None:
            out.append(Mark("init_begin", m.line, m.file, m.row, t=m.t - m.dur_s, t_src="derived", text=m.text))
            continue
        if m.kind in ("save_dur", "load_dur"):
            _attach_duration(out, m)
            continue
        if m.kind in ("save_end", "load_end") and _needs_begin(out, m):
            # an end line that says how long it took, with no begin line: the save began that long ago
            kind = m.kind[:4] + "_begin"
            out.append(
                Mark(
                    kind,
                    m.line,
                    m.file,
                    m.row,
                    step=m.step,
                    t=(m.t or 0.0) - (m.dur_s or 0.0),
                    t_src="derived",
                    text=m.text,
                )
            )
        if m.kind == "step":
            if m.step is None or (last_step is not None and m.step == last_step.step):
                if last_step is not None and last_step.step_s is None and m.step_s is not None:
                    last_step.step_s = m.step_s
                if last_step is not None and last_step.data_s is None and m.data_s is not None:
                    last_step.data_s = m.data_s  # (the hook's last step: its end record, then its progress line)
                continue
            last_step = m
        elif m.kind not in PASSIVE:
            last_step = None
        out.append(m)
    return [m for m in out if m.t is not None or m.kind == "step"]


def _needs_begin(out: list[Mark], m: Mark) -> bool:
    if m.t_src != "own" or not m.dur_s or m.t is None:
        return False
    kind = m.kind[:4]
    for prev in reversed(out):
        if prev.kind in (f"{kind}_begin", f"{kind}_progress"):
            return prev.t is None or prev.t < m.t - m.dur_s - 2.0  # a begin long before: another save's
        if prev.kind == f"{kind}_end":
            return True
    return True


def _attach_duration(out: list[Mark], m: Mark) -> None:
    kind = "save" if m.kind == "save_dur" else "load"
    for prev in reversed(out):
        if prev.kind.startswith(kind):
            if prev.dur_s is None:
                prev.dur_s = m.dur_s
            return


# --- attempts ---------------------------------------------------------------------------------------------


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
        boundary = _starts_attempt(m, trained, failed, row_max) or launch.again(m, last_t)
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
        if m.kind in ("train_end", "job_end", "interrupt", "stop"):
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
        _ending(a, is_last=i == len(attempts) - 1)
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


def log_interval(steps: list[Mark]) -> int:
    """Steps between two progress lines (a log every N steps): the first line shows step resume + N."""
    nums = [m.step for m in steps if m.step is not None]
    gaps = [b - a for a, b in pairwise(nums) if b > a]
    return int(statistics.median(gaps)) if gaps else 1


# A rank's own SIGTERM line is also how the launcher stops the peers of a rank that failed: torchrun
# SIGTERMs the survivors, waits for them (up to 30 s, then SIGKILL), and only then logs the failed rank
# (torch/distributed/elastic/multiprocessing/api.py: `Sending process N closing signal SIGTERM`, then
# `failed (exitcode: -9)`); a rank killed by a signal (the OOM killer) prints no traceback before it.
PEER_STOP_ROWS = frozenset({"lightning_sigterm"})
PEER_FAILURE_WINDOW_S = 60.0


def _peer_failure(stop: Mark, after: list[Mark]) -> Mark | None:
    """A failure line that follows a rank's SIGTERM line within the launcher's stop window (or untimed),
    with no line of the launcher or the scheduler saying it was signalled first: the failure the SIGTERM was
    part of (a scheduler's stop logs no failed rank after it, only its own consequences)."""
    if stop.row not in PEER_STOP_ROWS:
        return None
    for m in after[after.index(stop) + 1 :]:
        if m.kind in ("stop", "interrupt") and m.row not in PEER_STOP_ROWS:
            return None  # the launcher or the scheduler says it was signalled itself: a stop from outside
        if m.kind == "failure":
            close = m.t is None or stop.t is None or m.t - stop.t <= PEER_FAILURE_WINDOW_S
            return m if close else None
    return None


def _ending(a: Attempt, is_last: bool) -> None:
    after_last_step = a.marks
    last_step_i = max((i for i, m in enumerate(a.marks) if m.kind == "step"), default=-1)
    after_last_step = a.marks[last_step_i + 1 :]
    failures = [m for m in after_last_step if m.kind in ("failure", "restart")] or _recorded_failures(a)
    done = [m for m in a.marks if m.kind in ("train_end", "job_end")]
    # the first ending after the last step decides: a Ctrl-C or a stop from outside before any failure line
    # makes the failures after it (KeyboardInterrupt / SignalException tracebacks) its consequence, and a
    # rank's crash before a Ctrl-C pressed on its hung peers is the failure
    killed = next((m for m in after_last_step if m.kind in ("interrupt", "stop", "failure", "restart")), None)
    if killed is not None and (ctrl_c := _interrupted_traceback(killed, after_last_step)):
        killed = ctrl_c
    if killed is not None and killed.kind == "stop" and (peer := _peer_failure(killed, after_last_step)):
        killed = peer  # the launcher stopped this rank because another failed: the failure decides
    if killed is not None and killed.kind == "interrupt":
        a.ended = "interrupted"  # Ctrl-C / SIGINT: the user stopped it, no failure
        a.end_evidence = f"{killed.where()}: {killed.text}"
    elif killed is not None and killed.kind == "stop":
        a.ended = "stopped"  # SIGTERM from outside: a cancel, a time limit, a preemption; no rank failed
        a.end_evidence = f"{killed.where()}: {killed.text}"
    elif failures:
        a.ended = "failed"
        a.end_evidence = f"{failures[0].where()}: {failures[0].text}"
    elif done and (short := short_of_plan(done[-1], *_plan_and_last(a))):
        a.ended, a.end_evidence = "interrupted", short  # its summary line, printed on the way out of a stopped loop
    elif done:
        a.ended = "completed"
        a.end_evidence = f"{done[-1].where()}: {done[-1].text}"
    elif reached := _reached_plan(a):
        a.ended = "completed"
        a.end_evidence = reached
    elif not is_last and a.unknown_end:
        a.ended = "restarted"  # (counted as a failure: the usual cause is a hang killed or a node lost)
        a.end_evidence = "no line says how it ended: silent past the hang allowance, then a new launch"
    elif not is_last and a.silent_end:
        a.ended = "stopped"  # silence, then a relaunch: a time limit, a preemption, a planned exit we can't read
        a.end_evidence = "no line says how it ended; the log goes on with a new process"
    elif not is_last:
        a.ended = "restarted"
    else:
        a.ended = "running"  # the log ends with the job training: cut, or still running
    if a.ended not in ("completed", "running"):  # (a log still running has its planned steps ahead of it)
        planned, _ = _planned_length(a)
        a.planned_steps = planned if planned and planned > (a.last_step or 0) else None


def _plan_and_last(a: Attempt) -> tuple[Mark | None, int | None, int | None, int]:
    planned, plan = _planned_length(a)
    steps = [m for m in a.marks if m.kind == "step" and m.step is not None]
    return plan, planned, a.last_step, log_interval(steps)


def _interrupted_traceback(first: Mark, after: list[Mark]) -> Mark | None:
    """A traceback's head line, then its last line `KeyboardInterrupt` before any other ending: Ctrl-C ended
    the attempt (Python prints the head first), not a failure."""
    if first.row != "python_traceback":
        return None
    nxt = next((m for m in after[after.index(first) + 1 :] if m.kind in ("interrupt", "stop", "failure")), None)
    return nxt if nxt is not None and nxt.row == "python_keyboard_interrupt" else None


def _planned_length(a: Attempt) -> tuple[int | None, Mark | None]:
    """The run's planned last step as the attempt's lines state it (mmcv's `max: 12 epochs` times the epoch's
    iterations, a `Training iterations: N`, or a step counter's own `N/N` where it counts the whole run), and
    the plan line that says so."""
    steps = [m for m in a.marks if m.kind == "step" and m.step is not None]
    if not steps:
        return None, None
    last = steps[-1]
    plan = next((m for m in reversed(a.marks) if m.kind == "plan"), None)
    if plan is not None:
        per_epoch = last.total if last.epoch is not None else None
        return plan.total or (plan.epoch * per_epoch if plan.epoch and per_epoch else None), plan
    run_counter = last.epoch is None or _counts_across_epochs(steps)
    if last.total and run_counter and last.row not in BAR_ROWS and last.row not in EPOCH_ROWS:
        return last.total, None  # (a bar, or an epoch's own counter, reaches its total every epoch)
    return None, None


def _counts_across_epochs(steps: list[Mark]) -> bool:
    """The step counter never goes back in the attempt, from one epoch to the next (`train epoch: 1 - step:
    1200 (total: 1814)`): its total is the run's, not an epoch's (an epoch's own counter starts again)."""
    return all((b.step or 0) > (a.step or 0) for a, b in pairwise(steps))


def _reached_plan(a: Attempt) -> str:
    """Why the attempt's last step is the run's last (its planned length reached), else ''."""
    planned, plan = _planned_length(a)
    last = next((m for m in reversed(a.marks) if m.kind == "step" and m.step is not None), None)
    if planned is None and plan is not None and last is not None and _last_epoch_evaluated(a, plan, last):
        return f"{last.where()}: epoch {last.epoch} of {plan.epoch} planned, evaluated after it ({plan.text})"
    steps = [m for m in a.marks if m.kind == "step" and m.step is not None]
    if planned is None or last is None or (last.step or 0) + log_interval(steps) < planned:
        return ""  # (a log every N steps shows a step within N of the plan last: 1,810 of 1,814 every 10)
    said = f" ({plan.where()}: {plan.text})" if plan is not None else ""
    return f"{last.where()}: step {last.step:,} is the planned last{said}"


def _last_epoch_evaluated(a: Attempt, plan: Mark, last: Mark) -> bool:
    """The planned last epoch reached (a config's `EPOCHS: 30`), and its evaluation ran after its last progress
    line: the run finished (a log every N steps never shows the epoch's own last step)."""
    if not plan.epoch or (last.epoch or 0) < plan.epoch:
        return False
    return any(m.kind == "eval_end" for m in a.marks[a.marks.index(last) + 1 :])


def _recorded_failures(a: Attempt) -> list[Mark]:
    """A failure the records state (a rank's end record, the launcher's) ends its attempt wherever it sorts:
    the rank that fails first can die a moment before a slower peer writes the step line it had finished."""
    return [m for m in a.marks if m.kind == "failure" and m.row in RECORD_ROWS]
