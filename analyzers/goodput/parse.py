"""Read a training log into marks: what happened (formats.LINE_FORMATS line by line, line_marks.py, or a
step line recognised by its structure alone, structural.py), at which step, and when (times.py); the
passes between (mark_passes.py) fix what one line alone cannot say."""

from __future__ import annotations

import codecs
import itertools
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from scope.analyzers.goodput.clock import time_order
from scope.analyzers.goodput.epoch_bars import (
    RelaunchGaps,
    bar_reset_redraws_out,
    lightning_optimizer_steps,
    redrawn_frames_out,
    reused_bar_epochs,
)
from scope.analyzers.goodput.evaluated_steps import first_steps_from_evaluation
from scope.analyzers.goodput.evaluation_bars import evaluation_bars_out
from scope.analyzers.goodput.formats import ANSI, CLOCKS
from scope.analyzers.goodput.formats.launchers import GLOG_PREFIX
from scope.analyzers.goodput.hf_trainer import trainer_steps
from scope.analyzers.goodput.line_marks import scan_line
from scope.analyzers.goodput.mark import Mark
from scope.analyzers.goodput.mark_passes import (
    bars_before_training_out,
    buffered_steps_before_end,
    data_bars_out,
    epoch_end_steps,
    evaluations_after_epoch_end,
    job_reports_first,
    negative_step_times,
    one_record_per_step,
    open_at_bar_zero,
    open_at_zero,
    other_writers_bar_frames_out,
    results_close_open_evaluations,
    steps_flushed_after_end,
    steps_timed_by_rate,
    time_eval_bars,
    training_bar_only,
    unitless_step_times_by_clock,
)
from scope.analyzers.goodput.rounded_steps import counted_steps, rounded_steps
from scope.analyzers.goodput.stated_hangs import place_untimed_timeouts
from scope.analyzers.goodput.structural import (
    accept_structural,
    known_rows_across_epochs,
    structural_epoch,
    structural_epoch_end,
    structural_eval,
    structural_eval_time,
    structural_optimizer_step,
    structural_per_epoch,
    structural_save,
    structural_step,
)
from scope.analyzers.goodput.times import assign_times
from scope.analyzers.goodput.training_clock import training_clock_steps

MAX_LINE = 1 << 16
# A line a known row reads as a step, or as a start-up phase reached (DeepSpeed's engine reporting `step=0` as
# it is built), is no step line by its structure
_NO_STRUCTURAL_STEP = frozenset({"step", "init_mark"})
# torchrun --tee / --log-line-prefix-template ("[rank3]:"), Ray / SkyPilot ("(head, rank=0, pid=5752)")
# pdsh (DeepSpeed's multinode runner) and clush prefix each line with the host that printed it: `localhost: `,
# `192.168.205.202: `, `x3006c0s13b0n0: ` (a name with a digit: a word like `INFO:` or `Epoch:` is no host)
_HOST_PREFIX = re.compile(
    r"^(?:localhost|\d{1,3}(?:\.\d{1,3}){3}|(?!(?i:rank|step|epoch|iter|batch|update|stage))[A-Za-z][\w-]*\d[\w.-]*): "
)

# rich's logging handler (formats.CLOCKS "rich") prints a record's time only when it differs from the record
# before's: a record with no time of its own opens with the time column blank, then its level name
_RICH_STAMP = re.compile(r"^\[\d\d/\d\d/\d\d \d\d:\d\d:\d\d\] ")
# glog's prefix (`W0116 02:42:00.100000 846000 torch/distributed/elastic/agent/server/api.py:704]`): kept as
# the text of a line that says nothing else, for the PID that tells whose line it is (launches.py)
_RICH_UNSTAMPED = re.compile(r"^ {11,}(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) ")


@dataclass
class ParsedLog:
    path: str
    marks: list[Mark]
    lines: int
    timestamped: int  # lines with a wall-clock timestamp
    clock: str  # own | bar | derived | none: the best time source the file had
    notes: list[str] = field(default_factory=list)  # what of the file was not read
    yearless: bool = False  # its timestamps print no year (glog) and none of its lines gave one


