"""From marks to the job's life: attempts, and every second of wall time in one bucket.

An attempt ends where the launcher restarts the job, where a new process starts initializing after
training had begun, where a checkpoint is loaded again after training had begun, or where the step
number goes back (a rollback with no line of its own). Between two marks the job is in the state the
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
from dataclasses import dataclass, field
from itertools import pairwise

from scope.analyzers.goodput.formats import BAR_ROWS, EPOCH_ROWS, MEMBERSHIP_ROWS
from scope.analyzers.goodput.guards import finite, finite_or_none, no_overlap
from scope.analyzers.goodput.mark import Mark

BUCKETS = (
    "productive",
    "warmup",
    "initialization",
    "checkpoint_save",
    "checkpoint_load",
    "evaluation",
    "redone",
    "failure_to_restart",
    "queued",
    "hung",
    "data_stall",
    "unexplained",
)

STATE_AFTER = {
    "init_begin": "init",
    "init_mark": "init",
    "train_begin": "productive",
    "step": "productive",
    "save_begin": "save",
    "save_progress": "save",
    "save_end": "post_save",
    "load_begin": "load",
    "load_progress": "load",
    "eval_begin": "eval",
    "eval_end": "productive",
    "failure": "failed",
    "interrupt": "done",
    "stop": "done",
    "restart": "failed",
    "train_end": "done",
    "job_end": "done",
}
BUCKET_OF_STATE = {
    "init": "initialization",
    "productive": "productive",
    "save": "checkpoint_save",
    "post_save": "checkpoint_save",
    "load": "checkpoint_load",
    "eval": "evaluation",
    "failed": "failure_to_restart",
    "done": "unexplained",
}
# An attempt's first steps slower than this many ideal steps are warm-up (compilation, autotuning, the
# allocator and the input pipeline filling): their time beyond the ideal is split out of productive time.
WARMUP_FACTOR = 2.0
WARMUP_STEP_LINES = 3
# No progress for this long (and this many ideal steps) while the job runs is a hang, not a slow step:
# long enough that a slow data shard or a Python GC pause never counts, short against the usual
# collective timeouts (NCCL / gloo defaults of 10-30 min) a real hang runs into.
HANG_MIN_S = 300.0
# Checkpoint work with no line of its own after a save (a second copy, a finalize) counts up to this long;
# beyond it the time is unexplained (a stall, or a stop and a relaunch whose lines the log does not show).
UNLOGGED_SAVE_MAX_S = 1800.0
HANG_MIN_STEPS = 20.0
# Marks that only carry information for the marks around them (no state of their own).
PASSIVE = frozenset({"clock", "step_time", "data_dur", "save_dur", "load_dur", "init_dur", "resume", "world", "plan"})
# How an attempt that did not complete ended: a failure (a line or a record says so) or a restart with no
# line of its own. A membership change (elastic: nodes joined or left, the world size changed, no rank
# failed on its own) is neither: it is reported as such and never counted as a failure.
FAILED_ENDS = ("failed", "restarted")
# Rows whose restart is a membership change by the launcher's own words (torchrun: "Detected N new nodes
# ... will restart worker group"), and rows whose failure is the launcher stopping ranks that did not fail
# on their own (scope's records: every rank of the attempt killed by a signal).
STOPPED_ROWS = frozenset({"records_stopped"})
# Rows of scope's own records (the hook's and the launcher's), as against a log line's format.
RECORD_ROWS = frozenset({"records", *STOPPED_ROWS})


@dataclass
class Attempt:
    index: int
    start: float | None = None
    end: float | None = None
    first_step: int | None = None
    last_step: int | None = None
    resume_step: int | None = None
    resume_known: bool = False  # the log names the resume step (a load line); else it is estimated
    # completed | failed | restarted | stopped (silence, then a relaunch) | interrupted (Ctrl-C / SIGINT) |
    # running (log ends mid-training) | unknown
    ended: str = "unknown"
    end_evidence: str = ""
    training_start: float | None = None  # the first step began (train_begin, or first step minus its time)
    first_step_t: float | None = None
    steps_done: int = 0
    diagnosis: str = ""  # the failure finding that explains this attempt's end
    diagnosis_id: str = ""
    world_size: int | None = None  # ranks in the attempt's worker group (from a launcher line or record)
    nodes: int | None = None  # nodes (torchrun agents) in it
    membership: str = ""  # the change of membership this attempt started with ("world size 8 -> 4")
    exit_codes: dict[int, int | None] = field(default_factory=dict)  # rank -> exit code (negative: signal)
    signals: dict[int, str] = field(default_factory=dict)  # rank -> the signal that ended it
    # ranks that failed (not stopped by the launcher), the first to fail first
    failed_ranks: list[int] = field(default_factory=list)
    planned_steps: int | None = None  # the run's planned last step, where the log states it and it was not reached
    silent_end: bool = False  # the log goes silent, then a new process starts: no line says how this one ended
    final_state: str = "init"  # the state the last line left the attempt in
    final_carry: tuple[str, float] | None = None
    marks: list[Mark] = field(default_factory=list, repr=False)

    @property
    def from_step(self) -> int | None:
        """The first step this attempt ran (after the step it resumed from), not its first progress line."""
        if self.resume_step is not None and (self.first_step is None or self.resume_step < self.first_step):
            return self.resume_step + 1
        return self.first_step

    def to_dict(self) -> dict[str, object]:
        return {
            "attempt": self.index,
            "start": self.start,
            "end": self.end,
            "duration_s": (self.end - self.start) if self.start is not None and self.end is not None else None,
            "first_step": self.first_step,
            "last_step": self.last_step,
            "resume_step": self.resume_step,
            "resume_known": self.resume_known,
            "from_step": self.from_step,
            "steps_done": self.steps_done,
            "ended": self.ended,
            "end_evidence": self.end_evidence,
            "first_step_at": self.first_step_t,
            "diagnosis": self.diagnosis,
            "diagnosis_id": self.diagnosis_id,
            "world_size": self.world_size,
            "nodes": self.nodes,
            "membership": self.membership,
            "failed_ranks": self.failed_ranks,
            "exit_codes": {str(r): c for r, c in sorted(self.exit_codes.items())},
            "signals": {str(r): s for r, s in sorted(self.signals.items())},
            "end_state": end_state(self),
            "planned_steps": self.planned_steps,
        }


def end_state(a: Attempt) -> str:
    """How the attempt's ranks ended, in a few words: exit codes grouped, signals named."""
    if not a.exit_codes and not a.signals:
        return ""
    groups: dict[str, list[int]] = {}
    for r in sorted(set(a.exit_codes) | set(a.signals)):
        code = a.exit_codes.get(r)
        what = a.signals.get(r) or (f"exit {code}" if code is not None else "unknown")
        if a.signals.get(r) and code is not None and code >= 0:
            what = f"{a.signals[r]}, exit {code}"
        groups.setdefault(what, []).append(r)
    return "; ".join(f"{ranks_text(ranks)}: {what}" for what, ranks in groups.items())


