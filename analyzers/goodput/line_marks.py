"""One line of a training log into marks: each line format (formats.LINE_FORMATS) that matches, with the
step, its time fields and the rank prefix, and the wall-clock timestamp on the line (CLOCKS)."""

from __future__ import annotations

import calendar
import re
from typing import Any

from scope.analyzers.goodput.formats import CLOCKS, LINE_FORMATS, LineFormat
from scope.analyzers.goodput.formats.hf import GLUED_BAR_FRAME
from scope.analyzers.goodput.mark import Mark

_STEP_IN_PATH = re.compile(r"(?:checkpoint-|step[-_=]|global_step|iter_0*|iteration[-_]?)(\d+)")
_RANK_PREFIX = re.compile(r"^\s*(?:\[rank(\d+)\]:|\([^)]*?\brank=(\d+)\b[^)]*\))")


_MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]


# The most characters a clock reads from its start, its lookahead included: LSF's `Results reported at Tue May 14
# 10:21:05 2024` (44), glog's `W0514 10:21:05.123456789 4411 ` (a thread id; a C++ file:line prefix is read
# whole before a stamp its message quotes)
_LONGEST_STAMP = 64


def parse_clock(text: str, year: int = 1970) -> tuple[float, int] | None:
    """(epoch seconds, position) of the line's own timestamp: the leftmost one in `text` (its logger's prefix;
    a time the message quotes, nanotron's `[Start training] datetime: ...` or a checkpoint's date, comes after
    it), the CLOCKS order breaking ties; naive times are taken as UTC; `year` for formats that print none."""
    best: tuple[float, int] | None = None
    for clock in CLOCKS:
        # (past the first stamp found, only one starting before it can win: the line is read no further than
        # that stamp's start and a longest stamp's length, so a line's other clocks stay cheap on big logs)
        m = clock.regex.search(text, 0, len(text) if best is None else best[1] + _LONGEST_STAMP)
        if not m or (best is not None and m.start() >= best[1]):
            continue
        value = _clock_value(m.groupdict(), year)
        if value is None:
            continue
        best = (value, m.start())
        if best[1] == 0:
            break  # (nothing starts before the line's first character)
    return best


def _clock_value(g: dict[str, Any], year: int) -> float | None:
    """Epoch seconds of one clock match's fields (Match.groupdict); None where they make no date (a 31 June)."""
    try:
        y = int(g["y"]) if g.get("y") else 2000 + int(g["yy"]) if g.get("yy") else year
        mo = int(g["mo"]) if g.get("mo") else _MONTHS.index(str(g.get("mon"))) + 1
        base = calendar.timegm((y, mo, int(g["d"]), int(g["h"]), int(g["mi"]), int(g["s"])))
    except (ValueError, OverflowError):
        return None
    frac = g.get("frac")
    value = base + (int(frac) / 10 ** len(frac) if frac else 0.0)
    tz = g.get("tz")
    if tz and tz != "Z":
        sign = 1 if tz[0] == "+" else -1
        digits = tz[1:].replace(":", "")
        value -= sign * (int(digits[:2]) * 3600 + int(digits[2:4]) * 60)
    return value


def _elapsed(text: str) -> float:
    """Seconds of an `[d day(s), ][h:]mm:ss` clock (str(timedelta) past a day: "1 day, 0:08:23")."""
    days, _, clock = text.rpartition(", ")
    seconds = 0
    for p in clock.split(":"):
        seconds = seconds * 60 + int(p)
    return float(seconds + (int(days.split()[0]) * 86400 if days else 0))


# A human-format number's suffix (formats/rows.py HUMAN_NUM): x1000 each (nanotron's SIZES; G and B both 1e9)
_HUMAN_SUFFIX = {"K": 1e3, "M": 1e6, "G": 1e9, "B": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}


def _num(groups: dict[str, str | None], name: str) -> float | None:
    value = groups.get(name)
    if value is None:
        return None
    scale = _HUMAN_SUFFIX.get(value[-1:], 1.0)  # (only a row whose pattern takes HUMAN_NUM captures one)
    try:
        # (HF Trainer prints counts with thousands separators: 17,000)
        return float((value[:-1] if scale != 1.0 else value).replace(",", "")) * scale
    except ValueError:
        return None


