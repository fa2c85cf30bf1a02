"""Launches in a training log: the start-up lines of each (formats/startup.py and the other init_begin rows),
a launch that never reached a step kept as an attempt of its own, a relaunch from scratch (a new run after a
run that completed or was stopped by its user; after a failure, a rollback of every step), and what the gap
between two attempts was: a restart, a queue, unexplained, or the time between two jobs."""

from __future__ import annotations

import re
from itertools import pairwise

from scope.analyzers.goodput.endings import exited
from scope.analyzers.goodput.formats import ONCE_PER_LAUNCH_ROWS
from scope.analyzers.goodput.formats.launchers import GLOG_PREFIX
from scope.analyzers.goodput.mark import Mark
from scope.analyzers.goodput.run_config import config_change
from scope.analyzers.goodput.states import FAILED_ENDS, HANG_MIN_S, PASSIVE, SAID_IT_ENDED, Attempt, Interval


def launch_lines_forward(attempts: list[Attempt]) -> list[Attempt]:
    """Lines a launch prints before its start-up line (a download, a config echo) after a silence
    longer than the hang allowance belong to that launch, not to the attempt before: that one ended at its
    last line, and the silence between is the gap between the two. Only lines after the silence move: a
    line the old process printed while it was still alive (a heartbeat every minute) stays its own."""
    for prev, nxt in pairwise(attempts):
        if not nxt.marks or nxt.marks[0].kind != "init_begin":
            continue
        cut = _after_last_silence(prev.marks)
        if cut is None:
            cut = _after_clean_end(prev.marks)
        if cut is not None:
            nxt.marks[:0], prev.marks[cut:] = prev.marks[cut:], []
    return attempts


# Lines a launch prints before its start-up line that say nothing of training: bare timestamps (a dataset
# loaded) and its configuration's echo (`epochs: 80`, Paddle3D's config dump, untimestamped).
_START_UP_ECHO = frozenset({"clock", "plan"})


def _trailing_echo(marks: list[Mark]) -> int:
    """Where the attempt's trailing lines that could be the next launch's start-up echo (_START_UP_ECHO) begin."""
    i = len(marks)
    while i > 0 and marks[i - 1].kind in _START_UP_ECHO:
        i -= 1
    return i


def _after_last_silence(marks: list[Mark]) -> int | None:
    """Where the attempt's trailing bare timestamps after its last silence past the hang allowance begin (the
    silence measured from the timestamped line before, whatever it says), or None where that run has none."""
    i = _trailing_echo(marks)
    if not any(m.t is not None and m.kind not in PASSIVE for m in marks[:i]):
        return None
    timed = [j for j, m in enumerate(marks) if m.t is not None]
    cut = None
    for a, b in pairwise(timed):
        if b >= i and (marks[b].t or 0.0) - (marks[a].t or 0.0) > HANG_MIN_S:
            cut = b
    return cut


def _after_clean_end(marks: list[Mark]) -> int | None:
    """Where the next launch's echo lines begin after an attempt that said it ended (states.SAID_IT_ENDED: its
    work finished, a planned exit, a stop): after the longest silence between its end line and its last line,
    however short (the process that ended prints nothing more than a farewell), past the ended process's own
    teardown lines. After a failure line the process dies on its own time: every line before the next
    launch's first start-up line is still its teardown, PID or not (torchtitan's `Destroying the purge
    thread.` 30 s after the watchdog's timeout, 2 s before the relaunch)."""
    i = _trailing_echo(marks)
    if i == 0 or i == len(marks) or marks[i - 1].kind not in SAID_IT_ENDED:
        return None
    timed = [j for j in range(i - 1, len(marks)) if marks[j].t is not None]
    silences = [((marks[b].t or 0.0) - (marks[a].t or 0.0), b) for a, b in pairwise(timed)]
    longest = max(silences, default=None)
    if longest is None or longest[0] <= 0:
        return None
    return _past_own_teardown(marks, longest[1])