def ranks_text(ranks: list[int]) -> str:
    """Ranks as runs (0-3,5), so a thousand ranks killed by one SIGTERM stay one short phrase."""
    runs: list[list[int]] = []
    for r in ranks:
        if runs and r == runs[-1][1] + 1:
            runs[-1][1] = r
        else:
            runs.append([r, r])
    text = ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)
    return ("rank " if len(ranks) == 1 else "ranks ") + text


@dataclass
class Interval:
    start: float
    end: float
    bucket: str
    attempt: int
    steps: int = 0  # steps completed in it
    why: str = ""


@dataclass
class Accounting:
    attempts: list[Attempt]
    intervals: list[Interval]
    buckets: dict[str, float]
    wall_s: float
    start: float | None
    end: float | None
    ideal_step_s: float | None
    step_times: list[tuple[int, float]]
    steps_completed: int | None
    steps_redone: int
    redone_is_bound: bool  # a resume step the log does not show: steps_redone is a lower bound
    saves: list[tuple[Mark, Mark | None, float | None]]  # (begin, end, blocking seconds)
    loads: list[tuple[Mark, Mark | None, float | None]]
    failures: list[Mark]
    warnings: list[str] = field(default_factory=list)
    # a log that starts mid-run printing every N > 1 steps: the steps before its first line are not shown
    completed_is_bound: bool = False


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
    for m in marks:
        boundary = _starts_attempt(m, trained, failed, row_max)
        if boundary and ended and m.kind in ("load_begin", "load_end"):
            guessed.add(len(attempts))  # a load after the run said it ended: a test of the best checkpoint?
        if not boundary and trained and ((ended and _goes_on(m, row_max)) or _relaunched(m, last_t)):
            boundary, cur.silent_end = True, not ended
            guessed.add(len(attempts))
        if m.t is not None and m.kind not in PASSIVE:
            last_t = m.t
        if not boundary and m.kind == "step" and failed and trained:
            # progress after a failure line with no restart line: the failure did not end the attempt
            failed = False
        if boundary and m.row in MEMBERSHIP_ROWS:
            # the agent stops a healthy group when a node joins: until this line the old attempt trained
            cur.marks.append(m)
            cur = Attempt(len(attempts))
            attempts.append(cur)
            trained, failed, row_max = False, False, {}
            continue
        if boundary:
            cur = Attempt(len(attempts))
            attempts.append(cur)
            trained, failed, ended, row_max = False, False, False, {}
        cur.marks.append(m)
        if m.kind in ("train_end", "job_end", "interrupt", "stop"):
            ended = True
        if m.kind == "step" and m.step is not None:
            trained = True
            row_max[m.row] = max(row_max.get(m.row, m.step), m.step)
        elif m.kind == "failure":
            failed = True
    return _without_stepless_guesses([a for a in attempts if a.marks], guessed)