def _rate_seconds(rate: str | None, unit: str | None) -> float | None:
    """Seconds per step of a rate field: `2.48s/it` is 2.48 s, `1.45it/s` is 1 / 1.45 s."""
    try:
        value = float(rate) if rate else 0.0
    except ValueError:
        return None
    if value <= 0 or not unit:
        return None
    return value if unit.startswith("s/") or unit.startswith("sec") else 1.0 / value


def _marks_of(fmt: LineFormat, m: re.Match[str], line: str, lineno: int, file: str) -> list[Mark]:
    g = m.groupdict()
    step = _num(g, "step")
    if step is None and any(k.startswith(("save", "load")) for k in fmt.kinds):
        found = _STEP_IN_PATH.search(line)
        step = float(found.group(1)) if found else None
    if step is None and g.get("start"):  # "Training starts at step N": N - 1 steps are done
        step = float(g["start"] or 1) - 1
    if fmt.step_from_zero and step is not None:
        step += 1
    unit = 1000 ** ("KMBTQ".index(g["unit"]) + 1) if g.get("unit") else None
    step = step * unit if step is not None and unit else step
    total = _num(g, "total")
    epoch = _num(g, "epoch")
    step_s = _num(g, "step_s")
    if step_s is None and _num(g, "step_ms") is not None:
        step_s = (_num(g, "step_ms") or 0.0) / 1000.0
    dur = _num(g, "dur_s")
    if dur is None and _num(g, "dur_ms") is not None:
        dur = (_num(g, "dur_ms") or 0.0) / 1000.0
    rel = _elapsed(g["elapsed"]) if fmt.clock and g.get("elapsed") else None
    if fmt.epoch_from is not None and step is not None and total and epoch is not None:
        # the step counts within the epoch; "Epoch 2/10" counts epochs from 1
        step += max(0.0, epoch - (1 if g.get("of") else fmt.epoch_from)) * total
    step_s = step_s if step_s is not None else _rate_seconds(g.get("bar_rate"), g.get("bar_unit"))
    # (a frame of bars glued on one line: its excerpt from its own start, not the frame before's rate)
    start = max(0, m.start() - 20, line.rfind("\r", 0, m.start() + 1))
    text = (line if len(line) <= 160 else line[start : m.end() + 40]).replace("\r", " ").strip()[:160]
    return [
        Mark(
            kind=k,
            line=lineno,
            file=file,
            row=fmt.name,
            step=int(step) if step is not None else None,
            total=int(total) if total else None,
            epoch=int(epoch) if epoch is not None else None,
            step_s=step_s,
            data_s=_num(g, "data_s"),
            dur_s=dur,
            rel=rel,
            text=text,
            world=int(_num(g, "world") or 0) or None,
            nodes=int(_num(g, "nodes") or 0) or None,
            epoch_f=_num(g, "epoch_f"),
            rate=_num(g, "rate"),
            sample_rate=_num(g, "sample_rate"),
            batch=int(str(g["batch"]).replace(",", "")) if g.get("batch") else None,
            step_unit=unit,
            rank=int(g["own_rank"]) if g.get("own_rank") else None,
        )
        for k in fmt.kinds
    ]


def scan_line(line: str, lineno: int, file: str, year: int = 1970) -> tuple[list[Mark], list[tuple[int, float]]]:
    """The marks of one line with their positions, and the timestamps on it (position, epoch seconds)."""
    found: list[tuple[int, int, Mark]] = []
    if "%|" in line:
        line = GLUED_BAR_FRAME.sub("\\1\r", line)  # the carriage returns a log of tqdm's bars lost
    for order, fmt in enumerate(LINE_FORMATS):
        if fmt.needle not in line:
            continue
        for m in fmt.regex.finditer(line):
            for mark in _marks_of(fmt, m, line, lineno, file):
                found.append((m.start(), order, mark))
    clocks: list[tuple[int, float]] = []
    stamp = parse_clock(line, year)
    if stamp is not None:
        clocks.append((stamp[1], stamp[0]))
    found.sort(key=lambda x: (x[0], x[1]))
    prefix = _RANK_PREFIX.match(line)
    if prefix:
        rank = int(prefix.group(1) or prefix.group(2))
        for _, _, mark in found:
            mark.rank = rank
    return [m for _, _, m in found], clocks