def _past_own_teardown(marks: list[Mark], cut: int) -> int | None:
    """The ended process's own last lines stay with it: lines from a PID its lines had (torchrun's `Unable to
    shutdown process ... forcefully exiting via Signals.SIGKILL`, 30 s after its SIGINT) are its teardown,
    not the next launch's echo."""
    pids = {p for x in marks[:cut] if (p := _pid(x)) is not None}
    while cut < len(marks) and _pid(marks[cut]) in pids:
        cut += 1
    return cut if cut < len(marks) else None


# A node's torchrun that starts later than this after the first (an image pull, a slow node) fails its
# rendezvous (torch/distributed/elastic/rendezvous/dynamic_rendezvous.py: RendezvousTimeout's join timeout,
# 600 s by default): a start-up line from another process after a longer silence is another launch.
RDZV_JOIN_S = 600.0
# A once-per-launch start-up line printed twice, byte for byte past its time, with nothing between and its
# times equal or this close is one line written twice, not a launch that died at once: detectron2 prints
# every record twice where its handler is added twice (facebookresearch/detectron2#691 "Logs are printed
# twice") or its console is tee'd into log.txt, both copies written at once. Banners seconds apart are a
# crash loop (a launch that dies in default_setup before its environment dump, relaunched at once).
DUPLICATE_LINE_S = 1.0
# A line's date and time (`01/01 01:24:12`, `2025-03-01 10:00:00,000`, `08:18:59.185000`): the rest is
# what a line written twice repeats byte for byte
_TIME_TOKEN = re.compile(r"\d{1,4}[-/:]\d{1,2}(?:[-/:]\d{1,4})*(?:[.,]\d+)?")


# A launcher's own line as it starts the workers (torchrun's banner and rendezvous, DeepSpeed's runner command,
# LSF's `Started at`): a new process tree, whatever the workers print after it
LAUNCHER_START_ROWS = frozenset({"torchrun_omp_banner", "torchrun_rendezvous", "deepspeed_runner_cmd", "lsf_started"})
# A launcher's or the terminal's word that the workers are gone: a signal (Ctrl-C, SIGTERM: interrupt, stop)
# or the launcher's, the scheduler's or the shell's report of their end (formats/launchers.py: srun's `task 0:
# Exited with exit code 1`, bash's `Killed`, a pod's `Reason: OOMKilled`, Slurm's node failure); a Python
# traceback alone may be one the process survives (an optional import failing at start-up)
LAUNCHER_FAILURE_ROWS = frozenset(
    {
        "torchrun_child_failed",
        "deepspeed_sigkill",
        "paddle_launch_abort",
        "lsf_term_failure",
        "lsf_exited",
        "srun_task_exit",
        "shell_job_killed",
        "k8s_oomkilled",
        "slurm_node_failure",
    }
)
# After a traceback in start-up, a silence longer than this before the next start-up line is a relaunch: a
# process that survived its traceback (an optional import failing: `No module named 'apex'`) goes on to its
# next line within seconds (14 s to torchtitan's `Starting job`); 5 min of nothing and then a trainer's first
# line is a job started again by hand or by a retry loop (the first process died at its traceback). Shorter
# than HANG_MIN_S: a relaunch by hand comes within minutes (4 min 57 s after a ModuleNotFoundError).
SILENCE_AFTER_CRASH_S = 60.0