def _without_stepless_guesses(attempts: list[Attempt], guessed: set[int]) -> list[Attempt]:
    """An attempt opened on a guess that never trained (Lightning's `trainer.test(ckpt_path=...)` restoring
    a checkpoint after fit ended) is the attempt before it, going on: its lines go back to it."""
    out: list[Attempt] = []
    for a in attempts:
        if out and a.index in guessed and not any(m.kind == "step" for m in a.marks):
            out[-1].marks.extend(a.marks)
            out[-1].silent_end = False
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
        elif a.first_step is not None and i == 0 and (a.first_step <= 1 or _starts_here(a, _log_interval(steps))):
            a.resume_step, a.resume_known = 0, True  # the log shows the job starting, with nothing to load
        elif a.first_step is not None and a.first_step <= 1 and _starts_here(a, _log_interval(steps)):
            a.resume_step, a.resume_known = 0, True  # a relaunch seen starting at iteration 1, nothing loaded
        elif a.first_step is not None and i > 0:
            a.resume_step = max(0, a.first_step - _log_interval(steps))
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


def _log_interval(steps: list[Mark]) -> int:
    """Steps between two progress lines (a log every N steps): the first line shows step resume + N."""
    nums = [m.step for m in steps if m.step is not None]
    gaps = [b - a for a, b in pairwise(nums) if b > a]
    return int(statistics.median(gaps)) if gaps else 1


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
    if killed is not None and killed.kind == "interrupt":
        a.ended = "interrupted"  # Ctrl-C / SIGINT: the user stopped it, no failure
        a.end_evidence = f"{killed.where()}: {killed.text}"
    elif killed is not None and killed.kind == "stop":
        a.ended = "stopped"  # SIGTERM from outside: a cancel, a time limit, a preemption; no rank failed
        a.end_evidence = f"{killed.where()}: {killed.text}"
    elif failures:
        a.ended = "failed"
        a.end_evidence = f"{failures[0].where()}: {failures[0].text}"
    elif done:
        a.ended = "completed"
        a.end_evidence = f"{done[-1].where()}: {done[-1].text}"
    elif is_last and (reached := _reached_plan(a)):
        a.ended = "completed"
        a.end_evidence = reached
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
    if last.total and last.epoch is None and last.row not in BAR_ROWS and last.row not in EPOCH_ROWS:
        return last.total, None  # (a bar, or an epoch's own counter, reaches its total every epoch)
    return None, None


def _reached_plan(a: Attempt) -> str:
    """Why the attempt's last step is the run's last (its planned length reached), else ''."""
    planned, plan = _planned_length(a)
    last = next((m for m in reversed(a.marks) if m.kind == "step" and m.step is not None), None)
    if planned is None and plan is not None and last is not None and _last_epoch_evaluated(a, plan, last):
        return f"{last.where()}: epoch {last.epoch} of {plan.epoch} planned, evaluated after it ({plan.text})"
    if planned is None or last is None or (last.step or 0) < planned:
        return ""
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


# --- the buckets ------------------------------------------------------------------------------------------


def step_times(marks: list[Mark]) -> list[tuple[int, float]]:
    """(step, seconds per step): from the lines' own elapsed-time fields where they have them, else from
    the intervals between consecutive step lines with nothing else between them."""
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


