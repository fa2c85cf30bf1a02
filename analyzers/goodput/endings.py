"""How an attempt ended: completed, failed, restarted, stopped, interrupted or running, with the line that
says so (the first ending after its last step decides), and the run's planned length where its lines state it.
"""

from __future__ import annotations

from itertools import pairwise

from scope.analyzers.goodput.formats import BAR_ROWS, EPOCH_ROWS
from scope.analyzers.goodput.log_interval import log_interval
from scope.analyzers.goodput.mark import Mark
from scope.analyzers.goodput.plan_ends import ETA_SUMMARY_ROWS, short_of_eta, short_of_plan
from scope.analyzers.goodput.states import RECORD_ROWS, Attempt

# A rank's own SIGTERM line is also how the launcher stops the peers of a rank that failed: torchrun
# SIGTERMs the survivors, waits for them (up to 30 s, then SIGKILL), and only then logs the failed rank
# (torch/distributed/elastic/multiprocessing/api.py: `Sending process N closing signal SIGTERM`, then
# `failed (exitcode: -9)`); a rank killed by a signal (the OOM killer) prints no traceback before it.
# Paddle's launcher does the same (watch_local_trainers: terminate_local_procs, then its `ABORT!!! ... was
# aborted` line), each survivor printing its `SignalInfo: *** SIGTERM` line; the survivor's own tracebacks
# after it (its DataLoader workers killed by the same signal) are the signal's, so only the launcher's line
# names a peer's failure there. Each stop row -> the failure rows that make it a peer's stop (empty: any).
PEER_STOP_ROWS: dict[str, frozenset[str]] = {
    "lightning_sigterm": frozenset(),
    "paddle_sigterm": frozenset({"paddle_launch_abort"}),
}
PEER_FAILURE_WINDOW_S = 60.0
# End lines printed only once the training loop finished (not on every way out, as detectron2's `Overall
# training speed` summary is): HF Trainer's `Training completed. Do not forget ...` and its train() summary
# (`{'train_runtime': ...}`, TrainOutput), maskrcnn-benchmark's `Total training time`, written after the
# loop, never from an exception; Lightning's `Trainer.fit` stopped: `max_steps=N` reached` (FitLoop.done: a
# limit reached, printed once the last step's validation is over: NeMo 2, BioNeMo; its `No training batches.`
# is no loop run, and no row of its own)
LOOP_FINISHED_ROWS = frozenset(
    {"hf_train_end", "hf_train_summary", "hf_train_output", "mrb_train_end", "lightning_fit_limit"}
)
# HF Trainer's loop ends short of its planned steps by design: its best checkpoint reloaded after the loop
# (load_best_model_at_end: EarlyStoppingCallback's runs), and an IterableDataset run out before max_steps
EARLY_STOP_ROWS = frozenset({"hf_load_best", "hf_data_exhausted"})
# Its end lines: EarlyStoppingCallback stops the loop from on_evaluate, so the last step's evaluation comes
# between the last step line and the end line (a stop requested otherwise, as LLaMA-Factory's Web UI abort,
# lands mid-way between evaluations)
HF_END_ROWS = frozenset({"hf_train_end", "hf_train_summary", "hf_train_output"})
# Lines that head a traceback (its last line says which exception: KeyboardInterrupt is a Ctrl-C): Python's
# own, and loguru's logger.catch line before the traceback it logs (YOLOX's launcher)
TRACEBACK_HEADS = frozenset({"python_traceback", "yolox_worker_error"})


# What an attempt whose process printed its exit line (a `finally` block's: formats/hydra_template.py's `Output
# dir:`) with no failure, Ctrl-C or stop line before it is known to have done
EXITED_UNKNOWN = (
    "its exit line (printed on every way out) with no failure or Ctrl-C line before it: it returned, or was "
    "stopped without a traceback"
)


def exited(a: Attempt) -> bool:
    """The attempt's process printed its own exit line and no line says how it ended (ending: `unknown`): the
    process is over (no hang, no lost node), how it ended is not known."""
    return a.ended == "unknown" and a.exited


