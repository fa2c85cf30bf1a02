"""Read a training log into marks: what happened (formats.LINE_FORMATS), at which step, and when.

Times come, in order of trust, from a timestamp on the line itself (CLOCKS), from a progress bar's
relative clock aligned to the wall clock by the timestamped lines around it, or are derived: a step line
without a time is placed after the step before it by its own elapsed-time field (never past the next
timestamped line), any other line takes the time of the line before it (or, before the first timestamp,
the one after it). A line may hold several marks (progress bars glued together without newlines); each
takes the time written before it on that line.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass, field
from pathlib import Path

from scope.analyzers.goodput.clock import clock_note, correct_clock, derive_back, time_order
from scope.analyzers.goodput.formats import (
    ANSI,
    CLOCKS,
    JSONL_ROWS,
    LAST_STEP_TIME_ROWS,
    LINE_FORMATS,
    SHARED_BARS,
    LineFormat,
)
from scope.analyzers.goodput.hf_trainer import trainer_steps
from scope.analyzers.goodput.mark import Mark
from scope.analyzers.goodput.structural import accept_structural, structural_epoch, structural_eval, structural_step

_STEP_IN_PATH = re.compile(r"(?:checkpoint-|step[-_=]|global_step|iter_0*|iteration[-_]?)(\d+)")
MAX_LINE = 1 << 16
# torchrun --tee / --log-line-prefix-template ("[rank3]:"), Ray / SkyPilot ("(head, rank=0, pid=5752)")
# pdsh (DeepSpeed's multinode runner) and clush prefix each line with the host that printed it: `localhost: `,
# `192.168.205.202: `, `x3006c0s13b0n0: ` (a name with a digit: a word like `INFO:` or `Epoch:` is no host)
_HOST_PREFIX = re.compile(
    r"^(?:localhost|\d{1,3}(?:\.\d{1,3}){3}|(?!(?i:rank|step|epoch|iter|batch|update|stage))[A-Za-z][\w-]*\d[\w.-]*): "
)
_RANK_PREFIX = re.compile(r"^\s*(?:\[rank(\d+)\]:|\([^)]*?\brank=(\d+)\b[^)]*\))")
# Lines whose duration moves the derived clock of a log with no timestamps (the elapsed-time fields of
# Megatron's iterations exclude saves and loads).
UNTIMED_DURATIONS = frozenset({"save_end", "save_dur", "load_end", "load_dur"})
# Lines that start the job (again): an untimed failure before one is not placed at its time.
STARTS_AGAIN = frozenset({"step", "init_begin", "init_mark", "train_begin", "load_begin", "load_progress", "load_end"})
# Timestamped lines after which the steps that follow ran (their step times count from there).
BLOCKING_ENDS = frozenset({"save_end", "load_end", "eval_end", "train_begin"})
EVAL_BAR = "eval bar"  # the row of the marks an evaluation's bare progress bar gives


@dataclass
class ParsedLog:
    path: str
    marks: list[Mark]
    lines: int
    timestamped: int  # lines with a wall-clock timestamp
    clock: str  # own | bar | derived | none: the best time source the file had
    notes: list[str] = field(default_factory=list)  # what of the file was not read
    yearless: bool = False  # its timestamps print no year (glog) and none of its lines gave one


def parse_clock(text: str, year: int = 1970) -> tuple[float, int] | None:
    """(epoch seconds, position) of the first timestamp in `text`; naive times are taken as UTC; `year` for
    formats that print none (glog)."""
    for _, rx in CLOCKS:
        m = rx.search(text)
        if not m:
            continue
        g = m.groupdict()
        try:
            y = int(g["y"]) if g.get("y") else 2000 + int(g["yy"]) if g.get("yy") else year
            base = calendar.timegm((y, int(g["mo"]), int(g["d"]), int(g["h"]), int(g["mi"]), int(g["s"])))
        except (ValueError, OverflowError):
            continue
        frac = g.get("frac")
        value = base + (int(frac) / 10 ** len(frac) if frac else 0.0)
        tz = g.get("tz")
        if tz and tz != "Z":
            sign = 1 if tz[0] == "+" else -1
            digits = tz[1:].replace(":", "")
            value -= sign * (int(digits[:2]) * 3600 + int(digits[2:4]) * 60)
        return value, m.start()
    return None


def _elapsed(text: str) -> float:
    """Seconds of an `[d day(s), ][h:]mm:ss` clock (str(timedelta) past a day: "1 day, 0:08:23")."""
    days, _, clock = text.rpartition(", ")
    seconds = 0
    for p in clock.split(":"):
        seconds = seconds * 60 + int(p)
    return float(seconds + (int(days.split()[0]) * 86400 if days else 0))


def _num(groups: dict[str, str | None], name: str) -> float | None:
    value = groups.get(name)
    if value is None:
        return None
    try:
        return float(value)
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
    text = (line if len(line) <= 160 else line[max(0, m.start() - 20) : m.end() + 40]).strip()[:160]
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
            dur_s=dur,
            rel=rel,
            text=text,
            world=int(_num(g, "world") or 0) or None,
            nodes=int(_num(g, "nodes") or 0) or None,
            epoch_f=_num(g, "epoch_f"),
            rate=_num(g, "rate"),
            sample_rate=_num(g, "sample_rate"),
            batch=int(str(g["batch"]).replace(",", "")) if g.get("batch") else None,
        )
        for k in fmt.kinds
    ]


def scan_line(line: str, lineno: int, file: str, year: int = 1970) -> tuple[list[Mark], list[tuple[int, float]]]:
    """The marks of one line with their positions, and the timestamps on it (position, epoch seconds)."""
    found: list[tuple[int, int, Mark]] = []
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


def parse_text(text: str, file: str, year: int | None = None) -> ParsedLog:
    """A log's marks; `year` for timestamps that print none (glog) when the log's own lines give none."""
    marks: list[Mark] = []
    candidates: list[Mark] = []  # step lines recognised by their structure alone
    timestamped = 0
    lines = text.splitlines()
    header = _header_lines(lines)
    own_year = _first_year(lines)
    yearless = own_year == 1970
    year = year if year and yearless else own_year
    for lineno, raw in enumerate(lines, 1):
        if lineno <= header or not raw:  # (the unread middle of a huge log is empty lines)
            continue
        line = _HOST_PREFIX.sub("", ANSI.sub("", raw[:MAX_LINE]), count=1)
        line_marks, clocks = scan_line(line, lineno, file, year)
        if not any(m.kind == "step" for m in line_marks):
            found = structural_step(line, stamped=bool(clocks))
            if found is not None:
                step, total, step_s = found
                mark = Mark(
                    "step", lineno, file, "structural", step=step, total=total, step_s=step_s, text=line.strip()[:160]
                )
                mark.epoch = structural_epoch(line)
                candidates.append(mark)
                line_marks.append(mark)
            elif clocks and not line_marks and structural_eval(line):
                mark = Mark("eval_end", lineno, file, "structural", text=line.strip()[:160])
                candidates.append(mark)
                line_marks.append(mark)
        if clocks:
            timestamped += 1
            t = clocks[0][1]
            for mark in line_marks:
                mark.t, mark.t_src = t, "own"
                if mark.kind.endswith("_begin") and mark.dur_s:  # a bar's last state: it began `elapsed` ago
                    mark.t -= mark.dur_s
            if not line_marks:
                marks.append(Mark(kind="clock", line=lineno, file=file, row="clock", t=t, t_src="own"))
        elif line[:1].isspace() and marks and marks[-1].row == "clock" and marks[-1].line == lineno - 1:
            for mark in line_marks:  # a record's indented continuation (rich's handler): the header's time
                mark.t, mark.t_src = marks[-1].t, "own"
        marks.extend(line_marks)
    marks, notes = accept_structural(marks, candidates, file)
    marks = _steps_timed_by_rate(marks)
    marks = _epoch_end_steps(marks)
    marks, hf_notes = trainer_steps(marks, file)
    notes += hf_notes
    marks = _training_bar_only(marks)
    marks = _one_record_per_step(marks)
    marks, moved = time_order(marks)
    if moved:
        notes.append(
            f"{file}: {moved} step line(s) were written out of time order (several writers?): read in the order "
            "of their timestamps"
        )
    clock = _assign_times(marks, file, notes)
    _time_eval_bars(marks)
    if clock == "derived":
        marks = _open_at_zero(marks)
    elif clock == "bar":
        marks = _open_at_bar_zero(marks)
    parsed = ParsedLog(path=file, marks=marks, lines=len(lines), timestamped=timestamped, clock=clock, notes=notes)
    parsed.yearless = yearless and year == 1970 and timestamped > 0
    return parsed


def _steps_timed_by_rate(marks: list[Mark]) -> list[Mark]:
    """A step line with no timestamp whose only time is a rate in samples/s is timed by the batch the log's
    config states (the last stated before it): seconds per step = batch / rate (a timestamped line is timed
    by its clock: the batch may count gradient-accumulation micro steps the rate does not). The batch lines
    become plain clock marks."""
    batch: int | None = None
    out: list[Mark] = []
    for m in marks:
        if m.kind == "batch_size":
            batch = m.batch or batch
            if m.t is not None:
                out.append(Mark("clock", m.line, m.file, "clock", t=m.t, t_src=m.t_src))
            continue
        if m.kind == "step" and m.t is None and m.step_s is None and m.sample_rate and batch:
            m.step_s = batch / m.sample_rate
        out.append(m)
    return out


def _epoch_end_steps(marks: list[Mark]) -> list[Mark]:
    """A save at an epoch's end (mmcv's `Saving checkpoint at 12 epochs`) says that epoch's last step ran,
    though a log every N iterations may not have printed it ([900/930] then the save): that step is
    placed at the save line, so the steps count the whole epoch."""
    rows = {f.name: f for f in LINE_FORMATS if f.epoch_from is not None}
    out: list[Mark] = []
    last: Mark | None = None
    for m in marks:
        if m.kind == "step" and m.row in rows:
            last = m
        elif m.kind == "save_begin" and m.epoch is not None and m.step is None and last is not None and last.total:
            step = (m.epoch - (rows[last.row].epoch_from or 0) + 1) * last.total
            if last.step is not None and step > last.step and m.epoch == last.epoch:
                end = Mark("step", m.line, m.file, "epoch end", step=step, total=last.total, epoch=m.epoch, text=m.text)
                end.t, end.t_src = m.t, m.t_src
                out.append(end)
                last = end
        out.append(m)
    return out


def _one_record_per_step(marks: list[Mark]) -> list[Mark]:
    """A JSON-lines trainer log (JSONL_ROWS) may hold two writers' records of the same steps, interleaved and
    drifting apart (two ranks appending to one file): a record of a step already read is dropped (its time
    kept as a clock mark where it is the launch's latest), and the launch's clock never goes back within
    it. A counter that drops while the `elapsed` clock restarts near its 0 is a new launch (a resume from a
    checkpoint): its records are read from there."""
    out: list[Mark] = []
    top, clock = -1, 0.0
    for m in marks:
        if m.row not in JSONL_ROWS or m.step is None or m.rel is None:
            out.append(m)
            continue
        if m.step <= top and m.rel < 0.5 * clock:
            top, clock = -1, 0.0  # the clock restarted with the counter behind: a new launch
        if m.step <= top:
            if m.rel > clock:  # the other writer's later record still shows the launch alive then
                clock = m.rel
                out.append(Mark("clock", m.line, m.file, "clock", rel=clock, text=m.text))
            continue
        top, clock = m.step, max(clock, m.rel)
        m.rel = clock
        out.append(m)
    return out


def _open_at_zero(marks: list[Mark]) -> list[Mark]:
    """A log with no clock whose first step line is a counter's 0 printed after its step (nanoGPT's `iter 0`,
    placed at its own step time): the training began at the relative clock's 0, and that first step's time
    (compilation, warm-up) is the attempt's, not before it."""
    first = next((i for i, m in enumerate(marks) if m.kind == "step"), None)
    if first is None or any(m.t is not None and m.kind != "clock" for m in marks[:first]):
        return marks
    m = marks[first]
    if m.step != 0 or m.t_src != "derived" or not m.t or not m.step_s:
        return marks
    start = Mark("train_begin", m.line, m.file, "derived start", t=0.0, t_src="derived", text="the clock's 0")
    return [*marks[:first], start, *marks[first:]]


