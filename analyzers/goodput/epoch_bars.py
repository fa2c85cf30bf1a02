"""Per-epoch progress bars (formats rows with `epoch_from`) redrawn when tqdm resets them: not steps."""

from __future__ import annotations

from collections.abc import Callable

from scope.analyzers.goodput.formats import LINE_FORMATS
from scope.analyzers.goodput.mark import Mark

_EPOCH_FROM = {f.name: f.epoch_from for f in LINE_FORMATS if f.epoch_from is not None}


def _at_epoch_start(m: Mark) -> bool:
    """The bar shows 0 batches done in its epoch (`Epoch 0:   0%| 0/2`)."""
    first = _EPOCH_FROM.get(m.row)
    if first is None or m.step is None or not m.total or m.epoch is None:
        return False
    return m.step == max(0, m.epoch - first) * m.total


def bar_reset_redraws_out(marks: list[Mark]) -> list[Mark]:
    """Lightning resets its training bar at each new epoch, and tqdm draws the reset bar once with the old
    epoch's name before the new name (`Epoch 0: 100%| 2/2 ... Epoch 0:   0%| 0/2 ... Epoch 1:   0%| 0/2`,
    every epoch of a 20-epoch run in walk-jump's SLURM stdout): that 0 of an epoch already drawn further,
    followed by the next epoch's bar, is the reset, not a fall back to the epoch's start (a relaunch that
    resumes in the same epoch draws that epoch again, not the next one)."""
    steps = [(i, m) for i, m in enumerate(marks) if m.kind == "step" and m.row in _EPOCH_FROM]
    drop: set[int] = set()
    for k in range(1, len(steps) - 1):
        (_, prev), (i, cur), (_, nxt) = steps[k - 1], steps[k], steps[k + 1]
        if not _at_epoch_start(cur) or prev.row != cur.row or nxt.row != cur.row or cur.epoch is None:
            continue
        if prev.epoch == cur.epoch and (prev.step or 0) > (cur.step or 0) and nxt.epoch == cur.epoch + 1:
            drop.add(i)
    return [m for i, m in enumerate(marks) if i not in drop]


_GLOBAL_STEP_ROWS = frozenset({"lightning_ckpt_best", "lightning_ckpt_not_top"})


def lightning_optimizer_steps(marks: list[Mark]) -> list[Mark]:
    """Lightning's bar counts an epoch's batches; its checkpoint lines name the optimizer step (`Epoch 4,
    global step 5:`). Where every epoch's checkpoint line puts the same g optimizer steps in an epoch of T > g
    batches (gradient accumulation over T/g batches: walk-jump's 2 batches an epoch, one step), each bar line
    also names the optimizer step its batches reached, so the steps completed are the optimizer's."""
    per_epoch = {(m.step or 0) / ((m.epoch or 0) + 1) for m in marks if m.row in _GLOBAL_STEP_ROWS and m.step}
    totals = {m.total for m in marks if m.kind == "step" and m.row == "lightning_train_bar"}
    if len(per_epoch) != 1 or len(totals) != 1:
        return marks
    g, total = per_epoch.pop(), totals.pop()
    if not g.is_integer() or not total or total <= g or total % int(g):
        return marks
    batches = total // int(g)  # per optimizer step
    for m in marks:
        if m.kind == "step" and m.row == "lightning_train_bar" and m.step is not None:
            m.opt_step = m.step // batches
    return marks


_CLOCK_ROWS = frozenset(f.name for f in LINE_FORMATS if f.clock)
_SHARED = frozenset(f.name for f in LINE_FORMATS if f.shared_bar)


def redrawn_frames_out(marks: list[Mark]) -> list[Mark]:
    """rich's Live display (Lightning's RichProgressBar) redraws every bar at each refresh: in a file with its
    cursor codes the training bar's finished frame is printed again above each frame of the validation bar
    beneath it (`Epoch 0/9 ━━━ 250/250 0:00:50 • 0:00:00` then `Validation ━━╸ 10/20 0:00:02 • ...`). The
    same frame again (the same bar, count and elapsed clock) with only the other bar's frames since it says
    nothing new: it is no step after the evaluation began."""
    out: list[Mark] = []
    last: Mark | None = None  # the last step frame of a bar with its own clock, only bar frames since
    for m in marks:
        if m.kind == "step" and m.row in _CLOCK_ROWS and m.rel is not None:
            if (
                last is not None
                and (last.row, last.step, last.epoch, last.rel) == (m.row, m.step, m.epoch, m.rel)
                and out[-1] is not last
            ):
                continue
            last = m
        elif not (m.kind == "eval_begin" and m.row in _CLOCK_ROWS):
            last = None
        out.append(m)
    return out


