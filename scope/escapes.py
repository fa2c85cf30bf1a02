"""Terminal escapes in what logs, traces and file names carry: stripped before matching and printing.

A log line can set the terminal's title (OSC 0), clear the screen (CSI 2J), plant a hyperlink (OSC 8)
or colour a rank prefix (`\\x1b[31m[rank3]:\\x1b[0m`) so that no rule sees `[rank3]:`. scope reads text
without them and never writes them to a terminal.
"""

from __future__ import annotations

import re

# ESC-introduced sequences (ECMA-48): CSI, OSC/DCS/PM/APC strings (ended by BEL or ST), two-byte ones;
# their 8-bit C1 forms; and the other C0 controls except tab and newline (a lone CR rewrites a line).
_ESCAPE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b[\]PX^_][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]"
    r"|\x9b[0-?]*[ -/]*[@-~]"
    r"|[\x9d\x90\x98\x9e\x9f][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
)
_TRIGGERS = ("\x1b", "\x9b", "\x9d", "\x07", "\x08", "\r", "\x00", "\x0c")


def strip_escapes(text: str) -> str:
    """TEXT without terminal escape sequences or control characters (newlines and tabs kept; a CR before
    a newline goes, a lone CR too). Cheap when there is none."""
    if not any(t in text for t in _TRIGGERS) and not _ESCAPE.search(text):
        return text
    return _ESCAPE.sub("", text)


def strip_escapes_keep_lines(text: str) -> str:
    """As strip_escapes, for a log's text before matching: same lines, same line numbers (only the
    characters within lines go); cheap for a huge log with none."""
    if "\x1b" not in text and "\x9b" not in text and "\x9d" not in text:
        return text
    return _ESCAPE.sub("", text)