def _structural_mark(line: str, lineno: int, file: str, stamped: bool, alone: bool) -> Mark | None:
    """The mark a line of a format no row lists gives by its structure: a validation pass that states its
    time (before the step reading, whose counter and time field it also has), a step, or, on a timestamped
    line no row read (`alone`), an evaluation's end, a save's start or an epoch's end."""
    text = line.strip()[:160]
    took = structural_eval_time(line)
    if took is not None:
        return Mark("eval_end", lineno, file, "structural", text=text, dur_s=took)
    found = structural_step(line, stamped=stamped)
    if found is not None:
        step, total, step_s = found
        mark = Mark("step", lineno, file, "structural", step=step, total=total, step_s=step_s, text=text)
        mark.epoch = structural_epoch(line)
        if mark.epoch is not None:  # (only a line naming its epoch can state the epoch's steps)
            mark.epochs, mark.per_epoch = structural_per_epoch(line) or (None, None)
        mark.opt_step = structural_optimizer_step(line)
        return mark
    if not (stamped and alone):
        return None
    if structural_eval(line):
        return Mark("eval_end", lineno, file, "structural", text=text)
    if structural_save(line):
        return Mark("save_begin", lineno, file, "structural", text=text)
    return Mark("epoch_end", lineno, file, "structural", text=text) if structural_epoch_end(line) else None


def _glued_frames(line_marks: list[Mark]) -> bool:
    """Two or more bar frames on one line: a log that lost tqdm's `\\r` (formats/hf.GLUED_BAR_FRAME) keeps
    each newline's worth of frames on a line, and a stamped record that ends the line (HF's `Saving model
    checkpoint to ...` every save_steps, under the examples' asctime format) was written after all of them,
    tens of steps later than the first: the frames keep their bar's clock, the stamp bounds it from above (a
    clock mark after them). One frame on a stamped line (a collector's stamp on each frame) takes the stamp."""
    rows = [mark.row for mark in line_marks if mark.kind == "step" and mark.rel is not None]
    return any(rows.count(row) > 1 for row in set(rows))  # (two rows may read the same frame: once each)


def _epoch_beside_counter(line_marks: list[Mark], line: str) -> None:
    """A known row's step counter that names no epoch, on a line that states one (`epoch:[  2/100] train
    step:0`, PaddleVideo's log_batch read by the `step:N loss:` row): the epoch is kept, so that a counter
    restarting every epoch reads as the next epoch (structural.known_rows_across_epochs), not a relaunch.
    The line is read once, not once per mark (a line of glued bar frames has hundreds)."""
    counters = [m for m in line_marks if m.kind == "step" and m.epoch is None and m.row != "structural"]
    epoch = structural_epoch(line) if counters else None
    for mark in counters:
        mark.epoch = epoch


# A log's lines are read a chunk of text at a time, never all of them as one list beside the text: a chunk
# ends at a line break, so that its lines are the whole text's
_CHUNK = 1 << 20


def _lines(text: str, carriage_returns: bool) -> Iterator[str]:
    """`text.splitlines()` (of `text.replace("\\r", "\\n")` where `carriage_returns`: then a `\\r` ends a chunk
    too, a tqdm bar written to a file being one line by its `\\n`s), a chunk at a time."""
    start, n = 0, len(text)
    while start < n:
        at = min(start + _CHUNK, n) - 1
        end = text.find("\n", at)
        if carriage_returns:
            cr = text.find("\r", at, end if end >= 0 else n)
            end = cr if cr >= 0 else end
        end = n if end < 0 else end + 1
        chunk = text if start == 0 and end == n else text[start:end]
        yield from (chunk.replace("\r", "\n") if carriage_returns else chunk).splitlines()
        start = end


def _file_lines(path: Path) -> Iterator[str]:
    """The lines of a log as parse_file read them from read_log_text's whole text (UTF-8 or UTF-16, a
    byte-order mark dropped, a `\\r` ending a line), decoded a chunk at a time: a log of bar frames is one
    line by its `\\n`s, and its whole text (two or four bytes a character where one is past Latin-1: the
    bar's blocks, an emoji) was itself several times the log."""
    from scope.analyzers.diagnose.readers import logtext

    with path.open("rb") as fh:
        data = fh.read(4096)
        decoder = codecs.getincrementaldecoder(logtext.utf16_encoding(data) or "utf-8")(errors="replace")
        pending: list[str] = []  # decoded text with no line break yet
        first = True
        while True:
            piece = decoder.decode(data, final=not data)
            if first and piece:
                piece, first = piece[1:] if piece.startswith("\ufeff") else piece, False
            cut = max(piece.rfind("\n"), piece.rfind("\r"))
            if not data or cut >= 0:
                end = len(piece) if not data else cut + 1
                yield from _lines("".join(pending) + piece[:end] if pending else piece[:end], True)
                pending = [piece[end:]]
            else:
                pending.append(piece)
            if not data:
                return
            data = fh.read(_CHUNK)


