"""The goodput timeline's vocabulary: the buckets wall time goes to, the state each mark leaves the job in,
and the records the timeline is built of (an attempt, an interval of wall time, the whole accounting)."""

from __future__ import annotations

from dataclasses import dataclass, field

from scope.analyzers.goodput.mark import Mark

BUCKETS = (
    "productive",
    "warmup",
    "training_unseen",
    "initialization",
    "checkpoint_save",
    "checkpoint_load",
    "evaluation",
    "redone",
    "failure_to_restart",
    "queued",
    "between_jobs",
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
    "exit": "done",
}
BUCKET_OF_STATE = {
    "init": "initialization",
    "productive": "productive",
    "save": "checkpoint_save",
    "post_save": "checkpoint_save",
    "load": "checkpoint_load",
    "eval": "evaluation",
    "eval_save": "evaluation",
    "failed": "failure_to_restart",
    "done": "unexplained",
}
# No progress for this long (and this many ideal steps) while the job runs is a hang, not a slow step:
# long enough that a slow data shard or a Python GC pause never counts, short against the usual
# collective timeouts (NCCL / gloo defaults of 10-30 min) a real hang runs into.
HANG_MIN_S = 300.0
HANG_MIN_STEPS = 20.0
# Marks that only carry information for the marks around them (no state of their own).
PASSIVE = frozenset(
    {"clock", "step_time", "data_dur", "save_dur", "load_dur", "init_dur", "resume", "world", "plan", "sched_time"}
)
# Lines that say the attempt's process is over by its own account: its work finished (training, a planned
# exit, PaddleVideo's test launches), the user's Ctrl-C, a stop from outside
SAID_IT_ENDED = frozenset({"train_end", "job_end", "interrupt", "stop", "exit"})
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
    new_run: str = ""  # why this attempt starts a new run, not a rollback of the run before (launches.new_run)
    exit_codes: dict[int, int | None] = field(default_factory=dict)  # rank -> exit code (negative: signal)
    signals: dict[int, str] = field(default_factory=dict)  # rank -> the signal that ended it
    # ranks that failed (not stopped by the launcher), the first to fail first
    failed_ranks: list[int] = field(default_factory=list)
    planned_steps: int | None = None  # the run's planned last step, where the log states it and it was not reached
    silent_end: bool = False  # the log goes silent, then a new process starts: no line says how this one ended
    # silent past the hang allowance, then a start-up line: how it ended is not known (a hang killed, a node
    # lost, a preemption); it counts as a restart, and the gap after it is unexplained
    unknown_end: bool = False
    # its process printed its own exit line (a `finally` block's) with no failure, Ctrl-C or stop line before
    # it: over by itself (no hang, no node lost), ended `unknown` (it returned, or was stopped without a traceback)
    exited: bool = False
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
            "new_run": self.new_run,
            "failed_ranks": self.failed_ranks,
            "exit_codes": {str(r): c for r, c in sorted(self.exit_codes.items())},
            "signals": {str(r): s for r, s in sorted(self.signals.items())},
            "end_state": end_state(self),
            "planned_steps": self.planned_steps,
            "exited": self.exited,
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
    # a log whose lines count iterations (micro-batches) beside optimizer steps: the iterations it shows
    # (steps_completed then counts the optimizer steps)
    iterations_completed: int | None = None
    # steps of a run that did not complete, left behind by a relaunch from scratch (a new run: not redone)
    steps_discarded: int = 0
