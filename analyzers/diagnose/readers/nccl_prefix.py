"""The prefix NCCL puts before each of its own lines: 'host:pid:tid [cudaDev] NCCL INFO|WARN message'.

NCCL's logger (src/debug.cc) writes '%s:%d:%d [%d] NCCL INFO ' for INFO and puts the source file and line
before the level for WARN ('%s:%d:%d [%d] %s:%d NCCL WARN '); NCCL <= 2.3 wrote 'file.h:NNN WARN' without
the NCCL token, and net plugins log a function instead of a file ('nccl_net_ofi_rdma_init:7978 NCCL WARN').
Posters and launchers change the front of the line: a blanked-out host (':4171735:4171735 [0]'), a launcher's
tag glued to the host ('[1,0]<stdout>:node-0:25:25', '[default0]:node:...'), a file name from grep
('LOG1.0.txt:learnfair062:...'), markdown ('**hvd1:...'). One reader for all of them, in the readers room
beside lines.py (which reads a Parsed line's host, pid and device from it) and imported by reasoning's
whole-log readings; it imports nothing so that lines.py can use it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import NamedTuple

# What follows the host: ':pid:tid [dev] ', then WARN's source location (optional), then the level; the NCCL
# token may be missing only after a source location (NCCL <= 2.3).
_AFTER_HOST = (
    r":(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] "
    r"(?:(?:(?P<source>[\w/.\-]+:\d+) )?(?P<nccl>NCCL )?(?P<level>INFO|WARN)\b ?)?"
)
_HOST = r"[\w.\-<>]*"  # what a host name (or a container's id) is made of; a launcher's '<stdout>' too
# Where the line begins with the prefix (lines.py reads a message whose launcher prefixes are peeled): anchored.
_AT_START = re.compile(f"(?P<host>{_HOST}){_AFTER_HOST}")
# Anywhere else the part after the host is searched for first (it begins with a literal ':', which the regex
# engine finds fast) and the host read backwards from it: a search for a pattern that began with the host
# tried it at every position of every line, ~25x slower.
_AFTER_HOST_ANYWHERE = re.compile(_AFTER_HOST, re.M)
_HOST_REVERSED = re.compile(_HOST)
MAX_HOST = 255


class NcclPrefix(NamedTuple):  # a tuple: lines.py makes one per NCCL line, a frozen dataclass costs twice that
    host: str  # '' where the poster blanked it out
    pid: int
    tid: int
    device: int  # the CUDA device the process had current when it logged
    level: str  # 'INFO' or 'WARN'; '' for a line with the prefix but neither level (a wrapped WARN, say)
    message: str  # what follows the level (all that follows the prefix where there is none), stripped
    source: str = ""  # WARN's 'file.cc:NNN' (or a plugin's function:NNN), where it has one


def _host_start(text: str, colon: int) -> int:
    """Where the host ending at `colon` begins: the longest run of host-name characters before it, so that a
    launcher's tag or a file name glued before it with ':' ('[1,0]<stdout>:node-0', 'LOG1.txt:node') is left
    out; `colon` itself where the host is blank."""
    window = text[max(0, colon - MAX_HOST) : colon][::-1]
    m = _HOST_REVERSED.match(window)
    return colon - (m.end() if m else 0)


def _prefixes(text: str, pos: int = 0) -> Iterator[tuple[int, re.Match[str]]]:
    """The prefixes of `text` from `pos`, one line or many, each with where its host begins. Without NCCL's
    own level (the NCCL word or WARN's source file before INFO / WARN) a prefix counts only at the start of a
    line, where lines.py peels it: mid-line, 'at 12:34:56 [0] ...' and '2024-05-01 10:31:00 [1] WARN ...' are
    a clock and a rank tag (a bare INFO / WARN is some other logger's level, as _read decides)."""
    m = _AFTER_HOST_ANYWHERE.search(text, pos)
    while m:
        start = _host_start(text, m.start())
        if (m["level"] and (m["nccl"] or m["source"])) or start == 0 or text[start - 1] == "\n":
            yield start, m
        m = _AFTER_HOST_ANYWHERE.search(text, m.end())


def _read(text: str, start: int, m: re.Match[str]) -> NcclPrefix:
    end = text.find("\n", m.end())
    rest = text[m.end() : end if end >= 0 else len(text)]
    source, level = m["source"] or "", m["level"] or ""
    if level and not m["nccl"] and not source:  # 'INFO ...' alone is some other logger's word, not NCCL's
        source, level, rest = "", "", text[m.end("dev") + 2 : m.end()] + rest
    return NcclPrefix(
        host=text[start : m.start("pid") - 1],
        pid=int(m["pid"]),
        tid=int(m["tid"]),
        device=int(m["dev"]),
        level=level,
        message=rest.strip(),
        source=source,
    )


def read_prefix(line: str) -> NcclPrefix | None:
    """The NCCL prefix of one line (anywhere in it: launchers and posters put text before it), else None."""
    m = _AT_START.match(line)
    if m:
        return _read(line, 0, m)
    if "] " not in line:  # a cheap gate: lines.py asks this of every line of a log
        return None
    found = next(_prefixes(line), None)
    return _read(line, *found) if found else None


def nccl_lines(text: str) -> Iterator[tuple[int, NcclPrefix]]:
    """Every NCCL-prefixed line of a whole log with its 1-based line number, in one pass over the text."""
    lineno, last = 1, 0
    for start, m in _prefixes(text):
        lineno += text.count("\n", last, start)
        last = start
        yield lineno, _read(text, start, m)
