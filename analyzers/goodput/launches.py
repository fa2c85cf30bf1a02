"""Launches in a training log: the start-up lines of each (formats/startup.py and the other init_begin rows),
a launch that never reached a step kept as an attempt of its own, a relaunch from scratch (a new run, not a
rollback), and what the gap between two attempts was: a restart, a queue, or the time between two jobs."""

from __future__ import annotations

from itertools import pairwise

from scope.analyzers.goodput.mark import Mark
from scope.analyzers.goodput.states import FAILED_ENDS, HANG_MIN_S, PASSIVE, Attempt, Interval


def launch_lines_forward(attempts: list[Attempt]) -> list[Attempt]:
    """Timestamped lines a launch prints before its start-up line (a download, a config echo) after a silence
    longer than the hang allowance belong to that launch, not to the attempt before: that one ended at its
    last line that said something, and the silence between is the gap between the two."""
    for prev, nxt in pairwise(attempts):
        if not nxt.marks or nxt.marks[0].kind != "init_begin":
            continue
        said = [m.t for m in prev.marks if m.t is not None and m.kind not in PASSIVE]
        if not said:
            continue
        cut = len(prev.marks)
        while (
            cut > 0 and prev.marks[cut - 1].kind == "clock" and (prev.marks[cut - 1].t or 0.0) > said[-1] + HANG_MIN_S
        ):
            cut -= 1
        if cut < len(prev.marks):
            nxt.marks[:0], prev.marks[cut:] = prev.marks[cut:], []
    return attempts


class Launch:
    """The start-up lines (init_begin rows) the current attempt began with, and whether it went on past them:
    the same start-up line again after that (a load, a failure, an interrupt between), or after a silence
    longer than the hang allowance, is the next launch, though this one never reached a step (a crash at
    start-up, a launch killed while it loaded): not the same launch's ranks each printing it."""

    def __init__(self) -> None:
        self.rows: set[str] = set()
        self.went_on = False

    def again(self, m: Mark, last_t: float | None) -> bool:
        if m.kind != "init_begin" or m.row not in self.rows:
            return False
        silence = m.t is not None and last_t is not None and m.t - last_t > HANG_MIN_S
        return self.went_on or silence

    def note(self, m: Mark) -> None:
        if m.kind == "init_begin":
            if m.row != "first line":
                self.rows.add(m.row)
        elif self.rows and m.kind not in PASSIVE and m.kind != "init_mark":
            self.went_on = True


def silent_before(m: Mark, last: Mark | None) -> bool:
    """The line comes after a silence past the hang allowance, by its own time and the line before's (a line
    that took its time from another says nothing of when it ran)."""
    if m.t is None or last is None or last.t is None or m.t_src != "own" or last.t_src not in ("own", "bar"):
        return False
    return m.t - last.t > HANG_MIN_S


def from_scratch(a: Attempt) -> bool:
    """The attempt starts its step counter again at 0 or 1 (its first line one log interval past 0) with no
    line saying it resumed (no checkpoint load, no resume line, no `Training starts at step N` past 1): a
    new run. A counter that restarts further on with no such line is a rollback (a resume the log does
    not show)."""
    if a.first_step is None or any(m.kind in ("load_begin", "load_end", "resume") for m in a.marks):
        return False
    return a.resume_step == 0 or a.first_step <= 1  # (0: its first line within one log interval of 0)


def discarded_steps(attempts: list[Attempt]) -> int:
    """Steps of runs a later relaunch from scratch left behind (the run before it did not complete): the new
    run does not go on from them, nor redo them; they are discarded (a run that completed discards nothing)."""
    shown = [a for a in attempts if a.first_step is not None or a.resume_step is not None]
    lost = 0
    for prev, nxt in pairwise(shown):
        if prev.last_step is not None and from_scratch(nxt) and prev.ended != "completed":
            lost += max(0, prev.steps_done)
    return lost


_ENDINGS = frozenset({"failure", "restart", "stop", "interrupt", "train_end", "job_end"})


def between(prev: Attempt, nxt: Attempt, gap: float) -> str:
    """The gap after an attempt: restarting after a failure, or waiting to be scheduled again after an
    attempt that ended by itself (a planned exit, a time limit's save-and-exit, Ctrl-C); after a silence
    past the hang allowance, a launch from step 0 with nothing loaded is another job: the time between two
    jobs is neither's (two runs in one log, days apart)."""
    said = [m for m in prev.marks if m.t is not None and m.kind not in PASSIVE]
    if said and said[-1].t_src == "filled" and said[-1].kind not in _ENDINGS and gap > HANG_MIN_S:
        # its last line, no ending, took its time from another line: when it ended is not known
        return "unexplained"
    if prev.ended in (*FAILED_ENDS, "membership_change"):
        return "failure_to_restart"
    return "between_jobs" if gap > HANG_MIN_S and from_scratch(nxt) else "queued"


def gaps(attempts: list[Attempt]) -> list[Interval]:
    """The time between attempts, to the next one's first line that says something (a bare timestamp, the
    launcher stopping the old group, is still the restart), by how the one before ended (between()). Where a
    scheduler's report says how long the job waited in its queue (LSF: turnaround less run time), that part
    is `queued`: the whole gap when it was queued before the attempt before ended, and, before the first
    attempt, its wait from submission."""
    out: list[Interval] = []
    for i, nxt in enumerate(attempts):
        said = [m.t for m in nxt.marks if m.t is not None and m.kind not in PASSIVE]
        begin = min(said) if said else nxt.start
        since = _queued_since(nxt)
        prev = attempts[i - 1] if i else None
        if prev is None or prev.end is None:
            if i == 0 and since is not None and begin is not None and since < begin:
                out.append(Interval(since, begin, "queued", nxt.index, why="in the scheduler's queue (its report)"))
            continue
        if begin is None or begin <= prev.end:
            continue
        cut = max(prev.end, since) if since is not None and since < begin else begin
        if cut > prev.end:
            out.append(Interval(prev.end, cut, between(prev, nxt, begin - prev.end), nxt.index, why="between attempts"))
        if cut < begin:
            out.append(Interval(cut, begin, "queued", nxt.index, why="in the scheduler's queue (its report)"))
    return out


def _queued_since(a: Attempt) -> float | None:
    """When the attempt's job was submitted, where its scheduler's report says how long it waited."""
    start = next((m for m in a.marks if m.kind == "init_begin" and m.queued_s is not None), None)
    return start.t - (start.queued_s or 0.0) if start is not None and start.t is not None else None