class Launch:
    """The start-up lines (init_begin rows) the current attempt began with, and whether it went on past them:
    the same start-up line again after that (a load, a step, a failure, an interrupt between) is the next
    launch, though this one never reached a step (a crash at start-up, a launch killed while it loaded). A
    repeat with only silence between is the same launch (one torchrun per node, a node that starts late),
    unless another process prints it after a silence no rendezvous waits out (RDZV_JOIN_S); the line from
    another rank (each prints it) that this launch has not printed yet is the same launch too."""

    def __init__(self) -> None:
        self.rows: set[str] = set()
        self.ranks: set[tuple[str, int]] = set()
        self.pids: set[str] = set()
        self.went_on = False
        self.last: Mark | None = None  # the line noted last (a once-per-launch line's duplicate follows it)
        self.workers_gone = False  # a signal or the launcher said the workers ended (LAUNCHER_FAILURE_ROWS)
        self.stepped = False  # the launch reached a step
        self.crashed = False  # a failure line (a traceback) came in this launch's start-up
        self.exited = False  # the launch's program printed its exit line (formats/hydra_template.py's `Output dir`)

    def again(self, m: Mark, last_t: float | None) -> bool:
        if m.kind == "init_begin" and self.exited:
            return True  # its program said it was over: any start-up line after is the next launch's, any rank's
        if m.kind != "init_begin" or m.row not in self.rows:
            return False
        if m.rank is not None and (m.row, m.rank) not in self.ranks:
            return False  # another rank's copy of this launch's start-up line
        if m.row in ONCE_PER_LAUNCH_ROWS:
            return self.went_on or not _printed_twice(self.last, m)
        if self.went_on:
            return True
        pid = _pid(m)
        silence = m.t - last_t if m.t is not None and last_t is not None else 0.0
        return pid is not None and bool(self.pids) and pid not in self.pids and silence > RDZV_JOIN_S

    def after_start_up_end(self, m: Mark, ended: bool, last_t: float | None = None) -> bool:
        """A start-up line after this launch ended (`ended`: it said so, or failed) in its own start-up, before
        any step, that shows a new process: a launcher's start line (LAUNCHER_START_ROWS), a PID this launch
        has not had, any start-up line once a signal or the launcher said the workers were gone, or one after
        a traceback and a silence no surviving process keeps (SILENCE_AFTER_CRASH_S, from `last_t`, the line
        before that says something). A relaunch by hand minutes later, not more of the same start-up (a
        traceback the process survived, then its own next start-up line seconds later). The same start-up
        line again is again()'s to judge (another rank's copy, a line written twice)."""
        if m.kind != "init_begin" or not ended or self.stepped or m.row in self.rows:
            return False
        pid = _pid(m)
        new_pid = pid is not None and bool(self.pids) and pid not in self.pids
        silence = m.t - last_t if m.t is not None and last_t is not None else 0.0
        silent_after_crash = self.crashed and silence > SILENCE_AFTER_CRASH_S
        return m.row in LAUNCHER_START_ROWS or new_pid or self.workers_gone or silent_after_crash

    def note(self, m: Mark) -> None:
        self.last = m
        if m.kind in ("interrupt", "stop") or m.row in LAUNCHER_FAILURE_ROWS:
            self.workers_gone = True
        if m.kind == "step":
            self.stepped = True
        if m.kind == "failure":
            self.crashed = True
        if m.kind == "exit":
            self.exited = True
        if m.kind == "init_begin":
            if m.row != "first line":
                self.rows.add(m.row)
                if m.rank is not None:
                    self.ranks.add((m.row, m.rank))
                if (pid := _pid(m)) is not None:
                    self.pids.add(pid)
        elif self.rows and m.kind not in PASSIVE and m.kind != "init_mark":
            self.went_on = True


def _printed_twice(before: Mark | None, m: Mark) -> bool:
    """The line just before is this start-up line again, the same past its date, time and logger (_message), at most
    DUPLICATE_LINE_S from it (without times: the two lines adjacent, nothing noted between): one line
    written twice (DUPLICATE_LINE_S), not a second launch."""
    if before is None or before.row != m.row or before.rank != m.rank:
        return False
    if _message(before.text) != _message(m.text):
        return False
    if before.t is None or m.t is None:
        return before.t is None and m.t is None
    return abs(m.t - before.t) <= DUPLICATE_LINE_S


def _message(text: str) -> str:
    """The line past its date, time and logger prefix (up to the first `: ` after the time): what a line
    written twice repeats byte for byte, whichever of detectron2's two handlers wrote it (`[01/01 01:00:00
    detectron2]: Rank of ...` on the console, `[01/01 01:00:00] detectron2 INFO: Rank of ...` in log.txt)."""
    rest = _TIME_TOKEN.sub("", text, count=2)
    return rest.split(": ", 1)[-1].strip()


def _pid(m: Mark) -> str | None:
    found = GLOG_PREFIX.search(m.text)
    return found.group("pid") if found else None


def background_launch(m: Mark, then: Mark | None, row_max: dict[str, int]) -> bool:
    """A start-up line mid-run after which the run's own step counter goes on past where it was, with no
    load, failure or restart between (`then`: the next such line or step): another program launched beside
    the job (an evaluation's torchrun into the same output), not a relaunch of it."""
    if m.kind != "init_begin" or then is None or then.kind != "step" or then.step is None:
        return False
    return then.row in row_max and then.step > row_max[then.row]


