"""Every mark's time.

Times come, in order of trust, from a timestamp on the line itself (CLOCKS), from a progress bar's
relative clock aligned to the wall clock by the timestamped lines around it, or are derived: a step line
without a time is placed after the step before it by its own elapsed-time field (never past the next
timestamped line), any other line takes the time of the line before it (or, before the first timestamp,
the one after it). A line may hold several marks (progress bars glued together without newlines); each
takes the time written before it on that line.
"""

from __future__ import annotations

from scope.analyzers.goodput.clock import clock_note, correct_clock, derive_back
from scope.analyzers.goodput.formats import LAST_STEP_TIME_ROWS, LINE_FORMATS
from scope.analyzers.goodput.mark import Mark

# Lines whose duration moves the derived clock of a log with no timestamps (the elapsed-time fields of
# Megatron's iterations exclude saves and loads; litgpt's iteration times exclude its validation passes).
UNTIMED_DURATIONS = frozenset({"save_end", "save_dur", "load_end", "load_dur", "eval_end"})
# Lines that start the job (again): an untimed failure before one is not placed at its time.
STARTS_AGAIN = frozenset({"step", "init_begin", "init_mark", "train_begin", "load_begin", "load_progress", "load_end"})
# Timestamped lines after which the steps that follow ran (their step times count from there).
BLOCKING_ENDS = frozenset({"save_end", "load_end", "eval_end", "train_begin"})


def assign_times(marks: list[Mark], file: str = "", notes: list[str] | None = None) -> str:
    """Fill every mark's time (see the module docstring); returns the best clock the file had. What the
    wall clock did wrong (steps back or forward) goes to `notes`."""
    has_own = any(m.t_src == "own" for m in marks)
    steps = correct_clock(marks)
    if steps and notes is not None:
        notes.append(clock_note(file, steps))
    has_bar = _align_bars(marks, has_own, notes, file)
    if has_own:
        derive_back(marks)  # step lines before the first timestamp: never from a clock that starts at 0
    has_derived = _derive_steps(marks)
    _fill(marks)
    if has_own:
        return "own"
    if has_bar:
        return "bar"
    return "derived" if has_derived else "none"


# The report's note where a bar run had to be squeezed under the next timestamp (report.cannot_compute).
BAR_SQUEEZED = "its progress bar's elapsed time runs past the next timestamped line"
# Per-epoch bars (a formats row with `epoch_from`): each epoch draws a new bar, its clock restarted.
_PER_EPOCH_BARS = frozenset(f.name for f in LINE_FORMATS if f.clock and f.epoch_from is not None)


def _bar_domains(marks: list[Mark]) -> list[list[Mark]]:
    """Runs of bar marks whose elapsed clock never goes back (a new bar, or a reset one, starts a run), in
    the order their first marks come. A training bar and an evaluation bar drawn between its frames
    (Lightning 1.x draws both at once) each keep their own run; a per-epoch bar's next epoch is a new run
    even where its finished lines alone are kept (`Epoch 1: 100%| 50/50 [00:16<00:00` after epoch 0's at
    00:16: the same elapsed, a new bar)."""
    domains: list[list[Mark]] = []
    current: dict[bool, list[Mark]] = {}
    trains = 0  # training runs so far: an evaluation bar after a new one is a new pass
    since: dict[int, int] = {}  # an evaluation run's training-bar run
    for m in marks:
        if m.rel is None:
            continue
        stream = m.kind != "eval_begin"  # (an evaluation's bar, its own clock; records share the run's)
        run = current.get(stream)
        last = run[-1] if run else None
        if not stream and run and since.get(id(run)) != trains:
            last = None  # (the pass before was followed by a training bar's new run: this is the next pass)
        new_epoch = (
            last is not None
            and m.row in _PER_EPOCH_BARS
            and last.row == m.row
            and m.epoch is not None
            and last.epoch is not None
            and m.epoch > last.epoch
        )
        if last is None or last.rel is None or m.rel < last.rel - 1.0 or new_epoch:
            run = current[stream] = []
            domains.append(run)
            trains += stream
            since[id(run)] = trains
        assert run is not None
        run.append(m)
    return domains


