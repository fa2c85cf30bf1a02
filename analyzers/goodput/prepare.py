"""The marks prepared for the split into attempts: one rank's voice where every rank prints, durations
attached to the marks they time (a postfix step time, a data wait, a save's or a load's length), an
initialization's duration turned into its begin, and step lines that repeat the step before them dropped.
"""

from __future__ import annotations

import statistics

from scope.analyzers.goodput.formats import DATA_FIELD_ROWS
from scope.analyzers.goodput.mark import Mark
from scope.analyzers.goodput.states import PASSIVE

# A step line's data wait this many times its steady level is a stall (a loader restarted, a slow shard); below
# it the wait varies as it does in any healthy run.
DATA_STALL_FACTOR = 2.0
# ... and above it by at least this many seconds per step, and this share of the step's own time
DATA_STALL_MIN_S = 0.05
DATA_STALL_MIN_SHARE = 0.1


def one_voice(marks: list[Mark]) -> list[Mark]:
    """Every rank printing its progress into one file (`[rank3]:` prefixes): the lowest rank speaks for the
    job; the others lend only their failures (their own "step 10" or "Saving" would read as a rollback or
    count a save twice)."""
    ranks = {m.rank for m in marks if m.kind == "step" and m.rank is not None}
    if len(ranks) <= 1:
        return marks
    voice = min(ranks)
    return [m for m in marks if m.rank is None or m.rank == voice or m.kind in ("failure", "restart", "clock")]


def data_stalls(marks: list[Mark]) -> None:
    """Each step line's data stall per step (Mark.data_stall_s), its raw wait (data_s) kept. A step line's
    own data-wait field (mmcv's `data_time`, DATA_FIELD_ROWS) is the loader's wait in every iteration, a few
    percent even in a healthy run (the batch handed over, the last prefetch): a stall is only the wait above
    its steady level (the median over the row's lines in these marks: one attempt's, so that a relaunch on
    other storage has its own), as after an epoch boundary restarts the loader workers (`data_time` 0.43 ->
    4.05), and only where it stands out: DATA_STALL_FACTOR times the steady level and, above it, at least
    DATA_STALL_MIN_S and DATA_STALL_MIN_SHARE of the line's step time (`data_time` 0.003-0.012 s beside
    `time: 0.45` is a healthy loader's jitter). A separate data timer's wait (Megatron's batch-generator, a
    record's data_ns) is a stall as it stands."""
    waits: dict[str, list[float]] = {}
    for m in marks:
        if m.kind == "step" and m.row in DATA_FIELD_ROWS and m.data_s is not None:
            waits.setdefault(m.row, []).append(m.data_s)
    steady = {row: statistics.median(w) for row, w in waits.items()}
    for m in marks:
        if m.kind != "step" or m.data_s is None:
            continue
        if m.row not in steady:
            m.data_stall_s = m.data_s
            continue
        excess = m.data_s - steady[m.row]
        floor = max(DATA_STALL_MIN_S, DATA_STALL_MIN_SHARE * (m.step_s or 0.0))
        stalled = m.data_s >= DATA_STALL_FACTOR * steady[m.row] and excess >= floor  # (0.049-0.058 s: one level)
        m.data_stall_s = excess if stalled else None


def prepare(marks: list[Mark]) -> list[Mark]:
    """Attach postfix step times and durations, expand initialization durations, and drop step lines that
    repeat the step before them (a bar reprinted): what is left are the marks that change state."""
    marks = one_voice(marks)
    out: list[Mark] = []
    last_step: Mark | None = None  # the step line just before (no other line between)
    for m in marks:
        if m.kind == "step_time":
            if last_step is not None and last_step.step_s is None:
                last_step.step_s = m.step_s
            continue
        if m.kind == "data_dur":
            target = last_step or next((x for x in reversed(out) if x.kind == "step"), None)
            if target is not None and m.dur_s is not None:
                target.data_s = m.dur_s
            continue
        if m.kind == "init_dur" and m.dur_s and m.t is not None:
            out.append(Mark("init_begin", m.line, m.file, m.row, t=m.t - m.dur_s, t_src="derived", text=m.text))
            continue
        if m.kind in ("save_dur", "load_dur"):
            _attach_duration(out, m)
            continue
        if _background_write_done(out, m):
            continue
        if m.kind in ("save_end", "load_end") and _needs_begin(out, m):
            # an end line that says how long it took, with no begin line: the save began that long ago
            kind = m.kind[:4] + "_begin"
            out.append(
                Mark(
                    kind,
                    m.line,
                    m.file,
                    m.row,
                    step=m.step,
                    t=(m.t or 0.0) - (m.dur_s or 0.0),
                    t_src="derived",
                    text=m.text,
                )
            )
        if m.kind == "step":
            if m.step is None or (last_step is not None and m.step == last_step.step):
                if last_step is not None and last_step.step_s is None and m.step_s is not None:
                    last_step.step_s = m.step_s
                if last_step is not None and last_step.data_s is None and m.data_s is not None:
                    last_step.data_s = m.data_s  # (the hook's last step: its end record, then its progress line)
                continue
            last_step = m
        elif m.kind not in PASSIVE:
            last_step = None
        out.append(m)
    _anchor_timer_saves(out)
    return [m for m in out if m.t is not None or m.kind == "step"]


# The line of an async save's background write finishing (Megatron-LM's `successfully saved checkpoint`,
# written by its finalize function; NeMo 2's AsyncFinalizerCallback writes it with a capital S)
BACKGROUND_WRITE_DONE_ROWS = frozenset({"megatron_save_end"})
# Lines that say a save's blocking part is over and the rest was handed to the background
ASYNC_HANDED_OVER_ROWS = frozenset({"nemo2_async_scheduled"})