_DECISIVE = frozenset({"step", "load_begin", "load_end", "failure", "restart", "train_begin", "init_mark"})


def next_decisive(marks: list[Mark]) -> list[Mark | None]:
    """For each line, the next line after it that is a step or says the job went on differently (a load, a
    failure, a restart, a training start): what tells a relaunch from a program started beside the job."""
    out: list[Mark | None] = [None] * len(marks)
    nxt: Mark | None = None
    for i in range(len(marks) - 1, -1, -1):
        out[i] = nxt
        if marks[i].kind in _DECISIVE:
            nxt = marks[i]
    return out


def silent_before(m: Mark, last: Mark | None) -> bool:
    """The line comes after a silence past the hang allowance, by its own time and the line before's (a line
    that took its time from another says nothing of when it ran)."""
    if m.t is None or last is None or last.t is None or m.t_src != "own" or last.t_src not in ("own", "bar"):
        return False
    return m.t - last.t > HANG_MIN_S


def from_scratch(a: Attempt) -> bool:
    """The attempt starts its step counter again at 0 or 1 (its first line one log interval past 0) with no
    line saying it resumed (no checkpoint load, no resume line, no `Training starts at step N` past 1): a
    new run. A counter that restarts further on with no such line is a rollback (a resume the log does
    not show)."""
    if a.first_step is None or any(m.kind in ("load_begin", "load_end", "resume") for m in a.marks):
        return False
    return a.resume_step == 0 or a.first_step <= 1  # (0: its first line within one log interval of 0)


def new_run(prev: Attempt, nxt: Attempt) -> bool:
    """A launch from scratch (from_scratch) after a run that completed, or that the user stopped (Ctrl-C), or
    with another configuration than the launch before (run_config.config_change: another planned length,
    another number of steps per epoch): a new run of its own (a sweep's next run, a benchmark repeated, a run
    restarted with another setting), not a rollback. After a failure, a restart, a stop from outside
    (preemption, time limit) or a silence, starting the same configuration again from step 0 is the worst
    rollback: every step the attempt before ran is redone (and the wait before it the failure's cost, or the
    queue's; only more than IDLE_BETWEEN_JOBS_S after a stop is it time between jobs: between())."""
    return bool(_new_run_why(prev, nxt))


def _new_run_why(prev: Attempt, nxt: Attempt) -> str:
    """Why `nxt` starts a new run after `prev` (new_run), else ''."""
    if not from_scratch(nxt):
        return ""
    if change := config_change(prev, nxt):
        return change
    return f"attempt {prev.index} {prev.ended}" if prev.ended == "completed" or user_stopped(prev) else ""


def user_stopped(a: Attempt) -> bool:
    """The attempt ended interrupted by a line that says the user stopped it (Ctrl-C, SIGINT): a run left by
    choice. A loop that only stopped short of its plan (its summary printed on every way out, the traceback
    on another stream) may have crashed: starting it again from step 0 redoes its steps."""
    return a.ended == "interrupted" and any(m.kind == "interrupt" for m in a.marks)


# Lines that say a launch of the job started: a launcher's command, a framework's setup, an engine built, a
# training loop begun (the log's first line, which opens every log, says none of that)
LAUNCH_KINDS = frozenset({"init_begin", "init_mark", "train_begin"})


def launched_without_steps(attempts: list[Attempt]) -> bool:
    """No attempt reached a step, and the log shows a launch by its own start-up lines: a job that died before
    its first step (a crash in start-up, or in the evaluation before training) completed 0 steps, a count the
    log states, not an unknown; its time is initialization and how it ended (goodput 0), not a refusal. A
    training loop's end line (HF's `Training completed.`, its train_runtime summary) is evidence that steps
    ran whose lines the log does not show (logging_strategy=no): their count is unknown, not 0."""
    if any(a.first_step is not None for a in attempts):
        return False
    if any(m.kind == "train_end" for a in attempts for m in a.marks):
        return False  # its loop says it finished (HF's `Training completed`, train_runtime): steps ran unseen
    if _never_asked_to_train(attempts):
        return False
    return any(m.kind in LAUNCH_KINDS and m.row != "first line" for a in attempts for m in a.marks)


