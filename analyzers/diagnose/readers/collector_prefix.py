"""The prefix a log collector puts before every line of a job's output, stripped for the readings across lines.

The line scanner reads each line's prefixes one by one (readers/lines.parse_line); the readings that need the
file's other lines (where the log stopped, a stall, a stack dump, ranks out of step: reasoning/) match the
program's own words at the start of a line. A collector that prefixes every line hides those starts, so the
same job reads differently under kubectl than under a terminal. Only a prefix on (nearly) every line is a
collector's: a timestamp printed by the program on some lines is its own text.

Sources of the prefixes:
  kubectl logs --timestamps / docker logs -t   RFC 3339 with nanoseconds: '2024-05-01T10:00:00.123456789Z '
  Ray (python/ray/_private/log_monitor.py)    '(RayWorkerWrapper pid=4242) ', '(Worker pid=12, ip=10.0.0.2) '
  srun --label (SLURM)                        the task number: '3: '
"""

from __future__ import annotations

import re

COLLECTOR_PREFIXES: tuple[tuple[str, str], ...] = (
    ("kubectl/docker timestamps", r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d) "),
    ("ray", r"\(\w+ pid=\d+(?:, ip=[\d.]+)?\) "),
    ("srun --label", r" {0,5}\d{1,5}: "),
)
_AT_START = tuple(re.compile(p) for _, p in COLLECTOR_PREFIXES)
_EVERY_LINE = tuple(re.compile(r"^" + p, re.M) for _, p in COLLECTOR_PREFIXES)
# The share of non-empty lines a prefix must start to be the collector's, judged on the log's head and tail
# (a huge log is not split whole to decide).
MIN_SHARE = 0.8
MIN_LINES = 2
SAMPLE_CHARS = 32_768


def strip_collector_prefix(text: str) -> str:
    """TEXT with the collector's prefix removed from the lines that carry it (every line keeps its number);
    TEXT itself when no prefix starts nearly every line. Prefixes nest (kubectl's timestamp before Ray's)."""
    for _ in range(len(COLLECTOR_PREFIXES)):
        stripped = _strip_one(text)
        if stripped is text:
            return text
        text = stripped
    return text


def _strip_one(text: str) -> str:
    sample = text if len(text) <= 2 * SAMPLE_CHARS else text[:SAMPLE_CHARS] + "\n" + text[-SAMPLE_CHARS:]
    filled = [ln for ln in sample.split("\n") if ln.strip()]
    if len(filled) < MIN_LINES:
        return text
    for at_start, every_line in zip(_AT_START, _EVERY_LINE, strict=True):
        if sum(1 for ln in filled if at_start.match(ln)) >= MIN_SHARE * len(filled):
            return every_line.sub("", text)
    return text
