"""Per-epoch progress bars (formats rows with `epoch_from`) redrawn when tqdm resets them: not steps."""

from __future__ import annotations

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
