"""One row of knowledge/stages.py: a line an emitting program prints when it reaches a stage of the job."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Marker:
    stage: str
    emitter: str
    pattern: str
    source: str
    # The line reports its stage done (set-up finished, training finished, an evaluation's result): a log
    # that ends on it stopped between stages, which an excerpt of a healthy run does too.
    ends: bool = False
    stops: bool = True  # a log that ends on the line, in a set-up stage, is stuck there
    comment_ok: bool = True  # may match a line starting with '#' (nccl-tests' banner has 'step: 2(factor)')
    # The line alone says the run is stuck when nothing follows it (a retry loop): no other line of the log is
    # needed to tell it from a quoted snippet of a healthy run.
    alone: bool = False
    # The line is a program's last before a call that never returned: a log of this one line is a stop too
    # (a retry loop's line is not: one retry is normal).
    one_line: bool = False
    # What a stop on this line means beyond its stage's known causes (said first in the finding's remedy).
    why: str = ""