def _peer_failure(stop: Mark, after: list[Mark]) -> Mark | None:
    """A failure line that follows a rank's SIGTERM line within the launcher's stop window (or untimed),
    with no line of the launcher or the scheduler saying it was signalled first: the failure the SIGTERM was
    part of (a scheduler's stop logs no failed rank after it, only its own consequences)."""
    if stop.row not in PEER_STOP_ROWS:
        return None
    for m in after[after.index(stop) + 1 :]:
        if m.kind in ("stop", "interrupt") and m.row not in PEER_STOP_ROWS:
            return None  # the launcher or the scheduler says it was signalled itself: a stop from outside
        if m.kind == "failure" and (not PEER_STOP_ROWS[stop.row] or m.row in PEER_STOP_ROWS[stop.row]):
            close = m.t is None or stop.t is None or m.t - stop.t <= PEER_FAILURE_WINDOW_S
            return m if close else None
    return None


def ending(a: Attempt, is_last: bool) -> None:
    """Sets a.ended and a.end_evidence from the attempt's lines: the first way out after its last step (a
    Ctrl-C, a stop from outside, a failure), else its end line or its reached plan, else its silence before
    the next launch (`is_last`: no launch follows, the log may still be running)."""
    last_step_i = max((i for i, m in enumerate(a.marks) if m.kind == "step"), default=-1)
    after_last_step = a.marks[last_step_i + 1 :]
    failures = [m for m in after_last_step if m.kind in ("failure", "restart")] or _recorded_failures(a)
    done = [m for m in a.marks if m.kind in ("train_end", "job_end")]
    # the first ending after the last step decides: a Ctrl-C or a stop from outside before any failure line
    # makes the failures after it (KeyboardInterrupt / SignalException tracebacks) its consequence, and a
    # rank's crash before a Ctrl-C pressed on its hung peers is the failure
    plan_and_last = _plan_and_last(a)
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
        a.ended = "failed"  # (the peer's failure a launcher's stop line came from, where one did)
        first = killed if killed is not None and killed.kind == "failure" else failures[0]
        a.end_evidence = f"{first.where()}: {first.text}"
    elif done and (by_design := _ended_by_design(after_last_step)):
        a.ended, a.end_evidence = "completed", by_design  # short of its plan, as the trainer was told to
    elif done and (short := short_of_plan(done[-1], *plan_and_last) or _short_of_eta(a, done, plan_and_last[0])):
        a.ended, a.end_evidence = "interrupted", short  # its summary line, printed on the way out of a stopped loop
    elif (done or _reached_plan(a)) and (cut := _evaluation_cut(after_last_step)):
        a.ended, a.end_evidence = "unknown", cut  # trained to its end, but its lines stop inside the evaluation
    elif done:
        a.ended = "completed"
        a.end_evidence = f"{done[-1].where()}: {done[-1].text}"
    elif reached := _reached_plan(a):
        a.ended = "completed"
        a.end_evidence = reached
    elif said_exit := next((m for m in reversed(a.marks) if m.kind == "exit"), None):
        a.ended, a.exited = "unknown", True  # its process is over by its own line, printed on every way out
        a.end_evidence = f"{said_exit.where()}: {said_exit.text} ({EXITED_UNKNOWN})"
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
        if last_step_i < 0 and a.marks:  # (or starting: no step yet)
            a.end_evidence = _no_step_end(a.marks)
    if a.ended not in ("completed", "running"):  # (a log still running has its planned steps ahead of it)
        planned, _ = _planned_length(a)
        a.planned_steps = planned if planned and planned > (a.last_step or 0) else None


# What says a launch meant to train (report._TRAINING_KINDS less the step: a launch with none of them that
# evaluated is an evaluation-only launch, report.evaluation_only)
_TRAINING_START_END = frozenset({"train_begin", "train_end"})


def _no_step_end(marks: list[Mark]) -> str:
    """Where a last launch with no step line stops: after an evaluation where it only evaluated (no training
    start or end line: its report says evaluation only, so `stops in start-up` would contradict it), else in
    start-up."""
    last = marks[-1]
    if not any(m.kind in _TRAINING_START_END for m in marks) and any(
        m.kind in ("eval_begin", "eval_end") for m in marks
    ):
        return (
            f"{last.where()}: the log stops after an evaluation, no training step or training-start line: {last.text}"
        )
    return f"{last.where()}: the log stops in start-up, before a first step: {last.text}"


