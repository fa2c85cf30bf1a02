# ruff: noqa: E501  (log lines are kept whole, as the programs print them)
"""Goodput classes left open by the last reviews.

1. Lightning's RichProgressBar (rich's Progress with Lightning's columns: `Epoch 3/9 ━━━╸━━ 120/500 0:00:41 •
   0:02:10 2.90it/s v_num: 0 train_loss: 1.23`, and the `Validation` bar) is read as steps, as the tqdm bars are,
   whether a file holds its frames redrawn with ANSI cursor codes or one a line."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from scope.analyzers.goodput import goodput

from tests.helpers import assert_sane_goodput, write_log

_LHT = "[2025-03-02 {t}][{who}][INFO] - {msg}"
_UP = "\x1b[1A\x1b[2K"  # rich's Live: the cursor up a line and the line erased, before each redraw


def _td(s: float | None) -> str:
    return "-:--:--" if s is None else str(timedelta(seconds=int(s)))


def _rich(
    desc: str, n: int, total: int | None, el: float, left: float | None, metrics: str = "", ascii_bar: bool = False
) -> str:
    width = 30
    done = width * n // total if total else width
    bar = (
        ("-" * done + " " * (width - done))
        if ascii_bar
        else ("━" * done + ("╸" if done < width else "") + "━" * max(0, width - done - 1))
    )
    speed = f"{n / el:.2f}" if el else "0.00"
    return f"{desc} {bar} {n}/{total if total else '--'} {_td(el)} • {_td(left)} {speed}it/s {metrics}".rstrip()


def _epochs(
    epochs: int,
    batches: int,
    epoch_s: int,
    val_s: int,
    *,
    ansi: bool,
    max_epochs: int | None = 10,
    ascii_bar: bool = False,
) -> list[str]:
    """Each epoch's train bar frames (its clock restarted by progress.reset), then the validation bar beneath
    it (the train bar's last frame drawn above each validation frame, as rich's Live does)."""
    out: list[str] = []
    for e in range(epochs):
        desc = f"Epoch {e}/{max_epochs - 1}" if max_epochs is not None else f"Epoch {e}"
        desc = f"{desc:10}"  # padded to `Validation`'s length (_get_train_description)
        metrics = f"v_num: 3 train_loss: {1.9 - 0.1 * e:.3f}"
        for n in range(0, batches + 1, batches // 5):
            line = _rich(
                desc,
                n,
                batches,
                epoch_s * n / batches,
                epoch_s * (batches - n) / batches if n else None,
                metrics,
                ascii_bar,
            )
            out.append((_UP + "\r" + line) if ansi else line)
        last = _rich(desc, batches, batches, epoch_s, 0, metrics, ascii_bar)
        for k in (0, 10, 20):
            val = _rich("Validation", k, 20, val_s * k / 20, val_s * (20 - k) / 20 if k else None, ascii_bar=ascii_bar)
            out.append((_UP + _UP + "\r" + last + "\n" + val) if ansi else val)
    return out


def _stamped(body: list[str], end: str | None = None) -> list[str]:
    lines = [
        _LHT.format(
            t="10:00:00,000", who="__main__", msg="Instantiating model <src.models.mnist_module.MNISTLitModule>"
        ),
        _LHT.format(t="10:00:05,000", who="__main__", msg="Starting training!"),
        *body,
    ]
    if end is not None:
        lines.append(_LHT.format(t=end, who="__main__", msg="Starting testing!"))
    return lines


@pytest.mark.parametrize("ansi", [True, False])
def test_rich_bars_are_read_as_steps(tmp_path: Path, ansi: bool) -> None:
    # 4 epochs of 50 s and 5 s of validation (220 s) from 10:00:05; testing starts at 10:03:46
    r = goodput(write_log(tmp_path, _stamped(_epochs(4, 250, 50, 5, ansi=ansi), end="10:03:46,000")))
    assert_sane_goodput(r)
    b = r.acc.buckets
    assert r.acc.steps_completed == 1000
    assert r.wall_s == pytest.approx(226.0)
    assert b["productive"] == pytest.approx(200.0, abs=3.0), b
    assert b["evaluation"] == pytest.approx(20.0, abs=3.0), b
    assert r.goodput_pct is not None and r.goodput_pct > 85


@pytest.mark.parametrize("max_epochs", [None, -1, 3])
def test_rich_bars_without_timestamps_and_other_descriptions(tmp_path: Path, max_epochs: int | None) -> None:
    # no clock line at all: the bars laid end to end (3 x (40 + 4) s); `Epoch 1`, `Epoch 1/-2`, ascii bars
    r = goodput(
        write_log(tmp_path, _epochs(3, 100, 40, 4, ansi=False, max_epochs=max_epochs, ascii_bar=max_epochs == 3))
    )
    assert_sane_goodput(r)
    assert r.clock == "bar" and r.wall_s == pytest.approx(132.0)
    assert r.acc.steps_completed == 300
    assert r.acc.buckets["evaluation"] == pytest.approx(12.0, abs=1.0), r.acc.buckets


def test_rich_validation_only_is_no_training(tmp_path: Path) -> None:
    """The lookalike: `trainer.validate()` under RichProgressBar draws only `Validation` bars: no step."""
    body = [_rich("Validation", k, 40, k * 0.25, (40 - k) * 0.25 if k else None) for k in (0, 20, 40)]
    r = goodput(write_log(tmp_path, _stamped(body, end="10:00:20,000")))
    assert r.acc.buckets.get("productive", 0.0) == 0.0 and not r.acc.steps_completed


def test_a_rich_download_bar_is_not_a_step(tmp_path: Path) -> None:
    """rich's own default columns (a download: `Downloading ━━━ 12.3/45.6 MB 0:00:03 ...`) are no epoch bar."""
    body = [
        "Downloading model.ckpt ━━━━━━━━━━━━━━╸━━━━━━━━ 12.3/45.6 MB 3.1 MB/s eta 0:00:11",
        "Epoch 0 of the schedule: lr 0.001 • warmup 0:00:00 • 0:00:10",
    ]
    r = goodput(write_log(tmp_path, _stamped(body, end="10:00:20,000")))
    assert not r.acc.steps_completed


