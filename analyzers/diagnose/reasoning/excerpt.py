"""A log quoted in part: the marker a person leaves where lines were cut ('[... 200 lines omitted ...]', a
line of '...'), and where a line starts. The silent-run models (progress.py, stages.py, startup.py) read
where a log ends; a marker after that point says the excerpt stops there, not the run.
"""

from __future__ import annotations

from scope.analyzers.diagnose.knowledge.line_shapes import EXCERPT_CUT as CUT
from scope.analyzers.diagnose.knowledge.line_shapes import EXCERPT_CUT_NOTE as CUT_NOTE

__all__ = ["CUT", "CUT_NOTE", "cut_after", "excerpted", "line_start"]


def cut_after(text: str, pos: int) -> bool:
    """An excerpt marker ('[... cut ...]') on a line after `pos` with more lines after it: lines were left out
    there, so the lines before the cut are not where the run stopped (a cut as the last line says nothing)."""
    if "..." not in text[pos:] and "…" not in text[pos:]:
        return False
    lines = [ln for ln in text[pos:].split("\n")[1:] if ln.strip()]
    return any(CUT.match(ln) for ln in lines[:-1])


def excerpted(text: str) -> bool:
    """The log holds an excerpt marker on a line of its own: the poster chose which lines to show, so where it
    ends after a stage that completed (a result row, a rank's 'Init COMPLETE') is where the quote ends."""
    if "..." not in text and "…" not in text:
        return False
    return any(CUT.match(ln.strip()) for ln in text.split("\n") if ln.strip())


def line_start(text: str, line: int) -> int:
    """Offset of the start of `line` (1-based); the text's length past its last line."""
    pos = 0
    for _ in range(line - 1):
        pos = text.find("\n", pos) + 1
        if pos == 0:
            return len(text)
    return pos


def cut_inside_nccl_init(text: str) -> bool:
    """An excerpt marker after NCCL's first line: the poster chose which of the processes' interleaved init lines to
    show (NVIDIA/nccl#226's 64 ranks, cut four times), so the last lines shown need not be the last printed. A cut
    above every NCCL line only leaves out the log's head (the launch): it hides nothing of init, nor what followed
    the stop."""
    first = text.find("NCCL INFO")
    return first >= 0 and cut_after(text, text.rfind("\n", 0, first) + 1)