def _never_asked_to_train(attempts: list[Attempt]) -> bool:
    """Every launch printed its exit line with no failure before it and none reached a training-start line:
    programs that ran and returned without training (the lightning-hydra-template's eval.py, `Starting
    testing!` only; its train.py with train=False), not a training job that died before its first step: no
    count of steps is stated (refused where nothing else is shown, never `goodput 0%`)."""
    if not attempts or not all(exited(a) for a in attempts):
        return False
    return not any(m.kind == "train_begin" for a in attempts for m in a.marks)


def shown(attempts: list[Attempt]) -> list[Attempt]:
    """The attempts that say where they stood (a first step or a resume step): a launch that never reached a
    step nor loaded anything (a crash at start-up) is no run of its own and rolls nothing back."""
    return [a for a in attempts if a.first_step is not None or a.resume_step is not None]


def note_new_runs(attempts: list[Attempt]) -> None:
    """Each attempt that starts a new run (new_run) after the shown attempt before it says why: the
    configuration its lines change, or how the run before it ended. Decided here once: the redone work, the
    steps kept and discarded and the rollback finding read `Attempt.new_run` (so what it says is what they
    counted)."""
    for a in attempts:
        a.new_run = ""
    for prev, nxt in pairwise(shown(attempts)):
        if why := _new_run_why(prev, nxt):
            nxt.new_run = f"from step 0 with nothing resumed; {why}"


def discarded_steps(attempts: list[Attempt]) -> int:
    """Steps of a run the user stopped before it completed, left behind by a new run from scratch (new_run):
    the new run neither goes on from them nor redoes them (a run that completed discards nothing)."""
    lost = 0
    for prev, nxt in pairwise(shown(attempts)):
        if prev.last_step is not None and prev.ended != "completed" and nxt.new_run:
            lost += max(0, prev.steps_done)
    return lost


_ENDINGS = frozenset({"failure", "restart", "stop", "interrupt", "train_end", "job_end"})


# A silence longer than this after a launch whose lines say it ended by itself or was stopped (a completion, a
# planned exit, Ctrl-C, a cancel, a time limit), before a launch that resumes nothing, is time between two jobs:
# no process of the job was left, and no scheduler's requeue waits that long, so the relaunch was a person's, the
# next day. After a failure the wait, however long, is the failure's cost (failure_to_restart): the job was
# started again because it failed (a requeue held for hours, a crash loop relaunched the next day). A launch
# that fell silent with no end line may have hung until killed: that stays unexplained (between()).
IDLE_BETWEEN_JOBS_S = 8 * 3600.0
_ENDED_BY_ITSELF = frozenset({"completed", "stopped", "interrupted"})


def between(prev: Attempt, nxt: Attempt, gap: float, lowest_first: int | None = None) -> str:
    """The gap after an attempt: restarting after a failure (however long: the failure's cost), or waiting to
    be scheduled again after an attempt that ended by itself (a planned exit, a time limit's save-and-exit,
    Ctrl-C); after such an end and a silence past the hang allowance, a new run's launch from step 0 (new_run),
    or any launch from step 0 with nothing loaded more than IDLE_BETWEEN_JOBS_S later, is another job: the time
    between two jobs is neither's (two runs in one log, days apart)."""
    by_itself = prev.ended in _ENDED_BY_ITSELF or exited(prev)
    if gap > IDLE_BETWEEN_JOBS_S and by_itself and _started_afresh(nxt, lowest_first):
        return "between_jobs"  # (overnight before a launch from scratch: no restart of the job was under way)
    if exited(prev):
        # its process said it was over (its exit line, no failure line): no hang, no restart under way; the
        # time to the next launch is waiting to be launched again (queued or not yet scheduled)
        return "queued"
    said = [m for m in prev.marks if m.t is not None and m.kind not in PASSIVE]
    if said and said[-1].t_src == "filled" and said[-1].kind not in _ENDINGS and gap > HANG_MIN_S:
        # its last line, no ending, took its time from another line: when it ended is not known
        return "unexplained"
    no_end_line = prev.unknown_end or prev.silent_end or (prev.ended == "restarted" and not prev.end_evidence)
    if no_end_line and prev.last_step is not None and _started_afresh(nxt, lowest_first):
        # a launch that trained, no line saying how it ended, then a launch from scratch that resumes nothing:
        # down time (YOLOX relaunched by hand, 12 times in a day) only where the launch's last line shows it
        # at a point where a run is left (a save, an epoch's end); else it may as well have hung until killed
        # and relaunched (torchtitan's 50 min silence before a relaunch from step 1): unexplained, however long
        # the silence
        return "queued" if _left_at_a_rest(said) else "unexplained"
    if prev.unknown_end or prev.ended == "unknown":
        # silence, then a new launch: a hang killed, a node lost; or its lines stop inside its evaluation
        return "unexplained"
    if prev.ended in (*FAILED_ENDS, "membership_change"):
        return "failure_to_restart"
    return "between_jobs" if gap > HANG_MIN_S and new_run(prev, nxt) else "queued"