def ideal_step_time(marks: list[Mark]) -> tuple[float | None, list[tuple[int, float]]]:
    """The median step time (the ideal, as ml-goodput-measurement takes it) and the samples it came from."""
    samples = step_times(marks)
    return (statistics.median(d for _, d in samples) if samples else None), samples


def account(marks: list[Mark], wall_bounds: tuple[float | None, float | None] = (None, None)) -> Accounting:
    marks = prepare(finite(marks))
    wall_bounds = (finite_or_none(wall_bounds[0]), finite_or_none(wall_bounds[1]))
    ideal, step_times = ideal_step_time(marks)
    marks = _open_with_start(marks, wall_bounds[0])
    attempts = split_attempts(marks)
    describe_attempts(attempts, ideal)
    intervals: list[Interval] = []
    for a in attempts:
        intervals.extend(_attempt_intervals(a, ideal))
    for prev, nxt in pairwise(attempts):
        # until the next attempt's first line that says something (a bare timestamp, the launcher stopping
        # the old group, is still the restart)
        said = [m.t for m in nxt.marks if m.t is not None and m.kind not in PASSIVE]
        begin = min(said) if said else nxt.start
        if prev.end is not None and begin is not None and begin > prev.end:
            intervals.append(Interval(prev.end, begin, _between(prev), nxt.index, why="between attempts"))
    redone, bound = _mark_redone(attempts, intervals, ideal)
    _stopped_tails(attempts, intervals)
    start, end = _bounds(intervals, wall_bounds)
    if start is not None and end is not None:
        _trailing(attempts, intervals, end)
        _cover_edges(intervals, start, end)
        intervals = no_overlap(intervals, start, end)
    buckets = dict.fromkeys(BUCKETS, 0.0)
    for iv in intervals:
        buckets[iv.bucket] += max(0.0, iv.end - iv.start)
    wall = (end - start) if start is not None and end is not None else 0.0
    return Accounting(
        attempts=attempts,
        intervals=intervals,
        buckets=buckets,
        wall_s=wall,
        start=start,
        end=end,
        ideal_step_s=ideal,
        step_times=step_times,
        steps_completed=_kept_steps(attempts),
        completed_is_bound=_starts_unseen(attempts) and _log_interval(_step_marks(attempts)) > 1,
        steps_redone=redone,
        redone_is_bound=bound,
        saves=_spans(marks, "save"),
        loads=_spans(marks, "load"),
        failures=[m for m in marks if m.kind == "failure"],
    )


def _between(prev: Attempt) -> str:
    """The gap after an attempt: restarting after a failure, or waiting to be scheduled again after an
    attempt that ended by itself (a planned exit, a time limit's save-and-exit, Ctrl-C)."""
    return "failure_to_restart" if prev.ended in (*FAILED_ENDS, "membership_change") else "queued"


def _stopped_tails(attempts: list[Attempt], intervals: list[Interval]) -> None:
    """The step under way when Ctrl-C or a SIGTERM from outside stopped an attempt never completed: not
    productive time."""
    stopped = {a.index for a in attempts if a.ended == "interrupted" or (a.ended == "stopped" and not a.silent_end)}
    for iv in intervals:
        if iv.attempt in stopped and iv.bucket == "productive" and iv.why == "lost tail":
            iv.bucket, iv.why = "unexplained", "stopped (Ctrl-C, SIGINT or SIGTERM) before the step completed"


def _open_with_start(marks: list[Mark], start: float | None) -> list[Mark]:
    """The log's first line, when it comes before the first line that says anything: the job was starting."""
    said = [m.t for m in marks if m.t is not None and m.kind not in PASSIVE]
    if start is None or not said or min(said) <= start:
        return marks
    return [Mark("init_begin", 0, "", "first line", t=start, t_src="own", text="the log's first line"), *marks]


