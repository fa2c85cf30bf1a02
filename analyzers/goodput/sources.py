"""Which logs tell the job's life, and how several of them make one stream of marks.

A file (or a folder of logs; in a run directory, every rank's stdout/stderr and the launcher's output)
is parsed whole. Logs whose times overlap are the same attempt seen by several processes: the one with
the most step lines is the job's voice, logs beside it in the same folder (its stderr beside its stdout)
are merged in, and the others lend only their failure and restart lines (every rank prints its own
traceback, but its own copy of "saving checkpoint" would count a save twice). Logs that do not overlap
are consecutive attempts (a requeued job writing a new file), read in time order.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from scope.analyzers.goodput.parse import Mark, ParsedLog, parse_file

if TYPE_CHECKING:
    from scope.inputs import Inventory

RANK_OUTPUT = (".log", ".out", ".err")  # a rank's own output (stdout.log, stderr.log) in a run directory
SHARED_KINDS = frozenset({"failure", "restart", "job_end", "interrupt", "stop"})


@dataclass
class Stream:
    marks: list[Mark]
    files: list[ParsedLog]
    primary: list[str] = field(default_factory=list)
    clock: str = "none"
    warnings: list[str] = field(default_factory=list)
    wall: tuple[float | None, float | None] = (None, None)


def find_logs(inputs: Inventory) -> list[Path]:
    """Every log of PATH's inventory (its kinds: scope.inputs.Inventory.logs), except NCCL's debug output
    (no training progress in it) and, in a run directory, the ranks after the lowest one with output (each
    rank prints the same progress; reading thousands of them would only slow the report down)."""
    if inputs.layout == "file":
        return [inputs.path]
    logs = [e for e in inputs.logs() if not e.rel.name.startswith("nccl")]
    with_output = sorted(
        int(e.rel.parts[1])
        for e in logs
        if len(e.rel.parts) == 3
        and e.rel.parts[0] == "ranks"
        and e.rel.parts[1].isdigit()
        and e.rel.suffix in RANK_OUTPUT
    )
    voice = str(with_output[0]) if with_output else None

    def heard(rel: Path) -> bool:  # in a run directory, only the voice rank's folder
        parts = rel.parts
        return voice is None or len(parts) < 3 or parts[0] != "ranks" or parts[1] == voice

    return [e.path for e in logs if heard(e.rel)]


def read_logs(inputs: Inventory) -> tuple[list[ParsedLog], list[str]]:
    logs: list[ParsedLog] = []
    warnings: list[str] = []
    base = inputs.path
    for p in find_logs(inputs):
        try:
            if _binary(p):
                continue
            display = str(p.relative_to(base)) if base.is_dir() else str(p)
            parsed = parse_file(p, display)  # a log over 512 MiB: its head and tail (parse.parse_file)
        except OSError as exc:
            warnings.append(f"{p}: unreadable ({exc.strerror or exc})")
            continue
        warnings.extend(parsed.notes)
        if any(m.kind != "clock" for m in parsed.marks):
            logs.append(parsed)
    return _with_years(logs, base, warnings), warnings


def _with_years(logs: list[ParsedLog], base: Path, warnings: list[str]) -> list[ParsedLog]:
    """A log whose timestamps print no year (torchrun's glog lines) takes the year of the dated logs beside
    it, so that its times and theirs are one clock (else it sits in 1970, decades from them)."""
    dated = [m.t for lg in logs if not lg.yearless for m in lg.marks if m.t_src == "own" and m.t is not None]
    if not dated or not any(lg.yearless for lg in logs):
        return logs
    year = dt.datetime.fromtimestamp(min(dated), dt.timezone.utc).year
    out = []
    for lg in logs:
        if lg.yearless:
            path = base / lg.path if base.is_dir() else Path(lg.path)
            try:
                lg = parse_file(path, lg.path, year)
            except OSError as exc:
                warnings.append(f"{path}: unreadable ({exc.strerror or exc})")
                continue
        out.append(lg)
    return out


def _binary(p: Path) -> bool:
    """Zero bytes, unless they are UTF-16 text's (a log PowerShell wrote)."""
    from scope.analyzers.diagnose.readers.logtext import utf16_encoding

    with open(p, "rb") as fh:
        head = fh.read(4096)
    return b"\0" in head and utf16_encoding(head) is None


def _span(log: ParsedLog) -> tuple[float, float] | None:
    times = [m.t for m in log.marks if m.t is not None and m.t_src in ("own", "bar", "derived")]
    return (min(times), max(times)) if times else None


def _steps(log: ParsedLog) -> int:
    return sum(1 for m in log.marks if m.kind == "step")


def merge(logs: list[ParsedLog]) -> Stream:
    """One stream of marks from the logs (see the module docstring)."""
    if not logs:
        return Stream([], [])
    notes = _one_time_base(logs)
    groups = _overlap_groups(logs)
    marks: list[Mark] = []
    primary: list[str] = []
    for n, group in enumerate(groups):
        voice = max(group, key=lambda lg: (_steps(lg), len(lg.marks)))
        folder = Path(voice.path).parent
        full = [lg for lg in group if Path(lg.path).parent == folder]
        lent = [lg for lg in group if lg not in full]
        primary.extend(lg.path for lg in full)
        merged = [m for lg in full for m in lg.marks]
        merged += [m for lg in lent for m in lg.marks if m.kind in SHARED_KINDS]
        if len(full) + len(lent) > 1:
            merged.sort(key=lambda m: m.t if m.t is not None else float("inf"))
        first = next((m.t for m in merged if m.t is not None), None)
        if n and first is not None:  # a later log that overlaps none before it: the job started again
            for kind in ("restart", "init_begin"):
                marks.append(Mark(kind, 1, voice.path, "new log", t=first, t_src="own", text=f"{voice.path} begins"))
        marks.extend(merged)
    clocks = [lg.clock for lg in logs]
    clock = next((c for c in ("own", "bar", "derived") if c in clocks), "none")
    own = [m.t for lg in logs if lg.path in primary for m in lg.marks if m.t is not None and m.t_src == "own"]
    wall = (min(own), max(own)) if own else (None, None)
    return Stream(marks, logs, primary, clock, warnings=notes, wall=wall)


WALL_CLOCK_AFTER = 1e9  # epoch seconds (2001): a time below it is relative to a log's start, not a date


def _one_time_base(logs: list[ParsedLog]) -> list[str]:
    """Times relative to a log's start (elapsed-time fields, progress bars) never meet wall-clock dates: a
    log with relative times only, beside logs with dates, is placed where its name puts it among them (it
    ends where the next dated log begins, or begins where the one before it ended); the gap between them
    is unknown and said so, never counted."""
    dated = sorted((lg for lg in logs if lg.clock == "own" and _span(lg)), key=lambda lg: lg.path)
    relative = [lg for lg in logs if lg.clock != "own" and _span(lg)]
    if not dated or not relative:
        return []
    notes = []
    for lg in relative:
        s, e = _span(lg) or (0.0, 0.0)
        after = next((d for d in dated if d.path > lg.path), None)
        before = [d for d in dated if d.path < lg.path]
        if after is not None:
            shift = (_span(after) or (0.0, 0.0))[0] - e
            where = f"just before {after.path}"
        else:
            shift = (_span(before[-1]) or (0.0, 0.0))[1] - s
            where = f"just after {before[-1].path}"
        for m in lg.marks:
            if m.t is not None:
                m.t += shift
        notes.append(
            f"{lg.path}: its times are relative to its own start (no dates): placed {where}; the time between "
            "them is unknown and not counted"
        )
    return notes


def _overlap_groups(logs: list[ParsedLog]) -> list[list[ParsedLog]]:
    """Logs grouped by overlapping time spans, groups in time order; logs with no time are one group
    each, after the timed ones in name order (a folder of per-attempt logs with no timestamps)."""
    timed = sorted((lg for lg in logs if _span(lg)), key=lambda lg: _span(lg) or (0.0, 0.0))
    groups: list[list[ParsedLog]] = []
    end = -float("inf")
    for lg in timed:
        s, e = _span(lg) or (0.0, 0.0)
        if groups and s <= end:
            groups[-1].append(lg)
            end = max(end, e)
        else:
            groups.append([lg])
            end = e
    untimed = sorted((lg for lg in logs if not _span(lg)), key=lambda lg: lg.path)
    if untimed and not timed:
        # No clock at all: the logs of one folder are one process's view; take the one with most steps.
        return [[max(untimed, key=_steps)]]
    return groups + [[lg] for lg in untimed]
