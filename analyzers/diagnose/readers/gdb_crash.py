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
from scope.analyzers.diagnose.knowledge.native_libraries import (
    GDB_CURRENT_THREAD,
    GDB_SIGNAL_NOTICE,
    GDB_THREAD_HEADER,
    crash_frame,
)

_FRAME_LINE = re.compile(r"^#(\d+)\s")
# frames of one backtrace read at most (a core dump's main thread rarely passes 64 frames above its fault)
_MAX_FRAMES = 64
# threads of a 'thread apply all bt' read at most
_MAX_THREADS = 64
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
    the prompt names, else the one a thread's frame 0 shows. Its frames are those of the thread that took the signal
    (gdb numbers each thread's from #0; 'thread apply all bt' lists thread 1 last): the thread the notice or a core
    file's 'Current thread is N' names, else the one whose frame 0 only a crash shows, else the first listed."""
    near = range(first_line - 1, min(len(lines), first_line + _PROMPT_TO_FRAME0))
    start = next((i for i in near if lines[i].startswith("#0 ")), None)
    if start is None:
        return None
    threads = _threads(lines, start)
    notice, named = _signal_notice(lines, first_line)
    chosen = next((t for t in threads if named is not None and t.number == named), None)
    if chosen is None:
        chosen = next((t for t in threads if crash_frame(lines[t.start]) is not None), threads[0])
    if notice is not None:
        return GdbCrash(chosen.start, notice.number, notice.name, chosen.frames)
    row = crash_frame(lines[chosen.start])
    if row is None:
        return None
    frames = chosen.frames
    return GdbCrash(
        chosen.start, row.signum, row.signal, frames[1:] if row.caller_faulted and len(frames) > 1 else frames
    )


class _Thread(NamedTuple):
    number: int | None  # the number gdb's 'Thread N (...)' header gives it (None: a plain 'bt', no header)
    start: int  # 0-based index of its frame-0 line
    frames: list[str]


def _threads(lines: list[str], start: int) -> list[_Thread]:
    """Each thread's backtrace from the first frame 0 on, as 'bt' or 'thread apply all bt' lists them."""
    threads: list[_Thread] = []
    frames: list[str] = []
    first = start
    for i in range(start, min(len(lines), start + _MAX_THREADS * 2 * _MAX_FRAMES)):
        m = _FRAME_LINE.match(lines[i])
        if m is None:
            continue  # a long frame's arguments continued on the next line, a thread's header, a blank line
        if frames and m.group(1) == "0":
            threads.append(_Thread(_header(lines, first), first, frames))
            if len(threads) >= _MAX_THREADS:
                return threads
            frames, first = [], i
        if len(frames) < _MAX_FRAMES:
            frames.append(lines[i].strip())
    threads.append(_Thread(_header(lines, first), first, frames))
    return threads


def _header(lines: list[str], start: int) -> int | None:
    """The thread number of gdb's 'Thread N (...)' header just above a frame 0."""
    for line in lines[max(0, start - 3) : start]:
        m = GDB_THREAD_HEADER.match(line.strip())
        if m:
            return int(m.group(1))
    return None


def _signal_notice(lines: list[str], first_line: int) -> tuple[signals.SignalMeaning | None, int | None]:
    """The fault or abort gdb said stopped the process, in the lines just above its prompt, and the thread it names
    (the notice's own 'Thread N', or a core file's '[Current thread is N ...]')."""
    meaning, thread = None, None
    for line in lines[max(0, first_line - 1 - _NOTICE_TO_PROMPT) : first_line - 1]:
        text = line.strip()
        m = GDB_SIGNAL_NOTICE.match(text)
        if m:
            meaning = signals.meaning(signal_name=m.group(2))
            thread = int(m.group(1)) if m.group(1) else thread
            continue
        current = GDB_CURRENT_THREAD.match(text)
        if current:
            thread = int(current.group(1))
    return meaning, thread
