"""The prefix a log collector puts before every line of a job's output, stripped for the readings across lines.

The line scanner reads each line's prefixes one by one (readers/lines.parse_line); the readings that need the
file's other lines (where the log stopped, a stall, a stack dump, ranks out of step: reasoning/) match the
program's own words at the start of a line. A collector that prefixes every line hides those starts, so the
same job reads differently under kubectl than under a terminal. Only a prefix on (nearly) every line is a
collector's: a timestamp printed by the program on some lines is its own text.

Sources of the prefixes:
  kubectl logs --timestamps / docker logs -t   RFC 3339 with nanoseconds: '2024-05-01T10:00:00.123456789Z '
  a time per line (moreutils ts, fluentd, a log viewer's export)   '2024-05-01 10:00:00.123 ', '[2024-05-01 10:00:00] ',
                                              ' 2024-05-01 10:00 ' (to the minute)
  Ray (python/ray/_private/log_monitor.py)    '(RayWorkerWrapper pid=4242) ', '(Worker pid=12, ip=10.0.0.2) '
  srun --label (SLURM)                        the task number: '3: '
  docker compose logs                          the service's name padded, then '| ': 'trainer-1  | '
  journalctl / syslog                          'Dec 06 10:00:00 gpu-node-3 python[4242]: '
  a Markdown quote of a pasted log             '> ' (a reply quoting the log in a GitHub thread)
  a Markdown indented code block               every line indented by four spaces (or more): dedented

The line scanner reads the rank of srun's label, the pid of Ray's tag and the host and time of a syslog line
itself; the other prefixes carry nothing it reads, so they are stripped before it too (`for_scanner`).
"""

from __future__ import annotations

import re

# (name, prefix, whether the line scanner reads it itself)
COLLECTOR_PREFIXES: tuple[tuple[str, str, bool], ...] = (
    # a log viewer's export puts a bar after it ('2024-08-23T22:22:50.870Z | '): the bar is the viewer's too
    ("kubectl/docker timestamps", r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d) (?:\| )?", False),
    # a time on every line from the collector or a log viewer's export ('ts', fluentd, a console's copy):
    # bracketed is Python logging's asctime, which the scanner reads (lines._PYLOG); bare it is not read
    ("bracketed timestamps", r"\[\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?\] ", True),
    # not loguru's own format ('2024-03-25 17:23:57.635 | INFO | ...'): the time is the program's, with its bar;
    # a viewer's export may give the minute only and set it off by a space ('  2025-02-18 12:54 [rank13]:...')
    (
        "bare timestamps",
        r"[ \t]?\d{4}-\d\d-\d\d \d\d:\d\d(?::\d\d(?:[.,]\d+)?)?(?: ?(?:Z|UTC|[+-]\d\d:?\d\d))? (?!\| )",
        False,
    ),
    ("ray", r"\(\w+ pid=\d+(?:, ip=[\d.]+)?\) ", True),
    ("srun --label", r" {0,5}\d{1,5}: ", True),
    # the service and its replica number ('trainer-1', v1's 'proj_trainer_1'): never a log level's 'INFO  | '
    ("docker compose", r"[\w.-]+[-_]\d+ +\| ", False),
    ("journald", r"[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d [\w.-]+ [\w.@/-]+(?:\[\d+\])?: ", True),
    ("markdown quote", r"> ?", False),
)
_AT_START = tuple(re.compile(p) for _, p, _ in COLLECTOR_PREFIXES)
_EVERY_LINE = tuple(re.compile(r"^" + p, re.M) for _, p, _ in COLLECTOR_PREFIXES)
_SCANNER_READS = tuple(read for _, _, read in COLLECTOR_PREFIXES)
# The share of non-empty lines a prefix must start to be the collector's, judged on the log's head and tail
# (a huge log is not split whole to decide).
MIN_SHARE = 0.8
MIN_LINES = 1  # a one-line paste under a collector is still its line
SAMPLE_CHARS = 32_768