def _attempt_intervals(a: Attempt, ideal: float | None) -> list[Interval]:
    out: list[Interval] = []
    timed = [m for m in a.marks if m.t is not None and m.kind not in PASSIVE]
    state = "init"
    last_step: int | None = a.resume_step
    trained = False
    carry: tuple[str, float] | None = None  # a save / load with no timed span: its duration, from the next gap
    step_lines = 0  # step lines reached so far in this attempt (its first ones may be warm-up)
    counted_eval: Mark | None = None  # an evaluation line whose steps were counted before it
    for cur, nxt in pairwise(timed):
        state = STATE_AFTER.get(cur.kind, state)
        if cur.kind == "step" and cur.step is not None:
            last_step = cur.step if last_step is None else max(last_step, cur.step)
            trained = True
        if cur.kind == "load_end":
            state = "productive" if trained else "init"
        if cur is counted_eval and cur.step is not None:
            last_step = cur.step  # steps an evaluation line counts (nanoGPT's `step N: train loss`) ran before it
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
            steps, counted_eval = nxt.step - last_step, nxt  # an evaluation with no line of its own before
        shifted = Mark(cur.kind, cur.line, cur.file, cur.row, t=t0)
        warm = step_lines if state == "productive" and step_lines <= WARMUP_STEP_LINES and nxt.kind == "step" else 0
        out.extend(_classify(state, shifted, nxt, length, steps, ideal, a.index, warm))
    a.final_state = STATE_AFTER.get(timed[-1].kind, state) if timed else state
    a.final_carry = carry or _untimed_span(a, timed[-1]) if timed else None
    return out


def _eval_counts_steps(state: str, nxt: Mark, last_step: int | None) -> bool:
    """A timed evaluation line, with no start line before it, whose step is past the last step line: the
    steps between ran before the evaluation (nanoGPT evaluates at the top of iteration N)."""
    if nxt.kind != "eval_end" or nxt.t_src != "own" or nxt.step is None or last_step is None:
        return False
    return state == "productive" and nxt.step > last_step


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
) -> list[Interval]:
    t0, t1 = cur.t or 0.0, nxt.t or 0.0
    if state in ("productive", "post_save", "save", "init", "eval") and nxt.kind == "step":
        work = min(length, steps * ideal) if ideal else length
        rest = length - work
        lost = _lost_before_steps(state, rest, ideal)
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
        data = min(t1 - mid, steps * nxt.data_s) if nxt.data_s else 0.0
        if data > 0:
            out.append(Interval(mid, mid + data, "data_stall", attempt, why="input data"))
            mid += data
        out.append(Interval(mid, t1, "productive", attempt, steps))
        return out
    if state == "productive" and nxt.kind == "eval_end":
        # the steps the evaluation line counts past the last step line ran first, then the evaluation
        work = min(length, steps * ideal) if ideal and steps else 0.0
        evaluation = Interval(t0 + work, t1, "evaluation", attempt, why="validation with no line of its own")
        return [Interval(t0, t0 + work, "productive", attempt, steps), evaluation] if work > 0 else [evaluation]
    if state == "productive" and nxt.kind in ("job_end", "train_end"):
        return [Interval(t0, t1, "unexplained", attempt, why="after the last step: shutdown")]
    if state == "save" and nxt.kind == "eval_end":
        # mmcv's epoch end: `Saving checkpoint at N epochs`, then the validation pass, whose metrics line is
        # the next; no line between them splits the save from the pass, which is most of it (minutes of
        # inference against seconds of torch.save): evaluation, the save's own share unknown
        return [Interval(t0, t1, "evaluation", attempt, why="a save, then an evaluation with no line between")]
    if state == "productive" and nxt.kind in ("failure", "restart"):
        return [Interval(t0, t1, "productive", attempt, why="lost tail")]
    return [Interval(t0, t1, BUCKET_OF_STATE.get(state, "unexplained"), attempt)]


def _warming(line: int, rest: float, length: float, steps: int, ideal: float) -> bool:
    """An attempt's early step lines ran slow enough to be warm-up: WARMUP_FACTOR times slower than ideal
    per step, or, the first one (however many steps it covers: a log every N steps), by more than
    WARMUP_FACTOR ideal steps."""
    if rest <= 0:
        return False
    return length > WARMUP_FACTOR * max(1, steps) * ideal or (line == 1 and rest > WARMUP_FACTOR * ideal)


def _lost_before_steps(state: str, rest: float, ideal: float | None) -> tuple[str, str] | None:
    """Where the time of an interval beyond its steps at the ideal step time went, by the state before."""
    if rest <= 0:
        return None
    if state in ("post_save", "save"):
        return "checkpoint_save", "unlogged checkpoint work"
    if state == "eval":  # no line says the validation ended: until the next step's work
        return "evaluation", "validation"
    if state == "init":  # no line says training began: the first step's own time is work
        return "initialization", "setup"
    if ideal and rest > max(HANG_MIN_S, HANG_MIN_STEPS * ideal):
        return "hung", "no progress"
    return None


