"""A collective timeout explained by what the late rank printed last (knowledge/late_work.py).

Read only in a log that holds a timeout: the work line nearest the first timeout (before it, or on the
lines right after it: a progress bar shares the console with the watchdog's line) names the cause.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from scope.analyzers.diagnose.knowledge.late_work import LATE_WORK, LateWork
from scope.analyzers.diagnose.knowledge.line_shapes import TIMEOUT_LIMIT

_TIMEOUT = re.compile(r"Watchdog caught collective operation timeout|Timeout\(ms\)=\d+|timed out|Timed out")
# A progress bar's elapsed time: '[29:55<4:48:08' or '[1:02:03<'
_ELAPSED = re.compile(r"\[(?:(\d+):)?(\d+):(\d\d)<")
AFTER_LINES = 400  # the busy rank's progress bar goes on after the others timed out
BEFORE_LINES = 400
WINDOW_BYTES = 65_536  # around the first timeout line: the lines read either side


@dataclass(frozen=True)
class Busy:
    work: LateWork
    line: int
    text: str
    elapsed_s: int | None  # the work's own elapsed time when its progress bar shows it
    taken_down: bool = False  # c10d's error handling ended the waiting ranks (its take-down line is in the log)
    limit: str = ""  # the timeout in the timeout line's own words ('Timeout(ms)=1200000'), where it states one


# ProcessGroupNCCL prints this when NCCL_ASYNC_ERROR_HANDLING / NCCL_BLOCKING_WAIT (TORCH_NCCL_* from torch 2.2)
# make a failed or timed-out collective fatal (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp).
TAKE_DOWN = "taking the entire process down"


def busy_work(text: str, anchor: re.Pattern[str] = _TIMEOUT) -> Busy | None:
    """The work line nearest before the first timeout line (the same line's text before the timeout counts),
    else the first within AFTER_LINES after it. Only a window of the text around the timeout is split.
    `anchor` is what marks the timeout: its message, or a cut stack's frame inside a collective."""
    first = anchor.search(text)
    if first is None:
        return None
    lo = text.rfind("\n", 0, max(0, first.start() - WINDOW_BYTES)) + 1
    hi = text.find("\n", first.start() + WINDOW_BYTES)
    window = text[lo : len(text) if hi < 0 else hi]
    at = first.start() - lo
    lines = window.split("\n")
    t_line = window.count("\n", 0, at)
    cut = at - (window.rfind("\n", 0, at) + 1)
    base = text.count("\n", 0, lo)
    before = range(t_line, max(-1, t_line - BEFORE_LINES), -1)
    after = range(t_line + 1, min(len(lines), t_line + AFTER_LINES + 1))
    for i in (*before, *after):
        seg = lines[i][:cut] if i == t_line else lines[i]
        work = next((w for w in LATE_WORK if w.pattern.search(seg)), None)
        if work is not None:
            m = _ELAPSED.search(seg)
            elapsed = int(m.group(1) or 0) * 3600 + int(m.group(2)) * 60 + int(m.group(3)) if m else None
            shown = seg.split("Traceback (most recent")[0]  # a bar and the next line share a console line
            return Busy(work, base + i + 1, shown.strip()[:160], elapsed, TAKE_DOWN in text, _limit(lines, t_line))
    return None


def _limit(lines: list[str], t_line: int) -> str:
    """The limit as the timeout line states it (or the next lines: the store's socket line follows its warning)."""
    m = next((m for line in lines[t_line : t_line + 3] if (m := TIMEOUT_LIMIT.search(line))), None)
    return m.group(0) if m else ""
