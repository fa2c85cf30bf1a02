"""What the live detector is fed: one rank's step sample and one rank's heartbeat."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class StepSample:
    """One rank's step (or the average of the few steps between two hook records), in seconds per step.

    `compute_s` is the rank's own work (the main thread's CPU time on CPU jobs, the compute ops of an
    operation timeline); when unknown, it is the wall time less the data wait, the host's run-queue wait,
    the collectives and checkpoint saves. `comm` is seconds per step in each process group's collectives.
    `group` is the rank's peer group (its pipeline stage): ranks are compared with their peers only."""

    rank: int
    step: int  # steps this rank has completed, this one included
    t: float  # when the step completed (epoch seconds)
    step_s: float
    steps: int = 1  # steps this sample covers (the hook writes at most twice a second)
    data_s: float = 0.0
    host_s: float = 0.0  # runnable but not running (the host's other processes took the core)
    compute_s: float | None = None
    comm: dict[str, float] = field(default_factory=dict)
    ops: dict[str, str] = field(default_factory=dict)  # per group: its costliest op ("all_reduce 2.1 MB, up to #312")
    ckpt_s: float = 0.0
    group: int | None = None

    def own_compute(self) -> float:
        if self.compute_s is not None:
            return self.compute_s
        return max(0.0, self.step_s - self.data_s - self.host_s - sum(self.comm.values()) - self.ckpt_s)


@dataclass
class Heartbeat:
    """A rank's heartbeat as the hook wrote it: alive at `written`, at `step` since `step_t`."""

    rank: int
    written: float  # epoch seconds the hook wrote it
    step: int
    step_t: float | None  # when that step completed
    state: str = "running"
    host: str = ""
    where: str | None = None  # the main thread's innermost frame while stalled ("file:function")
    coll: dict[str, Any] | None = None  # {"group": name, "seq": n, "op": name}: the last collective entered
    saving_since: float | None = None  # a checkpoint save in progress since then (epoch seconds)
    saved_at: float | None = None  # the last save ended then: progress, as a step is

    @property
    def running(self) -> bool:
        return self.state == "running"