def _open_at_bar_zero(marks: list[Mark]) -> list[Mark]:
    """A log timed by a progress bar alone whose first line, at about the pace of the lines after it, has
    been running since step 0: the bar's clock starts with the bar (a bar resumed at step N jumps there
    within a second), so training began at its 0, not at its first printed line."""
    bar = [(i, m) for i, m in enumerate(marks) if m.kind == "step" and m.rel is not None and m.step is not None][:2]
    if len(bar) < 2 or any(m.t is not None and m.kind != "clock" for m in marks[: bar[0][0]]):
        return marks
    (i, first), (_, second) = bar
    s1, r1, s2, r2 = first.step or 0, first.rel or 0.0, second.step or 0, second.rel or 0.0
    if first.t is None or s1 <= 0 or s2 <= s1 or r2 <= r1 or r1 / s1 < 0.5 * (r2 - r1) / (s2 - s1):
        return marks
    zero = first.t - r1
    start = Mark("train_begin", first.line, first.file, "bar start", step=0, t=zero, t_src="bar", text="the bar's 0")
    return [*marks[:i], start, *marks[i:]]


def _first_year(lines: list[str]) -> int:
    """The year of the log's first dated timestamp (for glog lines, which print none)."""
    rx = CLOCKS[0][1]
    for line in lines[:20000]:
        m = rx.search(line)
        if m:
            return int(m.group("y"))
    return 1970