def _mark_redone(attempts: list[Attempt], intervals: list[Interval], ideal: float | None) -> tuple[int, bool]:
    """Each failed attempt's productive time past the next attempt's resume step is redone (or hung).
    Where the log does not name the step the next attempt resumed from, it resumed at the latest just
    before its first step line: the count (and the time) is then a lower bound (returned True)."""
    redone = 0
    bound = False
    for prev, nxt in pairwise(attempts):
        if prev.last_step is None:
            continue
        if nxt.resume_known and nxt.resume_step is not None:
            resume: int | None = nxt.resume_step
        else:
            resume = nxt.first_step - 1 if nxt.first_step else nxt.resume_step
        if resume is None or resume >= prev.last_step:
            continue
        if _new_run(prev, nxt):
            continue
        bound = bound or not nxt.resume_known
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


def _new_run(prev: Attempt, nxt: Attempt) -> bool:
    """A finished run, then a launch seen starting from step 0 with nothing loaded (a sweep's next run, a
    benchmark repeated): a new run of its own, not a rollback of the one before (no work redone)."""
    return prev.ended == "completed" and nxt.resume_known and nxt.resume_step == 0


def _time_of_step(a: Attempt, step: int) -> float | None:
    """When the attempt had completed `step` (its first step line at or past it, minus the excess)."""
    prev_t = a.training_start
    for m in a.marks:
        if m.kind == "step" and m.step is not None and m.t is not None:
            if m.step > step:
                return prev_t if prev_t is not None else m.t
            prev_t = m.t
    return prev_t


def _starts_unseen(attempts: list[Attempt]) -> bool:
    """The log starts mid-run: its first attempt's resume step is not shown (no load line, no start)."""
    return bool(attempts) and attempts[0].resume_step is None and attempts[0].first_step is not None


def _every_step_recorded(a: Attempt) -> bool:
    """Its step lines are one record per step (not a progress bar's redraws, not every N steps)."""
    steps = [m for m in a.marks if m.kind == "step" and m.step is not None]
    return bool(steps) and steps[0].row not in BAR_ROWS and _log_interval(steps) == 1


def _step_marks(attempts: list[Attempt]) -> list[Mark]:
    return [m for m in attempts[0].marks if m.kind == "step" and m.step is not None] if attempts else []


def _kept_steps(attempts: list[Attempt]) -> int | None:
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
        if i == 0 and _starts_unseen(attempts) and lo is not None and _every_step_recorded(a):
            lo -= 1
        hi = a.last_step
        for before, later in pairwise(attempts[i:]):
            if _new_run(before, later):
                break  # the attempts after belong to another run: they roll nothing of this one back
            back = later.resume_step if later.resume_step is not None else later.first_step
            if back is not None:
                hi = min(hi, back)
        kept += max(0, hi - (lo if lo is not None else hi))
    return kept


def _bounds(intervals: list[Interval], wall: tuple[float | None, float | None]) -> tuple[float | None, float | None]:
    starts = [iv.start for iv in intervals] + ([wall[0]] if wall[0] is not None else [])
    ends = [iv.end for iv in intervals] + ([wall[1]] if wall[1] is not None else [])
    return (min(starts) if starts else None, max(ends) if ends else None)


def _trailing(attempts: list[Attempt], intervals: list[Interval], end: float) -> None:
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
        bucket = BUCKET_OF_STATE.get(last.final_state, "unexplained")
        intervals.append(Interval(t0, end, "unexplained" if bucket == "productive" else bucket, last.index))


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


def _spans(marks: list[Mark], kind: str) -> list[tuple[Mark, Mark | None, float | None]]:
    """Each checkpoint save (or load): its first line, its last, and how long it blocked training. A file
    line outside a save (a backup removed after the last one) starts one only if no begin line follows."""
    out: list[tuple[Mark, Mark | None, float | None]] = []
    begin: Mark | None = None
    pending: Mark | None = None
    last: Mark | None = None
    reached: int | None = None  # the step a save with no step of its own follows
    for m in marks:
        if m.kind == "step" and m.step is not None:
            reached = m.step if reached is None else max(reached, m.step)
        if m.kind.startswith(kind) and m.step is None and reached is not None and kind == "save":
            m.step = reached
        if m.kind == f"{kind}_begin":
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