def _background_write_done(out: list[Mark], m: Mark) -> bool:
    """A `saved checkpoint` line of a save already handed to the background: mid-training it is the
    background write finishing (training went on meanwhile, nothing blocked), no end of a save. The save
    was handed over when its last line was NeMo 2's `Scheduled async checkpoint save`, or when Megatron-LM's
    save-checkpoint timer (printed once save_checkpoint returns) came before it: a synchronous save prints
    its `successfully saved` inside save_checkpoint, before its timer. Inside the final flush
    (timeline.FINAL_FLUSH_ROW) the same line ends the wait, and is kept."""
    if m.kind != "save_end" or m.row not in BACKGROUND_WRITE_DONE_ROWS:
        return False
    last = next((x for x in reversed(out) if x.kind.startswith("save")), None)
    if last is None:
        return False
    if last.row in ASYNC_HANDED_OVER_ROWS:
        return True
    if last.kind == "save_end" and last.t_src == "derived" and last.dur_s:
        return True  # a save known by its timer alone (_save_of_its_timer): the timer came first
    return last.kind == "save_begin" and last.row == "megatron_save_begin" and last.dur_s is not None


def _anchor_timer_saves(out: list[Mark]) -> None:
    """A save known only by its timer ran last before the next iteration's interval, not right after the
    iteration line before it: Megatron's loop logs the iteration (training_log), then evaluates
    (evaluate_and_print_results), then saves (checkpoint_and_decide_exit), then goes on stepping. The next
    iteration line's own time less its interval (steps x its elapsed time per iteration) is where the save
    ended; an evaluation printed between (lines with no time of their own) keeps the time before it. Only
    where the next iteration line goes on from the one before (a rollback's relaunch counts from elsewhere)
    and the save so placed ends by that line; otherwise it stays where it began (_save_of_its_timer), and
    never runs past the next line (_cap_timer_save)."""
    for i, m in enumerate(out):
        if i == 0 or m.kind != "save_end" or m.t_src != "derived" or m.text != out[i - 1].text or not m.dur_s:
            continue
        begin = out[i - 1]
        before = next((x for x in reversed(out[: i - 1]) if x.kind == "step" and x.step is not None), None)
        after = next((x for x in out[i + 1 :] if x.kind not in PASSIVE and x.t is not None), None)
        _anchor_timer_save(begin, m, before, after)
        _cap_timer_save(begin, m, after)


def _anchor_timer_save(begin: Mark, end: Mark, before: Mark | None, after: Mark | None) -> None:
    if before is None or after is None or after.kind != "step" or after.t_src != "own" or not end.dur_s:
        return
    if after.t is None or after.step is None or after.step_s is None or before.step is None or begin.t is None:
        return
    if after.step <= before.step:
        return  # (a relaunch that rolled back: the interval before its line is not this run's)
    ended = after.t - (after.step - before.step) * after.step_s
    if ended - end.dur_s > begin.t and ended <= after.t:
        begin.t, end.t = ended - end.dur_s, ended


def _cap_timer_save(begin: Mark, end: Mark, after: Mark | None) -> None:
    """A save known by its timer never runs past the next line that says something: a timer longer than the
    gap the log shows (60 s against 20 s to the next iteration: a timer's max over ranks, or a clock that
    slipped) is cut there: the log shows no more room for it."""
    if after is None or after.t is None or end.t is None or begin.t is None or end.t <= after.t:
        return
    timer = end.dur_s or 0.0
    end.t = max(begin.t, after.t)
    end.dur_s = begin.dur_s = end.t - begin.t  # (its timer's rest would run on over the lines after)
    end.note = (
        f"the save timer at line {end.line} says {timer:.1f} s, longer than the {end.dur_s:.1f} s the log shows "
        "before its next line: the save is counted up to that line"
    )


def _needs_begin(out: list[Mark], m: Mark) -> bool:
    if m.t_src != "own" or not m.dur_s or m.t is None:
        return False
    kind = m.kind[:4]
    for prev in reversed(out):
        if prev.kind in (f"{kind}_begin", f"{kind}_progress"):
            return prev.t is None or prev.t < m.t - m.dur_s - 2.0  # a begin long before: another save's
        if prev.kind == f"{kind}_end":
            return True
    return True


def _attach_duration(out: list[Mark], m: Mark) -> None:
    """A timer's duration goes to the save (load) line before it; a save timer with no save line since the
    step before is the only line of its save: the save ran that long after that step's line."""
    kind = "save" if m.kind == "save_dur" else "load"
    for prev in reversed(out):
        if prev.kind.startswith(kind):
            if prev.dur_s is None:
                prev.dur_s = m.dur_s
            return
        if prev.kind == "step" and kind == "save":
            out.extend(_save_of_its_timer(m))
            return


def _save_of_its_timer(m: Mark) -> list[Mark]:
    """The save a timer line alone shows (Megatron's `save-checkpoint ...: (min, max)`, printed by
    save_checkpoint_and_time once the save is done, in a log that keeps no `saving checkpoint` line): it
    began at the line's time (that of the step line before it: the timer's line has none of its own, and
    Megatron saves right after logging the iteration) and blocked for its duration."""
    if m.t is None or not m.dur_s or m.t_src not in ("filled", "own"):
        return []
    begin = Mark("save_begin", m.line, m.file, m.row, t=m.t, t_src="derived", text=m.text)
    end = Mark("save_end", m.line, m.file, m.row, t=m.t + m.dur_s, t_src="derived", text=m.text, dur_s=m.dur_s)
    return [begin, end]