def _align_bars(marks: list[Mark], has_own: bool, notes: list[str] | None = None, file: str = "") -> bool:
    """Map each bar's elapsed clock to the wall clock: a bar line followed by a timestamped line bounds the
    offset from above, a timestamped line followed by a bar line from below; the tightest upper bound that
    respects the lower ones wins. A bar run no timestamped line touches (an epoch's bar after the one before
    it, a validation bar between two epochs' bars) starts where the line before it is (the run before it
    ended there), its end no later than the next timestamped line: a run that would pass it is squeezed
    under it (said in `notes`), never given time the log does not show. Without timestamps, bars are laid
    end to end from 0; a bar before the first timestamp is left to the filling below."""
    domains = _bar_domains(marks)
    if not domains:
        return False
    index = {id(m): i for i, m in enumerate(marks)}
    domains.sort(key=lambda dom: index[id(dom[0])])
    squeezed: list[Mark] = []
    ends: list[tuple[int, float]] = []  # each placed run's last line and the time it ended
    begins: list[tuple[int, Mark]] = []  # evaluation passes' starts, before their first kept lines
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
        scale = 1.0
        if hi != float("inf"):
            offset = max(hi, lo)
        elif lo != -float("inf"):
            offset = lo
        else:
            before = [m.t for m in marks[:first] if m.t is not None and m.t_src in ("own", "bar")]
            before += [end for at, end in ends if at < first]
            if has_own and not before:
                continue  # a bar before the first timestamp: left to the filling below
            offset = max(before, default=0.0)  # (the run before it ended there, or a relaunch's stamp)
            cap = next((m.t for m in marks[first + 1 :] if m.t_src == "own" and m.t is not None), None)
            span = max((m.rel or 0.0) for m in dom)
            if cap is not None and span > 0 and offset + span > cap:
                scale = max(0.0, cap - offset) / span
                squeezed.append(dom[0])
        for m in dom:
            if m.t_src != "own" and m.rel is not None:
                m.t, m.t_src = offset + m.rel * scale, "bar"
        ends.append((last, offset + max((m.rel or 0.0) for m in dom) * scale))
        head = dom[0]
        if head.kind == "eval_begin" and head.t_src == "bar" and head.rel:
            # an evaluation bar's first kept line drawn `rel` into the pass (its finished line alone): the pass
            # began at its bar's 0
            begins.append(
                (first, Mark("eval_begin", head.line, head.file, head.row, t=offset, t_src="bar", text=head.text))
            )
    if squeezed and notes is not None:
        where = f"{file}:{squeezed[0].line}" if file else f"line {squeezed[0].line}"
        more = f" and {len(squeezed) - 1} more bar run(s)" if len(squeezed) > 1 else ""
        notes.append(
            f"{where}{more}: {BAR_SQUEEZED}: the run was squeezed between the line before it and that timestamp "
            "(its steps' times there are estimates)"
        )
    for at, begin in reversed(begins):
        marks.insert(at, begin)
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
            if m.kind == "eval_end" and prev_step is not None and prev_step.t is not None:
                # the pass ran after the step line before it: it ends its own time later (an evaluation)
                m.t, m.t_src, derived = prev_step.t + extra, "derived", True
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
            if m.step < base_step:  # the counter went back (a relaunch): from the step it resumed at, or 0
                base_step = hint if hint is not None and hint < m.step else 0
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
        if m.t is not None and m.t_src in ("own", "bar") and not (m.kind == "clock" and m.t == nxt):
            nxt, nxt_kind = m.t, m.kind  # (a launcher's blank banner lines, same instant: its start still decides)
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
