"""A gdb backtrace that is a crash's report, not a stuck process's: its frame 0 is one only a process ending on a
signal shows (knowledge/native_libraries.CRASH_FRAMES: a NULL program counter, the abort path). Such a
backtrace is read as the signal it shows, with the library its faulting frame runs in (readers/nccl.py's
faulting_frame: NCCL, its net plugin, another library), instead of as a place the process waits.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from scope.analyzers.diagnose.knowledge.native_libraries import CrashFrame, crash_frame

_FRAME_LINE = re.compile(r"^#(\d+)\s")
# frames of one backtrace read at most (a core dump's main thread rarely passes 64 frames above its fault)
_MAX_FRAMES = 64
# lines between gdb's prompt and frame 0 (a thread header, a 'warning:' of its own)
_PROMPT_TO_FRAME0 = 8


class GdbCrash(NamedTuple):
    line: int  # 0-based index of the frame-0 line
    row: CrashFrame
    frames: list[str]  # gdb's frame lines, innermost first, from the faulting one


def gdb_crash(lines: list[str], first_line: int) -> GdbCrash | None:
    """The crash a gdb backtrace starting at 1-based `first_line` (its prompt) reports, if its first frame 0 is a
    crash frame; its frames are those of that first thread (gdb numbers each thread's from #0)."""
    near = range(first_line - 1, min(len(lines), first_line + _PROMPT_TO_FRAME0))
    start = next((i for i in near if lines[i].startswith("#0 ")), None)
    if start is None:
        return None
    row = crash_frame(lines[start])
    if row is None:
        return None
    frames: list[str] = []
    for line in lines[start : start + 4 * _MAX_FRAMES]:
        m = _FRAME_LINE.match(line)
        if m is None:
            continue  # a long frame's arguments continued on the next line
        if frames and m.group(1) == "0":
            break  # the next thread's backtrace
        frames.append(line.strip())
    return GdbCrash(start, row, frames[1:] if row.caller_faulted and len(frames) > 1 else frames)