def _training_bar_only(marks: list[Mark]) -> list[Mark]:
    """A bare progress bar (HF Trainer's) is also drawn for evaluation and prediction: the training bar is
    the one (by its total) that runs longest; the others' lines are not steps. A run of another bar's lines
    after a training step is an evaluation pass (its first line begins it, its last ends it), so the time
    it takes is evaluation, not a hang."""
    bars: dict[int | None, float] = {}
    for m in marks:
        if m.row in SHARED_BARS:
            bars[m.total] = max(bars.get(m.total, 0.0), m.rel or 0.0)
    if len(bars) <= 1:
        return marks
    train = max(bars, key=lambda total: (bars[total], total or 0))
    out: list[Mark] = []
    run: list[Mark] = []
    trained = False
    seq: list[Mark | None] = [*marks, None]  # (None: the end, closing a last run)
    for cur in seq:
        if cur is not None and cur.row in SHARED_BARS and cur.total != train:
            run.append(cur)
            continue
        if run and trained and len({r.step for r in run}) > 1:
            took = max((r.rel or 0.0) for r in run) - (run[0].rel or 0.0)
            out += [_as_eval(run[0], "eval_begin"), _as_eval(run[-1], "eval_end", took)]
        run = []
        if cur is not None:
            trained = trained or (cur.row in SHARED_BARS and (cur.step or 0) > 0)
            out.append(cur)
    return out


