"""A log that ends inside a Python traceback, its exception line cut away: a process raised, the reason is lost.

Python prints 'Traceback (most recent call last):', the frames, then the exception line; a pasted console or a
log collected as an excerpt often stops among the frames. The frames still say that a process raised and where
(its innermost frame shown), which is a crash, never a healthy log. A traceback cut inside a collective or the
rendezvous is read by readers/cut_traceback.py and reasoning/rendezvous_cut.py (a wait, not a raise) first.
An error line before the traceback that names a kind (axolotl-ai-cloud/axolotl#2684: the store's 'timed out after
1800000ms', then the waiting rank's traceback cut) is the better reading: the cut one stands where the log says no
more than that a process raised. The same cut at a launcher's report is knowledge/launcher_cut.py. Where its frames
say what the process was doing (a checkpoint save, file I/O, data loading: reasoning/cut_activity.py), the kind and
the checks are that activity's.
"""

from __future__ import annotations

import re

from scope.analyzers.diagnose.knowledge.framework_config import CHECK_REMEDY, CHECK_WORDS
from scope.analyzers.diagnose.knowledge.wait_places import (
    LAUNCHER_WAIT_CALL,
    LAUNCHER_WAIT_PLACES,
    STDLIB_WAIT_FILE,
    WaitPlace,
    wait_place,
)
from scope.analyzers.diagnose.model import APPLICATION, STALL, Anomaly
from scope.analyzers.diagnose.reasoning import cut_activity
from scope.analyzers.diagnose.reasoning.guess import first_error
from scope.analyzers.diagnose.reasoning.startup import PROGRESS

_HEADER = "Traceback (most recent call last):"
# A frame line, under any collector's prefix ('ML-01: ', '[rank0]: ', a timestamp and a pid)
_FRAME = re.compile(r'File "(?P<file>[^"]+)", line \d+, in (?P<func>[\w<>.]+)\s*$')
# The excerpt's own cut marker ('[... cut ...]', '...', '<truncated>') after the frames
_CUT_MARK = re.compile(r"(?:\[?\.\.\.[^\]]*\]?|<truncated>|\[cut\])\s*$", re.I)
# An exception line ('RuntimeError: ...', 'torch.distributed.DistBackendError', 'KeyboardInterrupt'): the traceback
# is whole, even where it follows a frame that has no source line (File "<string>")
# ('ray.exceptions.RayTaskError(DistBackendError): ...' names the remote one in brackets)
# Right under a frame with no source line, only a name that reads as an exception's tells it from a source line
# whose indent markdown lost; after a source line any unindented line ends the frames (StopIteration,
# torch._dynamo.exc.BackendCompilerFailed, triton's OutOfResources name no Error).
_EXCEPTION = re.compile(
    r"[\w.]*(?:Error|Exception|Interrupt|Exit|Warning|Failure|Failed|Iteration|Unsupported|OutOfResources)\w*"
    r"(?:\([\w.]*\))?(?::|\s*$)"
)
# The innermost frame's source line as the message it raises ('"Pipe currently only supports splitting ..."',
# 'raise ValueError("... must be divisible by ...")', a message split over lines): with a configuration check's words
# (framework_config.CHECK_WORDS) the cut traceback is the framework refusing its settings, and the message is quoted.
_RAISED_MESSAGE = re.compile(r"""^\s*(?:raise [\w.]+\(\s*)?[frb]?(?P<q>["'])(?P<message>.{8,}?)(?:(?P=q)|$)""")
# a launcher's own notice of the stop between the last output and its traceback ('^C', torchrun's 'Received
# Signals.SIGINT death signal, shutting down workers')
_STOP_NOTICE = re.compile(r"^\^C\s*$|death signal|closing signal")
REMEDY = (
    "The log is cut inside the traceback, before its exception line: read that line in the whole log (the "
    "rank's own stderr, the launcher's output, the job's log file), or rerun to see it. The innermost frame shown "
    "is where the process raised, or the call that led to it."
)


def _frames_to_the_end(lines: list[str], col: int) -> list[re.Match[str]] | None:
    """The frames of a traceback's lines (its header at column `col`, after any prefix) when they run to the end:
    frames, the lines indented under them (source lines, carets, 'Previous line repeated'), blanks, and an
    unindented source line right under a frame (markdown loses the indent); None when an exception line or other
    output follows."""
    frames: list[re.Match[str]] = []
    after_frame = False
    for line in lines:
        m = _FRAME.search(line)
        if m:
            frames.append(m)
            after_frame = True
            continue
        own = line[col:]
        if not own.strip():
            continue
        if own[:1].isspace():
            after_frame = False  # the frame's source line (or a caret under it): an unindented line next ends it
            continue
        if not after_frame or _EXCEPTION.match(own):
            return None  # an exception line or other output after the frames: the traceback is whole
        after_frame = False  # the frame's source line, its indent lost
    return frames


