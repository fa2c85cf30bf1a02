# ruff: noqa: E501  (log lines are kept whole, as the programs print them)
"""gp16c: Lightning's per-epoch bars (their clock restarted each epoch) and the validation bars between them are
laid one after the other: a bar run no timestamped line touches starts where the run before it ended, never past
the next timestamped line (squeezed under it, and said so); with no timestamps at all, end to end from 0."""

from __future__ import annotations

from pathlib import Path

import pytest
from scope.analyzers.goodput import goodput

from tests.helpers import assert_sane_goodput, write_log

_LHT = "[2025-01-14 {t}][{who}][INFO] - [rank: 0] {msg}"


def _clock(s: float) -> str:
    return f"{int(s) // 60:02d}:{int(s) % 60:02d}"


def _bar(desc: str, n: int, total: int, el: float, rest: float, post: str = "") -> str:
    pct = n * 100 // total
    return f"{desc}: {pct:3d}%|{'█' * (pct // 10):<10}| {n}/{total} [{_clock(el)}<{_clock(rest)}, {total / max(el + rest, 1):.2f}it/s{post}]"


def _epochs(
    epochs: int, batches: int, epoch_s: int, val_s: int, frames: bool, v1: bool = False, first: int = 0
) -> list[str]:
    """Lightning 2.x bars (`Epoch N: ...| n/T [..., v_num=.., train/loss=..]`, then `Validation DataLoader 0`),
    or 1.x's (`loss=..., v_num=..` and `Validating:`), each epoch's bar restarted at 00:00."""
    out: list[str] = []
    for e in range(first, first + epochs):
        post = f", loss=0.{61 - e}, v_num=7" if v1 else f", v_num=7, train/loss=0.{61 - e}"
        points = range(0, batches + 1, batches // 4) if frames else [batches]
        out.append(
            "\r".join(
                _bar(f"Epoch {e}", n, batches, epoch_s * n / batches, epoch_s * (batches - n) / batches, post)
                for n in points
            )
        )
        val = "Validating" if v1 else "Validation DataLoader 0"
        vpoints = [0, 8, 16] if frames else [16]
        out.append("\r".join(_bar(val, n, 16, val_s * n / 16, val_s * (16 - n) / 16) for n in vpoints))
    return out


def _stamped(body: list[str], start: str = "09:00:00,000", end: str | None = None) -> list[str]:
    lines = [
        _LHT.format(
            t=start, who="__main__", msg="Instantiating datamodule <src.data.cifar_datamodule.CIFARDataModule>"
        ),
        _LHT.format(t=start.replace(":00,", ":04,"), who="__main__", msg="Starting training!"),
        *body,
    ]
    if end is not None:
        lines.append(_LHT.format(t=end, who="src.utils.utils", msg="Output dir: /logs/train/runs/2025-01-14_09-00-00"))
    return lines


@pytest.mark.parametrize("frames", [True, False])
@pytest.mark.parametrize("v1", [False, True])
def test_every_epoch_bar_is_placed_after_the_one_before(tmp_path: Path, frames: bool, v1: bool) -> None:
    # 5 epochs of 40 s and 4 s of validation each (220 s) from 09:00:04, the task's end 09:03:46
    r = goodput(write_log(tmp_path, _stamped(_epochs(5, 120, 40, 4, frames, v1), end="09:03:46,000")))
    assert_sane_goodput(r)
    b = r.acc.buckets
    assert r.wall_s == pytest.approx(226.0)
    assert r.acc.steps_completed == 600
    assert b["productive"] == pytest.approx(200.0, abs=3.0), b
    assert b["evaluation"] == pytest.approx(20.0, abs=3.0), b
    assert b["unexplained"] < 3.0 and r.goodput_pct is not None and r.goodput_pct > 85


@pytest.mark.parametrize("frames", [True, False])
def test_bars_with_no_timestamp_at_all_are_laid_end_to_end(tmp_path: Path, frames: bool) -> None:
    r = goodput(write_log(tmp_path, _epochs(4, 60, 30, 5, frames)))
    assert_sane_goodput(r)
    assert r.clock == "bar" and r.wall_s == pytest.approx(140.0)  # 4 x (30 + 5)
    assert r.acc.steps_completed == 240
    assert r.acc.buckets["evaluation"] == pytest.approx(20.0, abs=1.0), r.acc.buckets


def test_bars_longer_than_the_stamps_are_squeezed_and_said(tmp_path: Path) -> None:
    # the bars claim 5 x 44 s = 220 s, the task ended 150 s after the training start: never past that stamp
    r = goodput(write_log(tmp_path, _stamped(_epochs(5, 120, 40, 4, True), end="09:02:34,000")))
    assert_sane_goodput(r)
    assert r.wall_s == pytest.approx(154.0)
    assert any("squeezed" in c for c in r.cannot), r.cannot


def test_a_relaunch_between_epochs_stays_a_relaunch(tmp_path: Path) -> None:
    # epochs 0-1 (2 x 44 s), the job dies; relaunched 20 min later it trains epochs 0-1 again (no checkpoint)
    first = _stamped(_epochs(2, 100, 40, 4, True))
    again = _stamped(_epochs(2, 100, 40, 4, True), start="09:21:30,000", end="09:23:10,000")
    r = goodput(write_log(tmp_path, first + again))
    assert_sane_goodput(r)
    assert len(r.acc.attempts) == 2, [(a.first_step, a.last_step) for a in r.acc.attempts]
    # the second launch's bars start at its own stamp, not at the end of the first launch's bars
    second = r.acc.attempts[1]
    assert second.start is not None and second.start >= r.acc.attempts[0].start + 20 * 60


def test_a_lone_validation_bar_before_any_epoch_is_not_training(tmp_path: Path) -> None:
    """The lookalike: Lightning's sanity check (`Sanity Checking DataLoader 0`) and a validate-only run
    (`Validation DataLoader 0` bars, no epoch bar): no step, no productive time."""
    body = ["\r".join(_bar("Validation DataLoader 0", n, 16, n * 0.5, (16 - n) * 0.5) for n in (0, 8, 16))]
    r = goodput(write_log(tmp_path, _stamped(body, end="09:00:20,000")))
    assert r.acc.buckets["productive"] == 0.0 and not r.acc.steps_completed