def _as_eval(m: Mark, kind: str, took: float | None = None) -> Mark:
    """A line of an evaluation bar as the evaluation's begin or end: its begin is timed by the line before
    it (its own elapsed clock restarts with the bar), its end `took` (the bar's elapsed) after the begin."""
    return Mark(kind, m.line, m.file, EVAL_BAR, t=m.t, t_src=m.t_src, text=m.text, dur_s=took)


def _time_eval_bars(marks: list[Mark]) -> None:
    """An evaluation bar's end at its begin plus the bar's own elapsed time, never past the next timed
    line after it (the training bar drawn again when the evaluation is over)."""
    begin: Mark | None = None
    for i, m in enumerate(marks):
        if m.row != EVAL_BAR:
            continue
        if m.kind == "eval_begin":
            begin = m
        elif begin is not None and begin.t is not None and m.dur_s:
            nxt = next((n.t for n in marks[i + 1 :] if n.t is not None and n.t_src != "filled"), None)
            m.t = begin.t + m.dur_s if nxt is None else min(begin.t + m.dur_s, max(nxt, m.t or nxt))


def _header_lines(lines: list[str]) -> int:
    """A leading block of `# KEY: ...` comment lines (a log saved with notes on top) is not the log; a
    markdown heading's `#####` glued to the first log line (a log pasted into notes) is not such a line."""
    n = 0
    for line in lines:
        if line.rstrip() != "#" and not line.startswith(("# ", "#\t")):
            break
        n += 1
    return n