# ---- 2. one tqdm bar reused for every epoch (pbar.reset() / pbar.n = 0) ----------------------------------


def _mmss(s: float) -> str:
    return f"{int(s) // 60:02d}:{int(s) % 60:02d}"


def _tqdm(desc: str, n: int, total: int, el: float, rate: float) -> str:
    pct = n * 100 // total
    return f"{desc}{pct:3d}%|{'█' * (pct // 10):<10}| {n}/{total} [{_mmss(el)}<{_mmss((total - n) / rate)}, {rate:.2f}it/s, loss={0.9 - n / total / 2:.3f}]"


def _reused(desc: str, epochs: int, total: int, epoch_s: float, *, reset: bool, upto: int | None = None) -> list[str]:
    """A custom loop's epochs on one bar: reset() restarts its clock, `pbar.n = 0` keeps it running; after each
    epoch the loop prints its own validation result (no timestamp)."""
    out: list[str] = []
    for e in range(epochs):
        base = 0.0 if reset else e * epoch_s
        last = total if upto is None or e < epochs - 1 else upto
        frames = [
            _tqdm(desc, n, total, base + epoch_s * n / total, total / epoch_s) for n in range(0, last + 1, total // 4)
        ]
        out.append("\r".join(frames))
        out.append(f"epoch {e + 1}: val_acc={0.71 + e / 100:.3f}")
    return out


_START = "2025-04-01 08:00:00,120 - INFO - building ResNet-50, 4 GPUs, batch 256"


@pytest.mark.parametrize("reset", [True, False])
@pytest.mark.parametrize("desc", ["Training: ", "", "train ep: "])
def test_a_reused_bar_back_at_zero_is_the_next_epoch(tmp_path: Path, reset: bool, desc: str) -> None:
    lines = [
        _START,
        *_reused(desc, 4, 400, 60, reset=reset),
        "2025-04-01 08:04:01,000 - INFO - finished, best val_acc=0.740",
    ]
    r = goodput(write_log(tmp_path, lines))
    assert_sane_goodput(r)
    assert len(r.acc.attempts) == 1, [(a.first_step, a.last_step, a.ended) for a in r.acc.attempts]
    assert r.acc.steps_completed == 1600
    assert r.acc.buckets.get("redone", 0.0) == 0.0, r.acc.buckets
    assert r.goodput_pct is not None and r.goodput_pct > 90


def test_a_bar_back_at_zero_after_a_launch_line_stays_a_relaunch(tmp_path: Path) -> None:
    """The lookalike: the job started again (its start-up line) and its bar counts from 0: a relaunch."""
    first = _reused("Training: ", 2, 400, 60, reset=True)
    again = [
        "[2025-04-01 08:10:00,000] [INFO] [runner.py:555:main] cmd = /usr/bin/python -u -m deepspeed.launcher.launch --world_info=eyJsb2NhbGhvc3QiOiBbMF19 train.py",
        *_reused("Training: ", 1, 400, 60, reset=True),
    ]
    r = goodput(
        write_log(tmp_path, [_START, *first, *again, "2025-04-01 08:11:01,000 - INFO - finished, best val_acc=0.720"])
    )
    assert len(r.acc.attempts) == 2, [(a.first_step, a.last_step) for a in r.acc.attempts]


def test_a_bar_back_at_zero_before_its_total_is_not_an_epoch(tmp_path: Path) -> None:
    """The lookalike: the bar stopped short of its total (the process died silently) and counts from 0
    again: not a finished epoch, the steps are redone."""
    first = _reused("Training: ", 1, 400, 60, reset=True, upto=300)
    again = _reused("Training: ", 1, 400, 60, reset=True)
    r = goodput(
        write_log(tmp_path, [_START, *first, *again, "2025-04-01 08:02:30,000 - INFO - finished, best val_acc=0.720"])
    )
    assert r.acc.steps_completed != 700