def _last_traceback(text: str) -> tuple[int, list[str], int] | None:
    """(offset, lines after its header, the header's column) of the log's last traceback. A paste that begins
    among a traceback's frames has no header: its first frame stands for it where nothing but blank lines and
    excerpt markers comes before it (the poster's selection started inside the traceback)."""
    at = text.rfind(_HEADER)
    if at >= 0:
        return at, text[at:].splitlines()[1:], at - (text.rfind("\n", 0, at) + 1)
    lines = text.splitlines()
    for i, line in enumerate(lines):
        first = _FRAME.search(line)
        if first is not None:
            start = sum(len(ln) + 1 for ln in lines[:i])
            return start, lines[i:], len(line[: first.start()].rstrip())
        if line.strip() and not _CUT_MARK.search(line):
            return None  # output before the frames: a traceback prints its header there
    return None


def cut_in_traceback(text: str, display: str) -> Anomaly | None:
    """A crash for a log whose last traceback runs to the log's end with no exception line after its frames."""
    found = _last_traceback(text)
    if found is None:
        return None
    at, lines, col = found
    while lines and (not lines[-1].strip() or _CUT_MARK.search(lines[-1])):
        lines.pop()  # the excerpt's own cut marker and trailing blanks
    frames = _frames_to_the_end(lines, col)
    if not frames:
        return None
    said = first_error(text, display)
    if said is not None and said.kind != "crash":
        return None  # a line before it names the failure (a timeout, an OOM, NCCL's error): that reading says more
    last = frames[-1]
    count = f"{len(frames)} frame" + ("s" if len(frames) > 1 else "")
    where = f"{last.group('func')} ({last.group('file').rsplit('/', 1)[-1]})"
    line = text.count("\n", 0, at) + 1
    source = _source_line(lines, last.string)
    check = _check_raised(source)
    if check is not None:
        return _refused(display, line, where, last.group("func"), check)
    waiting = _launcher_waiting(frames, source, text[:at])
    if waiting is not None:
        return _waiting(display, line, waiting)
    found_doing = cut_activity.doing(cut_activity.frames_of(lines))
    if found_doing is not None:  # the frames say what the process was doing: its kind and checks
        return cut_activity.cut_while(found_doing, display, line, count)
    return Anomaly(
        code="traceback_cut_before_exception",
        kind="crash",
        level=APPLICATION,
        message=(
            f"The log ends inside a Python traceback ({count}, innermost shown: {where}) with its "
            "exception line cut away: a process raised there, and the error that names why is not in the log"
        ),
        file=display,
        line=text.count("\n", 0, at) + 1,
        severity="critical",
        details={"confidence": "low", "remedy": REMEDY, "frame": where},
    )


def _source_line(lines: list[str], last_frame: str) -> str:
    """The source line under the traceback's innermost frame ('' where the log ends on the frame)."""
    after = lines[len(lines) - lines[::-1].index(last_frame) :] if last_frame in lines else []
    return next((ln for ln in after if ln.strip()), "")


def _check_raised(source: str) -> str | None:
    """The message the innermost frame's source line raises, where it reads as a configuration check."""
    m = _RAISED_MESSAGE.match(source)
    return m.group("message").strip() if m and CHECK_WORDS.search(m.group("message")) else None


def _refused(display: str, line: int, where: str, func: str, message: str) -> Anomaly:
    return Anomaly(
        code="traceback_cut_at_check",
        kind="config_error",
        level=APPLICATION,
        message=(
            f"The log ends inside a Python traceback whose innermost frame, {where}, raises '{message}': the "
            "framework refused its settings (the exception line itself is cut away)"
        ),
        file=display,
        line=line,
        severity="critical",
        details={"confidence": "low", "remedy": CHECK_REMEDY.format(func=func, message=message), "frame": where},
    )


def _launcher_waiting(frames: list[re.Match[str]], source: str, before: str) -> WaitPlace | None:
    """The launcher's wait for its workers that the cut traceback stands in (the traceback Ctrl-C prints on a job
    that stopped progressing): the launcher's frame is the innermost one, its source line the wait call, or only the
    standard library's wait frames (subprocess, multiprocessing.connection, selectors) are inside it. None where the
    innermost line raises, where the launcher's frame is only a caller (a worker's failure raised from inside it),
    or where the log's last line before the traceback is training progress (Ctrl-C on a run still stepping)."""
    if source.lstrip().startswith("raise"):
        return None
    innermost_first = [(m.group("func"), m.group("file"), 0) for m in reversed(frames)]
    inside = 0
    while inside < len(innermost_first) - 1 and STDLIB_WAIT_FILE.search(innermost_first[inside][1]):
        inside += 1
    found = wait_place(innermost_first[inside : inside + 1], LAUNCHER_WAIT_PLACES)
    if found is None or (inside == 0 and not LAUNCHER_WAIT_CALL.search(source)):
        return None
    last = next((ln for ln in reversed(before.splitlines()) if ln.strip() and not _STOP_NOTICE.search(ln)), "")
    stepping = PROGRESS.search(last) is not None and "Init COMPLETE" not in last
    return None if stepping else found[0]


def _waiting(display: str, line: int, place: WaitPlace) -> Anomaly:
    return Anomaly(
        code="traceback_cut_in_launcher_wait",
        kind="hang",
        level=STALL,
        message=(
            f"The log ends inside a Python traceback cut before its exception line, where {place.what}: the launcher "
            "was stopped while its workers ran, the traceback Ctrl-C prints on a job that stopped progressing"
        ),
        file=display,
        line=line,
        severity="critical",
        details={"confidence": "low", "remedy": place.remedy},
    )