def parse_file(path: Path, display: str | None = None, year: int | None = None) -> ParsedLog:
    """A log read as diagnose reads it (analyzers/diagnose/readers/logtext.py): UTF-8 or UTF-16, and a log
    over 512 MiB by its head and its tail (the job's start and its end; the middle's lines are counted,
    not read, and the report says so)."""
    from scope.analyzers.diagnose.readers import logtext

    name = display or str(path)
    text, notes = logtext.read_log_text(path, name, logtext.MAX_LOG_BYTES, logtext.HEAD_BYTES)
    parsed = parse_text(text.replace("\r", "\n"), name, year)
    parsed.notes += [str(n) + "; goodput between them is estimated from the step numbers on either side" for n in notes]
    return parsed


# --- times -------------------------------------------------------------------------------------------------


def _assign_times(marks: list[Mark], file: str = "", notes: list[str] | None = None) -> str:
    """Fill every mark's time (see the module docstring); returns the best clock the file had. What the
    wall clock did wrong (steps back or forward) goes to `notes`."""
    has_own = any(m.t_src == "own" for m in marks)
    steps = correct_clock(marks)
    if steps and notes is not None:
        notes.append(clock_note(file, steps))
    has_bar = _align_bars(marks, has_own)
    if has_own:
        derive_back(marks)  # step lines before the first timestamp: never from a clock that starts at 0
    has_derived = _derive_steps(marks)
    _fill(marks)
    if has_own:
        return "own"
    if has_bar:
        return "bar"
    return "derived" if has_derived else "none"


def _bar_domains(marks: list[Mark]) -> list[list[Mark]]:
    """Runs of bar marks whose elapsed clock never goes back (a new bar, or a reset one, starts a run)."""
    domains: list[list[Mark]] = []
    last: float | None = None
    for m in marks:
        if m.rel is None:
            continue
        if last is None or m.rel < last - 1.0:
            domains.append([])
        domains[-1].append(m)
        last = m.rel
    return domains


def _align_bars(marks: list[Mark], has_own: bool) -> bool:
    """Map each bar's elapsed clock to the wall clock: a bar line followed by a timestamped line bounds the
    offset from above, a timestamped line followed by a bar line from below; the tightest upper bound that
    respects the lower ones wins. Without timestamps, bars are laid end to end from 0."""
    domains = _bar_domains(marks)
    if not domains:
        return False
    index = {id(m): i for i, m in enumerate(marks)}
    next_start = 0.0
    for dom in domains:
        lo, hi = -float("inf"), float("inf")
        members = {id(m) for m in dom}
        first, last = index[id(dom[0])], index[id(dom[-1])]
        prev_rel: float | None = None
        prev_own: float | None = None
        for m in marks[max(0, first - 1) : last + 2]:
            if id(m) in members and m.rel is not None:
                if prev_own is not None:
                    lo = max(lo, prev_own - m.rel)
                prev_rel, prev_own = m.rel, None
            elif m.t_src == "own" and m.t is not None:
                if prev_rel is not None:
                    hi = min(hi, m.t - prev_rel)
                prev_own, prev_rel = m.t, None
        if hi != float("inf"):
            offset = max(hi, lo)
        elif lo != -float("inf"):
            offset = lo
        elif has_own:
            continue  # a bar no timestamped line touches: leave it to the filling below
        else:
            offset = next_start  # the bar starts where the one before it ended
        for m in dom:
            if m.t_src != "own" and m.rel is not None:
                m.t, m.t_src = m.rel + offset, "bar"
        next_start = dom[-1].t or next_start
    # Marks glued after a bar on the same line take the bar's time.
    for i, m in enumerate(marks):
        if m.t is None and i and marks[i - 1].line == m.line and marks[i - 1].t is not None:
            m.t, m.t_src = marks[i - 1].t, marks[i - 1].t_src
    return True