def _ended_by_design(after_last_step: list[Mark]) -> str:
    """Why the loop's end short of its plan was the trainer's own (early stopping, the data run out), else ''."""
    if stop := next((m for m in after_last_step if m.row in EARLY_STOP_ROWS), None):
        return f"{stop.where()}: the trainer ended the loop itself: {stop.text}"
    end_i = next((i for i, m in enumerate(after_last_step) if m.kind == "train_end"), None)
    if end_i is None or after_last_step[end_i].row not in HF_END_ROWS:
        return ""
    evaluated = next((m for m in after_last_step[:end_i] if m.kind in ("eval_begin", "eval_end")), None)
    if evaluated is None:
        return ""
    end = after_last_step[end_i]
    return (
        f"{end.where()}: the loop ended right after the last step's evaluation ({evaluated.where()}), as "
        f"early stopping ends it: {end.text}"
    )


def _evaluation_cut(after_last_step: list[Mark]) -> str:
    """Why the attempt's lines stop inside the evaluation that follows its training (detectron2's test after
    the loop: `Start inference on 346 batches`, then only progress or nothing), else '': no result line and
    no other line after it says the job got past it, so the run did not complete its work (its log was cut,
    or the job was stopped or crashed with its traceback on another stream)."""
    begins = [i for i, m in enumerate(after_last_step) if m.kind == "eval_begin"]
    if not begins:
        return ""
    if any(m.kind == "train_end" and m.row in LOOP_FINISHED_ROWS for m in after_last_step[: begins[-1]]):
        return ""  # the trainer said its loop finished: the training completed, whatever the evaluation after
    begin = after_last_step[begins[-1]]
    after = [m for m in after_last_step[begins[-1] + 1 :] if m.kind not in ("clock", "step_time", "data_dur")]
    if any(m.kind in ("eval_end", "job_end", "save_begin", "save_end") or m.row in LOOP_FINISHED_ROWS for m in after):
        return ""  # (a loop's end line after the evaluation: the loop ran its evaluation and went on to end)
    return f"{begin.where()}: the log stops in the evaluation after training, with no result line: {begin.text}"


def _plan_and_last(a: Attempt) -> tuple[Mark | None, int | None, int | None, int]:
    planned, plan = _planned_length(a)
    steps = [m for m in a.marks if m.kind == "step" and m.step is not None]
    return plan, planned, a.last_step, log_interval(steps)


def _short_of_eta(a: Attempt, done: list[Mark], plan: Mark | None) -> str:
    """With no plan line to count against: the loop's own summary (not a launcher's end after it) came while
    the attempt's last progress line still estimated time left."""
    summary = next((m for m in reversed(done) if m.row in ETA_SUMMARY_ROWS), None)
    if plan is not None or summary is None:
        return ""  # (a plan line decides: short_of_plan)
    last = next((m for m in reversed(a.marks) if m.kind == "step"), None)
    return short_of_eta(summary, last)


def _interrupted_traceback(first: Mark, after: list[Mark]) -> Mark | None:
    """A traceback's head line, then its last line `KeyboardInterrupt` before any other ending: Ctrl-C ended
    the attempt (Python prints the head first), not a failure."""
    if first.row not in TRACEBACK_HEADS:
        return None
    ways_out = [m for m in after[after.index(first) + 1 :] if m.kind in ("interrupt", "stop", "failure")]
    if first.row != "python_traceback" and ways_out and ways_out[0].row == "python_traceback":
        ways_out = ways_out[1:]  # loguru's line, then the traceback it caught: one traceback
    nxt = ways_out[0] if ways_out else None
    return nxt if nxt is not None and nxt.row == "python_keyboard_interrupt" else None


def _planned_length(a: Attempt) -> tuple[int | None, Mark | None]:
    """The run's planned last step as the attempt's lines state it (mmcv's `max: 12 epochs` times the epoch's
    iterations, a `Training iterations: N`, a progress line's epochs of a stated count times the epoch's steps,
    or a step counter's own `N/N` where it counts the whole run), and the plan line that says so."""
    steps = [m for m in a.marks if m.kind == "step" and m.step is not None]
    if not steps:
        return None, None
    last = steps[-1]
    plan = next((m for m in reversed(a.marks) if m.kind == "plan"), None)
    if plan is not None:
        per_epoch = last.total if last.epoch is not None else None
        return plan.total or (plan.epoch * per_epoch if plan.epoch and per_epoch else None), plan
    if last.epochs and last.per_epoch:  # (`Epoch: 100/100, iter: 0/989`: 100 epochs of 989 steps)
        return last.epochs * last.per_epoch, None
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