def strip_collector_prefix(text: str, for_scanner: bool = False) -> str:
    """TEXT with the collector's prefix removed from the lines that carry it (every line keeps its number);
    TEXT itself when no prefix starts nearly every line. Prefixes nest (kubectl's timestamp before Ray's).
    FOR_SCANNER: only the prefixes the line scanner does not read itself, and none after one it reads."""
    # each prefix at most once: after a viewer's date ('2025-02-18 12:54 2025-02-18 13:10 job 1 ...') a second
    # date is the program's own text
    used: set[int] = set()
    for _ in range(len(COLLECTOR_PREFIXES)):
        stripped = _strip_one(text, for_scanner, used)
        if stripped is text:
            break
        text = stripped
    return _dedent(text)


def _sample_lines(text: str) -> list[str]:
    sample = text if len(text) <= 2 * SAMPLE_CHARS else text[:SAMPLE_CHARS] + "\n" + text[-SAMPLE_CHARS:]
    return [ln for ln in sample.split("\n") if ln.strip()]


_INDENT = re.compile(r"[ \t]+")


def _dedent(text: str) -> str:
    """A log pasted as a Markdown indented code block (every line indented): the common indentation removed,
    so a traceback's own indentation (its frame lines) is the only one left (readers/lines.Parsed.indented)."""
    filled = _sample_lines(text)
    if len(filled) < MIN_LINES:
        return text
    width = min(len(m.group(0)) if (m := _INDENT.match(ln)) else 0 for ln in filled)
    if width < 2:
        return text
    return re.compile(rf"^[ \t]{{1,{width}}}", re.M).sub("", text)


def _strip_one(text: str, for_scanner: bool, used: set[int]) -> str:
    filled = _sample_lines(text)
    if len(filled) < MIN_LINES:
        return text
    for i, (at_start, every_line, read) in enumerate(zip(_AT_START, _EVERY_LINE, _SCANNER_READS, strict=True)):
        if i not in used and sum(1 for ln in filled if at_start.match(ln)) >= MIN_SHARE * len(filled):
            used.add(i)
            return text if for_scanner and read else every_line.sub("", text)
    return text


_SRUN_LABEL = re.compile(r" {0,5}(\d{1,5}): ")
_SRUN_EVERY_LINE = re.compile(r"^ {0,5}(\d{1,5}): ", re.M)


def srun_labelled(text: str) -> bool:
    """srun --label's task number starts nearly every line (the collector's prefix, not the program's text)."""
    filled = _sample_lines(text)
    return bool(filled) and sum(1 for ln in filled if _SRUN_LABEL.match(ln)) >= MIN_SHARE * len(filled)


def srun_label_at(text: str, line: int) -> int | None:
    """The srun task number on line LINE (1-based) of an srun-labelled TEXT: the rank a whole-text reading lost
    when the labels were stripped."""
    if not srun_labelled(text):
        return None
    lines = text.split("\n")
    m = _SRUN_LABEL.match(lines[line - 1]) if 0 < line <= len(lines) else None
    return int(m.group(1)) if m else None


def srun_streams(text: str) -> dict[int, str]:
    """An srun-labelled TEXT of several tasks split into one text per task, its label removed: the tasks'
    output interleaves line by line, and the label is all that says which stack frame is whose. Every stream
    keeps the file's line numbers (the other tasks' lines left empty). Empty: not labelled, or one task only."""
    if not srun_labelled(text):
        return {}
    lines = text.split("\n")
    labels = [m.group(1) if (m := _SRUN_LABEL.match(ln)) else None for ln in lines]
    tasks = sorted({int(x) for x in labels if x is not None})
    if len(tasks) < 2:
        return {}
    return {
        t: "\n".join(
            ln[_SRUN_LABEL.match(ln).end() :] if lab is not None and int(lab) == t else ""  # type: ignore[union-attr]
            for ln, lab in zip(lines, labels, strict=True)
        )
        for t in tasks
    }