def _derive_steps(marks: list[Mark]) -> bool:
    """A step line with no time of its own: the step before it plus its steps times its step time, no
    earlier than the line before it and no later than the next timed line."""
    derived = False
    prev_t: float | None = None
    prev_step: Mark | None = None
    started = False  # the log shows training start (the first step line counts from step 0)
    hint: int | None = None
    barrier: float | None = None
    extra = 0.0  # untimed saves / loads since the step before, by their own durations
    next_timed = _next_timed(marks)
    for i, m in enumerate(marks):
        if m.kind in ("init_begin", "init_dur", "train_begin"):
            started = True
        if m.kind in ("load_begin", "load_end", "resume", "train_begin") and m.step is not None:
            hint = m.step  # the step training continues from
        if m.kind == "init_dur" and m.t is None and prev_t is None and m.dur_s and next_timed[i] is None:
            m.t, m.t_src, prev_t = m.dur_s, "derived", m.dur_s  # no clock at all: the job starts at 0
        if m.t is None and m.kind in UNTIMED_DURATIONS and m.dur_s:
            extra += m.dur_s
        if m.t is not None and m.t_src == "own" and m.kind in BLOCKING_ENDS:
            barrier = m.t  # training went on after this line (a save, a load, a validation ended)
        if m.t is None and m.kind == "step" and m.step is not None and m.step_s is not None:
            base_t = prev_step.t if prev_step is not None and prev_step.t is not None else (prev_t or 0.0)
            if barrier is not None:
                base_t = max(base_t, barrier)
            # the first step line counts from the resumed step, from 0 when the log shows anything before it
            # (its start), else (a log cut mid-run) from itself
            first = hint if hint is not None else 0 if started or prev_t is not None else m.step
            base_step = prev_step.step if prev_step is not None and prev_step.step is not None else first
            # a counter from 0 printed after its step (nanoGPT's `iter 0`): the first line's own step ran
            ran = 1 if prev_step is None and m.step == base_step == 0 else max(0, m.step - base_step)
            t = base_t + ran * m.step_s + extra
            if m.row in LAST_STEP_TIME_ROWS and ran > 1 and prev_step is not None and prev_step.step_s:
                # only the last step's time is printed: the others ran at the line before's pace (an
                # evaluation or a save inside the last one makes it long, not the steps before it)
                t = base_t + (ran - 1) * min(prev_step.step_s, m.step_s) + m.step_s + extra
            if prev_t is not None:
                t = max(t, prev_t)
            bound = next_timed[i]
            if bound is not None:
                t = min(t, bound)
            m.t, m.t_src, derived = t, "derived", True
        if m.t is not None:
            prev_t = m.t if prev_t is None else max(prev_t, m.t)
        if m.kind == "step" and m.t is not None:
            prev_step, extra, barrier = m, 0.0, None
    return derived


def _next_timed(marks: list[Mark]) -> list[float | None]:
    out: list[float | None] = [None] * len(marks)
    nxt: float | None = None
    for i in range(len(marks) - 1, -1, -1):
        out[i] = nxt
        if marks[i].t is not None and marks[i].t_src in ("own", "bar"):
            nxt = marks[i].t
    return out


def _fill(marks: list[Mark]) -> None:
    """Untimed lines take the time of the timed line before them; a failure (a traceback: printed as the
    process dies, and its launcher notices seconds later) and an initialization time (printed as it ends)
    take the one after it, unless a failure's next timed line starts the job again (a relaunch minutes or
    days later: the failure came before that gap, not at its end)."""
    nxt: float | None = None
    nxt_kind = ""
    for m in reversed(marks):
        late = m.kind == "init_dur" or nxt_kind not in STARTS_AGAIN
        if m.t is None and m.kind in ("failure", "init_dur") and nxt is not None and late:
            m.t, m.t_src = nxt, "filled"
        if m.t is not None and m.t_src in ("own", "bar"):
            nxt, nxt_kind = m.t, m.kind
    last: float | None = None
    for m in marks:
        if m.t is None and last is not None:
            m.t, m.t_src = last, "filled"
        if m.t is not None:
            last = m.t
    nxt = None
    for m in reversed(marks):
        if m.t is None and nxt is not None:
            m.t, m.t_src = nxt, "filled"
        if m.t is not None:
            nxt = m.t