class _FrameRun:
    """Consecutive frames of one progress bar in one second of its clock: the last is kept; the ones before it
    add nothing the timeline reads (the same clock, a count the last one passes). tqdm redraws a bar every
    0.1 s (mininterval): a fast loop's log is ten frames a second, and a mark per frame made goodput's memory
    twenty times the log's (benchmarks/goodput_bars.py). A frame replaces the one before it only inside a run
    of the bar's frames whose count and clock never went back (a reset, a relaunch, another writer's frame
    starts a run afresh), never one of the run's first two (the bar's opening pace:
    mark_passes.open_at_bar_zero), and never across a frame with a timestamp of its own or any other mark
    (what aligns the bar's clock to the wall clock and orders the log's events)."""

    __slots__ = ("length", "prev")

    def __init__(self) -> None:
        self.prev: Mark | None = None
        self.length = 0

    def add(self, marks: list[Mark], mark: Mark) -> None:
        """Append `mark` to `marks`, in place of the frame before it where that adds nothing."""
        prev = self.prev
        if mark.kind != "step" or mark.rel is None or mark.t is not None or mark.step is None:
            self.prev, self.length = None, 0
            marks.append(mark)
            return
        if (
            prev is None
            or not marks
            or marks[-1] is not prev
            or prev.row != mark.row
            or prev.total != mark.total
            or prev.epoch != mark.epoch
            or prev.rank != mark.rank
            or (prev.step or 0) > mark.step
            or (prev.rel or 0.0) > mark.rel
        ):
            self.prev, self.length = mark, 1
            marks.append(mark)
            return
        if self.length > 2 and prev.rel == mark.rel:
            marks[-1] = mark  # (the same second of the bar's clock: the frame before adds nothing)
        else:
            marks.append(mark)
            self.length += 1
        self.prev = mark


def parse_text(text: str, file: str, year: int | None = None, carriage_returns: bool = False) -> ParsedLog:
    """A log's marks; `year` for timestamps that print none (glog) when the log's own lines give none;
    `carriage_returns`: a `\\r` ends a line too (a bar's frames), as in `text.replace("\\r", "\\n")`."""
    return _parse(lambda: _lines(text, carriage_returns), file, year)


def _parse(lines: Callable[[], Iterator[str]], file: str, year: int | None) -> ParsedLog:
    """parse_text of the lines `lines()` gives (read twice: the log's start for its year and header first)."""
    marks: list[Mark] = []
    candidates: list[Mark] = []  # step lines recognised by their structure alone
    timestamped = 0
    header = _header_lines(lines())
    own_year = _first_year(itertools.islice(lines(), 20000))
    yearless = own_year == 1970
    year = year if year and yearless else own_year
    rich_t: float | None = None  # the time of rich's last stamped record
    run = _FrameRun()
    lineno = 0
    for lineno, raw in enumerate(lines(), 1):
        if lineno <= header or not raw:  # (the unread middle of a huge log is empty lines)
            continue
        line = _HOST_PREFIX.sub("", ANSI.sub("", raw[:MAX_LINE]), count=1)
        line_marks, clocks = scan_line(line, lineno, file, year)
        _epoch_beside_counter(line_marks, line)
        if not any(m.kind in _NO_STRUCTURAL_STEP for m in line_marks):
            found = _structural_mark(line, lineno, file, stamped=bool(clocks), alone=not line_marks)
            if found is not None:
                candidates.append(found)
                line_marks.append(found)
        if clocks:
            timestamped += 1
            t = clocks[0][1]
            rich_t = t if _RICH_STAMP.match(line) else None
            glued = _glued_frames(line_marks)
            for mark in line_marks:
                if glued and mark.rel is not None:
                    continue  # (a frame drawn before the line's record: on its bar's own clock)
                mark.t, mark.t_src = t, "own"
                if mark.kind.endswith("_begin") and mark.dur_s:  # a bar's last state: it began `elapsed` ago
                    mark.t -= mark.dur_s
            if glued and not any(mark.t is not None for mark in line_marks):
                line_marks.append(Mark(kind="clock", line=lineno, file=file, row="clock", t=t, t_src="own"))
            if not line_marks:
                glog = GLOG_PREFIX.search(line)
                text = glog.group(0) if glog else ""
                marks.append(Mark(kind="clock", line=lineno, file=file, row="clock", t=t, t_src="own", text=text))
        elif line[:1].isspace() and marks and marks[-1].row == "clock" and marks[-1].line == lineno - 1:
            for mark in line_marks:  # a record's indented continuation (rich's handler): the header's time
                if mark.rel is None:  # (not a bar's frames, drawn by tqdm, `  0%|` padded: their own clock)
                    mark.t, mark.t_src = marks[-1].t, "own"
        elif rich_t is not None and _RICH_UNSTAMPED.match(line):
            for mark in line_marks:  # a rich record logged in its predecessor's second
                mark.t, mark.t_src = rich_t, "own"
        for mark in line_marks:
            run.add(marks, mark)
    notes = known_rows_across_epochs(marks, file)
    marks, structural_notes = accept_structural(
        bars_before_training_out(evaluation_bars_out(data_bars_out(marks))), candidates, file
    )
    notes += structural_notes
    marks = evaluations_after_epoch_end(
        lightning_optimizer_steps(
            other_writers_bar_frames_out(
                bar_reset_redraws_out(
                    redrawn_frames_out(
                        reused_bar_epochs(rounded_steps(counted_steps(marks)), _start_up_again(lines, header))
                    )
                )
            )
        )
    )
    marks = steps_timed_by_rate(marks)
    marks = first_steps_from_evaluation(epoch_end_steps(results_close_open_evaluations(marks)))
    marks, hf_notes = trainer_steps(marks, file)
    notes += hf_notes
    marks = training_bar_only(marks)
    marks = one_record_per_step(marks)
    marks = buffered_steps_before_end(negative_step_times(marks))
    marks, moved = time_order(job_reports_first(marks))
    marks = steps_flushed_after_end(marks)
    if moved:
        notes.append(
            f"{file}: {moved} step line(s) were written out of time order (several writers?): read in the order "
            "of their timestamps"
        )
    marks, clock_notes = training_clock_steps(marks, file)
    if clock_notes:
        notes += clock_notes
        timestamped = sum(1 for m in marks if m.t_src == "own")  # (none are the training's: no wall clock)
    clock = assign_times(marks, file, notes)
    marks = place_untimed_timeouts(marks)
    time_eval_bars(marks)
    unitless_step_times_by_clock(marks)
    if clock == "derived":
        marks = open_at_zero(marks)
    elif clock == "bar":
        marks = open_at_bar_zero(marks)
    parsed = ParsedLog(path=file, marks=marks, lines=lineno, timestamped=timestamped, clock=clock, notes=notes)
    parsed.yearless = yearless and year == 1970 and timestamped > 0
    return parsed