# what a launch's last line shows it finished: a save, an evaluation (at an epoch's end or after it)
_REST_KINDS = frozenset({"save_begin", "save_end", "save_dur", "eval_end"})


def _left_at_a_rest(said: list[Mark]) -> bool:
    """The launch's last line that says something shows it at a rest: a save or an evaluation, or its last
    step line is its epoch's last iteration (a counter within the epoch at its total)."""
    if not said:
        return False
    last = said[-1]
    if last.kind in _REST_KINDS:
        return True
    return bool(last.kind == "step" and last.epoch is not None and last.total and (last.step or 0) % last.total == 0)


def lowest_first_step(attempts: list[Attempt]) -> int | None:
    """The lowest step any launch of the job began with: where a fresh launch's counter starts."""
    return min((a.first_step for a in attempts if a.first_step is not None), default=None)


def _started_afresh(a: Attempt, lowest_first: int | None) -> bool:
    """The launch resumed nothing: its counter starts from scratch (from_scratch, or its first step line is
    the lowest any launch of the job began with: one line is too few to know the log's interval), or it
    never reached a step; and it loaded no checkpoint."""
    if any(m.kind in ("load_begin", "load_end", "resume") for m in a.marks):
        return False
    return from_scratch(a) or a.first_step is None or a.first_step == lowest_first


def gaps(attempts: list[Attempt]) -> list[Interval]:
    """The time between attempts, to the next one's first line that says something (a bare timestamp, the
    launcher stopping the old group, is still the restart), by how the one before ended (between()). Where a
    scheduler's report says how long the job waited in its queue (LSF: turnaround less run time), that part
    is `queued`: the whole gap when it was queued before the attempt before ended, and, before the first
    attempt, its wait from submission."""
    out: list[Interval] = []
    lowest_first = lowest_first_step(attempts)
    for i, nxt in enumerate(attempts):
        said = [m.t for m in nxt.marks if m.t is not None and m.kind not in PASSIVE]
        begin = min(said) if said else nxt.start
        since = _queued_since(nxt)
        prev = attempts[i - 1] if i else None
        if prev is None or prev.end is None:
            if i == 0 and since is not None and begin is not None and since < begin:
                out.append(Interval(since, begin, "queued", nxt.index, why="in the scheduler's queue (its report)"))
            continue
        if begin is None or begin <= prev.end:
            continue
        cut = max(prev.end, since) if since is not None and since < begin else begin
        if cut > prev.end:
            kind = between(prev, nxt, begin - prev.end, lowest_first)
            out.append(Interval(prev.end, cut, kind, nxt.index, why="between attempts"))
        if cut < begin:
            out.append(Interval(cut, begin, "queued", nxt.index, why="in the scheduler's queue (its report)"))
    return out


def _queued_since(a: Attempt) -> float | None:
    """When the attempt's job was submitted, where its scheduler's report says how long it waited."""
    start = next((m for m in a.marks if m.kind == "init_begin" and m.queued_s is not None), None)
    return start.t - (start.queued_s or 0.0) if start is not None and start.t is not None else None
