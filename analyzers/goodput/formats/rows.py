"""The row type of the line formats and the kinds of marks a row gives."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

NUM = r"[\d.]+(?:[eE][+-]?\d+)?"  # a number as the frameworks print it
# A number in human format: nanotron's human_format (src/nanotron/logging.py) prints 3 significant digits and a
# thousands suffix (`4.71K`, `1.02M`; G, later B, for 1e9): line_marks._num reads the suffix as x1000 each
HUMAN_NUM = NUM + r"[KMGBTPE]?"

# What a line says about the job's time. The state a mark leaves the job in is in timeline.py.
MARK_KINDS = (
    "step",  # training progress: a step (iteration, update) number reached
    "step_time",  # seconds per step for the step mark just before (a postfix printed after it)
    "data_dur",  # seconds per step spent waiting for input data, for the step mark just before (a timer)
    "train_begin",  # initialization is over, the training loop starts
    "train_end",  # the training loop finished
    "init_begin",  # a process (or worker group) starts: an attempt's initialization begins
    "init_mark",  # still initializing (a setup phase reached)
    "init_dur",  # initialization took dur_s, ending at this line
    "save_begin",
    "save_progress",  # a file of a checkpoint written (a save in progress, or one beginning)
    "save_end",
    "save_dur",  # the last save took dur_ms / dur_s (a timer printed after it)
    "load_begin",
    "load_progress",
    "load_end",  # a checkpoint was loaded (its `step` is the step the attempt resumes from)
    "load_dur",
    "resume",  # the attempt continues from `step` (no load line of its own)
    "eval_begin",
    "eval_end",
    "epoch_end",  # an epoch's training steps are done: an evaluation that follows begins here
    "interrupt",  # the user stopped the job (Ctrl-C, SIGINT): the attempt ends, not by a failure
    "stop",  # the job was stopped from outside (SIGTERM to the launcher: a cancel, a time limit, a preemption)
    "failure",  # a process failed (the attempt ends here unless progress follows without a restart)
    "restart",  # the launcher or scheduler restarts the job (the gap until the next attempt begins)
    "plan",  # the run's planned length: `epoch` epochs or `total` steps (reaching it is a completed run)
    "batch_size",  # the samples one step consumes (`batch`): a rate in samples/s (`sample_rate`) is then a step time
    "world",  # the worker group's size: `world` ranks, `nodes` nodes (a change between attempts: membership)
    "job_end",
    # the program's own line on every way out (a `finally` block): its process is over; how it ended only the
    # lines before say (a traceback: failed; Ctrl-C: interrupted; none: unknown, never `completed`)
    "exit",
    "sched_time",  # a scheduler's report of the job's run or turnaround time (`dur_s`): its queue wait
)


@dataclass(frozen=True)
class LineFormat:
    name: str
    framework: str
    kinds: tuple[str, ...]
    pattern: str
    needle: str
    source: str
    # The `elapsed` group is this bar's clock (only the training bar: evaluation bars restart theirs).
    clock: bool = False
    # The step time is the last step's own (nanoGPT), not the mean over the steps since the line before.
    last_step_time: bool = False
    # What the step timer leaves out, so that the next line's time bounds a save or an evaluation before it:
    # "saves" (Megatron stops its interval timer around a save and an evaluation), "epoch" (mmcv's and
    # MMEngine's IterTimerHook restarts only at an epoch's start: what ran after the last iteration of an
    # epoch is outside the next epoch's times; a save or an evaluation after an iteration mid-epoch, as
    # IterBasedRunner runs them, falls inside the next line's time). "" where nothing is known: no bound.
    timer_excludes: str = ""
    # The `step` counts within an epoch of `total` steps whose `epoch` counts from this number (mmcv's
    # `Epoch [2][50/930]` from 1): the job's step is the epochs before it times `total`, plus `step`.
    # (an epoch stated as `N/M`, the `of` group, counts from 1 whatever this says)
    epoch_from: int | None = None
    # The same bare bar is also drawn for evaluation and prediction (HF Trainer's): the training bar is the
    # one that runs longest, the others' runs are evaluation passes.
    shared_bar: bool = False
    # A restart that changes the worker group's membership (a node joined), not a failure.
    membership: bool = False
    # Each line a record the trainer appends (a JSON-lines log): two writers (ranks) may interleave their
    # records of the same steps; one record per step is read, and the `elapsed` clock restarts with a launch.
    records: bool = False
    # The line has no step number: one line per optimizer step, the steps counted in order from 1.
    counted: bool = False
    # A start-up line one process prints once per launch (not one per rank or node): the line again is the
    # next launch, whatever came between (a launch that died in start-up, silent, then a relaunch).
    once_per_launch: bool = False
    # The line is printed at an epoch's end, after its last iteration (PaddleDetection's save in on_epoch_end):
    # the iterations between the epoch's last step line and it ran before it.
    at_epoch_end: bool = False
    # The step number counts the steps done before the one the line reports (Lightning's trainer.global_step,
    # logged inside the step before the optimizer advances it): the line for `global_step: 0` ends step 1.
    step_from_zero: bool = False
    # The step time field is the run's cumulative training time (modded-nanoGPT's `train_time`: a timer stopped
    # around validation and checkpoint saves), not a step's own time nor a wall clock: each step's time is its
    # growth (training_clock.py), and the span it adds up to is no wall span (the report's wall is a lower bound).
    training_clock: bool = False
    regex: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "regex", re.compile(self.pattern))
        unknown = set(self.kinds) - set(MARK_KINDS)
        if unknown:
            raise ValueError(f"{self.name}: unknown mark kinds {sorted(unknown)}")