def _first_year(lines: Iterable[str]) -> int:
    """The year of the log's first dated timestamp (for glog lines, which print none)."""
    rx = CLOCKS[0].regex
    for line in lines:
        m = rx.search(line)
        if m:
            return int(m.group("y"))
    return 1970


_DIGITS = re.compile(r"\d+")
# a first line shorter than this (digits masked) says too little to be told from any other line
_START_UP_MIN = 12


def _start_up_again(lines: Callable[[], Iterator[str]], header: int) -> RelaunchGaps:
    """The gaps in which the log's first line is printed again (its numbers aside: a time, a pid): a process
    that starts again prints its program's start-up output again, launcher line or not (a supervisor's
    restart loop, Slurm's requeue into the same file, a SIGKILL that leaves no traceback). A first line right
    above the bar's first frame may be a loop's header printed every epoch (`epoch 1/6`): it tells a
    relaunch only where some gap lacks it."""

    def again(first_frame: int, gaps: list[tuple[int, int]]) -> set[tuple[int, int]]:
        start, above, found = "", 0, set()
        k, first_no = 0, 0
        for lineno, raw in enumerate(lines(), 1):
            if lineno < first_frame:
                line = _DIGITS.sub("0", ANSI.sub("", raw[:MAX_LINE])).strip() if lineno > header else ""
                if line and not first_no:
                    start, first_no = line, lineno
                above = lineno if line else above
                continue
            if len(start) < _START_UP_MIN:
                return set()
            while k < len(gaps) and gaps[k][1] <= lineno:
                k += 1
            if k == len(gaps):
                break
            if gaps[k][0] < lineno and _DIGITS.sub("0", ANSI.sub("", raw[:MAX_LINE])).strip() == start:
                found.add(gaps[k])
        return set() if above == first_no and len(found) == len(gaps) else found

    return again


def _header_lines(lines: Iterable[str]) -> int:
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
    if path.stat().st_size <= logtext.MAX_LOG_BYTES:  # (read as it is parsed: never the whole text at once)
        return _parse(lambda: _file_lines(path), name, year)
    text, notes = logtext.read_log_text(path, name, logtext.MAX_LOG_BYTES, logtext.HEAD_BYTES)
    parsed = parse_text(text, name, year, carriage_returns=True)
    parsed.notes += [str(n) + "; goodput between them is estimated from the step numbers on either side" for n in notes]
    return parsed
