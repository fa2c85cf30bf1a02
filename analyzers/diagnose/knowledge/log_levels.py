"""The severity each emitting program prints at the start of its lines, and which severities only report progress.

A log's lines say how bad they are before they say anything else: c10d's C++ logging writes glog's letter ('I' info,
'W' warning, 'E' error, 'F' fatal), vLLM's logger and Python's logging a word, NCCL 'INFO' / 'WARN'. A log whose
every line is informational reports steps taken, not one refused or retried (a refused connect is a 'W' line in
c10d's socket.cpp, a retry after it too; an NCCL failure a WARN). reasoning/stages.py reads these: a short excerpt of
informational lines only, all within a moment, shows a run making progress, not a run that stopped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# A prefix a launcher puts before the program's own (torchrun's '[rankN]:', its older '[defaultN]:'; srun --label's
# 'N: '): the severity comes after it.
_LAUNCHER_PREFIX = r"(?:\[(?:rank|default)\d+\]:\s?|\d{1,5}: )?"


@dataclass(frozen=True)
class LevelFormat:
    name: str
    pattern: re.Pattern[str]  # group 1: the severity as printed
    informational: tuple[str, ...]  # the severities that report progress only
    source: str


LEVEL_FORMATS: tuple[LevelFormat, ...] = (
    LevelFormat(
        "c10d (glog-style, torch >= 2.4)",
        re.compile(_LAUNCHER_PREFIX + r"\[([IWEF])\d{3,4} \d\d:\d\d:\d\d\.\d+ [^\]]*\]"),
        ("I",),
        "c10/util/Logging.cpp, torch/csrc/distributed/c10d/logging.h (C10D_INFO / C10D_WARNING / C10D_ERROR: "
        "'[I1010 23:53:41.791359160 socket.cpp:720] [c10d - debug] ...')",
    ),
    LevelFormat(
        "c10d (torch < 2.4)",
        re.compile(_LAUNCHER_PREFIX + r"\[([IWEF]) [\w.]+:\d+\]"),
        ("I",),
        "c10/util/Logging.cpp ('[I socket.cpp:580] [c10d - debug] ...', '[W socket.cpp:601] [c10d] ...')",
    ),
    LevelFormat(
        "glog (torchrun's agent, torch >= 2.4)",
        re.compile(_LAUNCHER_PREFIX + r"([IWEF])\d{3,4} \d\d:\d\d:\d\d\.\d+\s+\d+ \S+?:\d+\]"),
        ("I",),
        "torch/distributed/elastic/utils/logging.py ('I0801 13:23:20.000000 32974 api.py:874] ...')",
    ),
    LevelFormat(
        "vLLM logger",
        re.compile(
            _LAUNCHER_PREFIX + r"(?:\(\w+ pid=\d+(?:, ip=[\d.]+)?\) )?(DEBUG|INFO|WARNING|ERROR|CRITICAL) "
            r"\d\d-\d\d \d\d:\d\d:\d\d"
        ),
        ("DEBUG", "INFO"),
        "vllm/logger.py (_FORMAT '%(levelname)s %(asctime)s [%(filename)s:%(lineno)d] %(message)s')",
    ),
)


def informational(line: str) -> bool | None:
    """Whether the line's severity reports progress only; None where no known format prints one on it."""
    for fmt in LEVEL_FORMATS:
        m = fmt.pattern.match(line)
        if m:
            return m.group(1) in fmt.informational
    return None
