"""A log that ends inside a Python traceback, its exception line cut away: a process raised, the reason is lost.

Python prints 'Traceback (most recent call last):', the frames, then the exception line; a pasted console or a
log collected as an excerpt often stops among the frames. The frames still say that a process raised and where
(its innermost frame shown), which is a crash, never a healthy log. A traceback cut inside a collective or the
rendezvous is read by readers/cut_traceback.py and reasoning/rendezvous_cut.py (a wait, not a raise) first.
The same cut at a launcher's report is knowledge/launcher_cut.py.
"""

from __future__ import annotations

import re

from scope.analyzers.diagnose.model import APPLICATION, Anomaly

_HEADER = "Traceback (most recent call last):"
# A frame line and its source line, under any collector's prefix ('ML-01: ', '[rank0]: ')
_FRAME = re.compile(r'^.{0,40}?File "(?P<file>[^"]+)", line \d+, in (?P<func>[\w<>.]+)\s*$')
# What may follow the frames in a cut log: their source lines (indented), carets, a cut marker, blank lines
_CUT_MARK = re.compile(r"^\s*(?:\[?\.\.\.[^\]]*\]?|\.\.\.|<truncated>|\[cut\])\s*$", re.I)
_PREFIX = re.compile(r"^(?:\S{1,40}?:\s|\[rank\d+\]:\s?)")
REMEDY = (
    "The log is cut inside the traceback, before its exception line: read that line in the whole log (the "
    "rank's own stderr, the launcher's output, the job's log file), or rerun to see it. The innermost frame shown "
    "is where the process raised, or the call that led to it."
)


def _is_frame_body(line: str) -> bool:
    """A traceback's own lines after its header: a frame, the frame's source line (indented), a caret line."""
    bare = _PREFIX.sub("", line, count=1)
    return bool(_FRAME.match(line)) or bare.startswith(("    ", "\t")) or not bare.strip() or set(bare.strip()) <= set("^~")


def cut_in_traceback(text: str, display: str) -> Anomaly | None:
    """A crash for a log whose last traceback runs to the log's end with no exception line after its frames."""
    at = text.rfind(_HEADER)
    if at < 0:
        return None
    lines = text[at:].splitlines()[1:]
    while lines and (not lines[-1].strip() or _CUT_MARK.match(_PREFIX.sub("", lines[-1], count=1))):
        lines.pop()  # the excerpt's own cut marker and trailing blanks
    frames = [m for line in lines if (m := _FRAME.match(line))]
    if not frames or not all(_is_frame_body(line) for line in lines):
        return None  # an exception line (or other output) follows the frames: the traceback is whole
    last = frames[-1]
    where = f"{last.group('func')} ({last.group('file').rsplit('/', 1)[-1]})"
    return Anomaly(
        code="traceback_cut_before_exception",
        kind="crash",
        level=APPLICATION,
        message=(
            f"The log ends inside a Python traceback ({len(frames)} frames, innermost shown: {where}) with its "
            "exception line cut away: a process raised there, and the error that names why is not in the log"
        ),
        file=display,
        line=text.count("\n", 0, at) + 1,
        severity="critical",
        details={"confidence": "low", "remedy": REMEDY, "frame": where},
    )
