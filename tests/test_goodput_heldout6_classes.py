"""Goodput classes from the released heldout6 training logs, each on a short real excerpt under
tests/data/goodput/ (sources in its README)."""

from __future__ import annotations

from pathlib import Path

from scope.analyzers.goodput import goodput

DATA = Path(__file__).parent / "data" / "goodput"


def test_lightning_bar_reset_between_epochs_is_no_relaunch() -> None:
    """A validation and a checkpoint save after every epoch, the bar reset drawn with the old epoch's name at
    0/2 before the next epoch's: one attempt, the bar's batches counted once, nothing redone."""
    r = goodput(DATA / "lightning_epoch_bar_resets.log")
    assert len(r.acc.attempts) == 1 and r.acc.steps_redone == 0, r.acc.attempts
    assert r.acc.steps_completed == 9
    assert len(r.saves()) == 4
