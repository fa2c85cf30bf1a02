"""A reused epoch bar back at 0 is the next epoch only where no new process began between.

A relaunch that prints no launcher line (a supervisor's restart loop, a container restarted in place, a
process killed by SIGKILL that leaves no traceback) still prints its program's start-up output again: the
log's first line, written again between the bar's full frame and its frame back at 0, is a new process."""

from __future__ import annotations

from pathlib import Path

from scope.analyzers.goodput import goodput

from tests.helpers import write_log
from tests.test_goodput_rich_and_reused_bars import _reused


def _start(t: str) -> str:
    return f"2025-06-11 {t} | INFO | train.py:41 | config: model=vit_b16 lr=3e-4 world=8 seed=17"


def _epoch(e: int, total: int = 240) -> list[str]:
    return [f"==> epoch {e}/6", *_reused("train: ", 1, total, 45, reset=True)]


def _attempts(lines: list[str], tmp_path: Path) -> int:
    return len(goodput(write_log(tmp_path, lines)).acc.attempts)


def test_a_start_up_line_again_between_the_epochs_is_a_relaunch(tmp_path: Path) -> None:
    """Killed during the save after epoch 2 (no traceback), restarted by its supervisor from epoch 1: its
    first line again, with a later time, then `epoch 1/6` and the bar from 0."""
    lines = [_start("09:00:00"), *_epoch(1), *_epoch(2), _start("09:07:41"), *_epoch(1), *_epoch(2), *_epoch(3)]
    r = goodput(write_log(tmp_path, lines))
    assert len(r.acc.attempts) == 2, [(a.first_step, a.last_step) for a in r.acc.attempts]
    assert r.acc.steps_completed == 720


def test_per_epoch_lines_are_no_start_up_line(tmp_path: Path) -> None:
    """The lookalike: the line right above the first frame (`==> epoch 1/6`) is printed before every epoch;
    a log that opens with it has no start-up line to tell a relaunch by: every epoch goes on."""
    assert _attempts([*_epoch(1), *_epoch(2), *_epoch(3)], tmp_path) == 1
    assert _attempts([_start("09:00:00"), *_epoch(1), *_epoch(2), *_epoch(3)], tmp_path / "b") == 1


def test_a_start_up_line_right_above_the_bar_tells_a_relaunch_where_some_gap_lacks_it(tmp_path: Path) -> None:
    """No header between the start-up line and the bar: the line again after epoch 2 is the relaunch, as it
    is in one gap of three (an epoch header would be in all of them)."""
    body = [*_reused("train: ", 2, 240, 45, reset=True)]
    lines = [_start("09:00:00"), *body, _start("09:07:41"), *body, *_reused("train: ", 1, 240, 45, reset=True)]
    assert _attempts(lines, tmp_path) == 2