# What a new process, or the end of one, prints: a bar that starts again after one of these is a relaunch's
_NEW_PROCESS = frozenset(
    {
        "init_begin",
        "init_mark",
        "init_dur",
        "train_begin",
        "train_end",
        "load_begin",
        "load_end",
        "resume",
        "restart",
        "failure",
        "interrupt",
        "stop",
        "job_end",
        "exit",
        "plan",
    }
)
# the first frame kept after the reset: at most this share of the bar (a log thinned to some frames an epoch)
_RESET_HEAD = 0.1


# Which of the gaps (the last full frame's line, the line of the frame back at 0) hold a new process's start-up
# output, given the line of the bar's first frame (what is printed right above it may be each epoch's header)
RelaunchGaps = Callable[[int, list[tuple[int, int]]], set[tuple[int, int]]]


def reused_bar_epochs(marks: list[Mark], relaunched: RelaunchGaps | None = None) -> list[Mark]:
    """A custom loop that reuses one tqdm bar for every epoch (`pbar.reset()`, or `pbar.n = 0` and a refresh,
    https://github.com/tqdm/tqdm/blob/master/tqdm/std.py: reset() sets n to 0 and restarts the clock; a new
    bar each epoch prints the same) draws it back at 0 once it has reached its total: with no launch line, no
    failure, no end line between (nothing a new process prints), that is the next epoch, not a relaunch that
    redoes the steps. A bar whose lines name no epoch (a named epoch is read by the row's `epoch_from`) counts
    on from the epochs before: the job's step is the finished passes times the total, plus the bar's count.
    `relaunched` tells the gaps where a process started again with no launcher line (its program's start-up
    output printed again: a supervisor's restart loop, a SIGKILL that leaves no traceback)."""
    totals: dict[str, set[int]] = {}
    for m in marks:
        if m.kind == "step" and m.row in _SHARED and m.total:
            totals.setdefault(m.row, set()).add(m.total)
    resets = _bar_resets(marks, totals)
    first = min((m.line for m in marks if _bare_bar(m, totals)), default=0)
    restarted = relaunched(first, sorted(resets.values())) if relaunched and resets else set()
    offset: dict[tuple[str, int], int] = {}
    for i, m in enumerate(marks):
        if m.kind in _NEW_PROCESS or resets.get(i) in restarted:
            offset.clear()  # (a relaunch counts from its own start: the attempts tell it)
            if m.kind != "step":
                continue
        elif i in resets:
            key = (m.row, m.total or 0)
            offset[key] = offset.get(key, 0) + (m.total or 0)
        if _bare_bar(m, totals) and offset.get((m.row, m.total or 0)):
            m.step = (m.step or 0) + offset[(m.row, m.total or 0)]
    return marks


def _bar_resets(marks: list[Mark], totals: dict[str, set[int]]) -> dict[int, tuple[int, int]]:
    """The frames back at 0 of a bare clock bar that had reached its total, since the last new-process line:
    each mark's index with its gap (the full frame's line, its own line)."""
    resets: dict[int, tuple[int, int]] = {}
    last: dict[tuple[str, int], Mark] = {}  # each bar's last frame drawn, since the last new-process line
    for i, m in enumerate(marks):
        if m.kind in _NEW_PROCESS:
            last.clear()
            continue
        if not _bare_bar(m, totals) or m.step is None or not m.total:
            continue
        key = (m.row, m.total)
        before = last.get(key)
        if before is not None and before.step == m.total and m.step <= m.total * _RESET_HEAD:
            resets[i] = (before.line, m.line)
        last[key] = m
    return resets


def _bare_bar(m: Mark, totals: dict[str, set[int]]) -> bool:
    """A frame of a clock bar that names no epoch (a bare bar also drawn for evaluation passes, several totals,
    is left to training_bar_only)."""
    if m.kind != "step" or m.rel is None or m.epoch is not None or m.step is None or not m.total:
        return False
    return m.row in _CLOCK_ROWS and len(totals.get(m.row, ())) <= 1
