"""One thing a log line says about training progress (a step, a clock, an evaluation's end, a save), with
where it was said: what the format rows and the structural reader produce and the timeline consumes.

Its own module so that the readers (parse.py, line_marks.py, structural.py, clock.py, hf_trainer.py) share it without
importing one another.
"""

from __future__ import annotations

from dataclasses import dataclass


# slots: a log of progress-bar frames holds one mark per frame kept (parse._thin_frame): without a __dict__
# each is a third of the size (benchmarks/goodput_bars.py)
@dataclass(slots=True)
class Mark:
    kind: str
    line: int  # 1-based line number in its file
    file: str
    row: str  # the LineFormat that matched
    step: int | None = None
    total: int | None = None
    epoch: int | None = None
    step_s: float | None = None  # seconds per step, from an elapsed-time field
    dur_s: float | None = None  # what the line says an operation took
    t: float | None = None  # epoch seconds
    t_src: str = ""  # own | bar | derived | filled
    rel: float | None = None  # a progress bar's elapsed seconds (before alignment)
    text: str = ""
    data_s: float | None = None  # seconds per step waiting for input data (a timer printed after the step)
    # of data_s, the part per step that is a stall (prepare.data_stalls: a data-wait field's wait above its
    # steady level; a separate data timer's whole wait)
    data_stall_s: float | None = None
    rank: int | None = None  # the rank a line's prefix names (torchrun's [rankN]:, Ray's (..., rank=N, ...))
    world: int | None = None  # the worker group's world size (ranks) a launcher line gives
    nodes: int | None = None  # the number of nodes (agents) in the group a launcher line gives
    epoch_f: float | None = None  # a fractional epoch (HF Trainer's logs dict): the step is worked out from it
    rate: float | None = None  # steps per second a summary line gives (HF Trainer's train_steps_per_second)
    sample_rate: float | None = None  # samples per second a throughput line gives (DeepSpeed's ThroughputTimer)
    batch: int | None = None  # the samples one step consumes (a config dump's train_batch_size)
    # the optimizer step a line names beside its iteration counter (litgpt's `iter 1760 | step 220`): the
    # iterations are micro-batches of gradient accumulation, the steps what the job completes
    opt_step: int | None = None
    # how long the job waited in the scheduler's queue before this start line (LSF's report: turnaround less
    # run time)
    queued_s: float | None = None
    # the unit the printed step was rounded to (LeRobot's `step:2K`: 1000): rounded_steps.py places it
    step_unit: int | None = None
    # the steps of one epoch a line states beside a counter that restarts every epoch (PaddleGAN's `Epoch: 3/100,
    # iter: 10/989`): its step is made global from it, and it wraps at it (structural._lagging_epochs)
    per_epoch: int | None = None
    # the epochs the run has, stated beside that epoch (`Epoch: 3/100`): with per_epoch, the run's planned steps
    epochs: int | None = None
    # what a pass changed in the line's reading, and why, for the report to say (a timer's save cut short)
    note: str = ""

    def where(self) -> str:
        return f"{self.file}:{self.line}"
