"""A gdb backtrace that is a crash's report, not a stuck process's: gdb's own notice above it names a fault's or an
abort's signal (native_libraries.GDB_SIGNAL_NOTICE), or its frame 0 is one only a process ending on a signal shows
(knowledge/native_libraries.CRASH_FRAMES: a NULL program counter, the abort path). Such a backtrace is read as
the signal it shows, with the library its faulting frame runs in (readers/nccl.py's
faulting_frame: NCCL, its net plugin, another library), instead of as a place the process waits.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from scope.analyzers.diagnose.knowledge import signals
from scope.analyzers.diagnose.knowledge.native_libraries import GDB_SIGNAL_NOTICE, crash_frame

_FRAME_LINE = re.compile(r"^#(\d+)\s")
# frames of one backtrace read at most (a core dump's main thread rarely passes 64 frames above its fault)
_MAX_FRAMES = 64
# lines between gdb's prompt and frame 0 (a thread header, a 'warning:' of its own), and between its signal
# notice and the prompt (the notice's frame-0 echo, a 'warning:' about a missing source file)
_PROMPT_TO_FRAME0 = 8
_NOTICE_TO_PROMPT = 8


class GdbCrash(NamedTuple):
    line: int  # 0-based index of the frame-0 line
    signum: int
    signal: str
    frames: list[str]  # gdb's frame lines, innermost first, from the faulting one


def gdb_crash(lines: list[str], first_line: int) -> GdbCrash | None:
    """The crash a gdb backtrace starting at 1-based `first_line` (its prompt) reports: the signal gdb's notice above
    the prompt names, else the one its first frame 0 shows; its frames are those of that first thread (gdb numbers
    each thread's from #0)."""
    near = range(first_line - 1, min(len(lines), first_line + _PROMPT_TO_FRAME0))
    start = next((i for i in near if lines[i].startswith("#0 ")), None)
    if start is None:
        return None
    frames = _first_thread(lines, start)
    notice = _signal_notice(lines, first_line)
    if notice is not None:
        return GdbCrash(start, notice.number, notice.name, frames)
    row = crash_frame(lines[start])
    if row is None:
        return None
    return GdbCrash(start, row.signum, row.signal, frames[1:] if row.caller_faulted and len(frames) > 1 else frames)


def _first_thread(lines: list[str], start: int) -> list[str]:
    frames: list[str] = []
    for line in lines[start : start + 4 * _MAX_FRAMES]:
        m = _FRAME_LINE.match(line)
        if m is None:
            continue  # a long frame's arguments continued on the next line
        if frames and m.group(1) == "0":
            break  # the next thread's backtrace
        frames.append(line.strip())
    return frames


def _signal_notice(lines: list[str], first_line: int) -> signals.SignalMeaning | None:
    """The fault or abort gdb said stopped the process, in the lines just above its prompt."""
    for line in lines[max(0, first_line - 1 - _NOTICE_TO_PROMPT) : first_line - 1]:
        m = GDB_SIGNAL_NOTICE.match(line.strip())
        if m:
            return signals.meaning(signal_name=m.group(1))
    return None
