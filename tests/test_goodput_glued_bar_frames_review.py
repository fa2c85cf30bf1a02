"""Review of gp16a (tqdm bars as logs keep them): the lookalikes its passes misread.

- Lightning resets its training bar, and the bar's clock, at every epoch; the new epoch's 0 frame has the
  cumulative count of the epoch before's last frame at an earlier clock: an epoch of about 2 s read it as
  the other writer's frame and dropped it, and every later epoch was timed on the first one's seconds.
- A frame behind the bar was dropped as another writer's whenever its clock was at least half the bar's,
  whatever count it drew: a bar whose count is set back to 0 every epoch while its clock goes on lost every
  epoch after the first (and their time), a resume whose bar clock carried the skipped batches was swallowed.
- Frames glued on a line that ends in a stamped log record (HF's `Saving model checkpoint to ...` under the
  examples' asctime format, printed every save_steps) were all given the record's second: tens of steps
  at one instant and the whole line's time on its first step.
- The glued-frame pattern scanned to the line's end for every `| n/m [` that no `]` closes (quadratic).
"""

from __future__ import annotations

import datetime
import time
from pathlib import Path

import pytest
from scope.analyzers.goodput import goodput
from scope.analyzers.goodput.formats.hf import GLUED_BAR_FRAME

from tests.helpers import assert_sane_goodput


def _clock(s: float) -> str:
    h, rest = divmod(int(s), 3600)
    m, sec = divmod(rest, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m:02d}:{sec:02d}"


def _frame(n: int, total: int, elapsed: float, step_s: float, desc: str = "", postfix: str = "") -> str:
    """tqdm's frame (std.py format_meter): whole-second elapsed clock, rate as it/s under a second a step."""
    if n == 0 and elapsed < 1:
        return f"{desc}  0%|          | 0/{total} [00:00<?, ?it/s{postfix}]"
    rate = f"{step_s:.2f}s/it" if step_s >= 1 else f"{1 / step_s:.2f}it/s"
    left = _clock((total - n) * step_s)
    return f"{desc}{n * 100 // total:3d}%|█▍        | {n}/{total} [{_clock(elapsed)}<{left}, {rate}{postfix}]"


def _lightning_run(epochs: int, batches: int, step_s: float, val_batches: int = 3) -> str:
    """Lightning 2.x's TQDMProgressBar, `\\r` kept: each epoch's bar from 0 (reset, its clock too), the
    validation bar after the epoch's last batch, the epoch bar redrawn with val_loss, the reset frame."""
    frames: list[str] = []
    for e in range(epochs):
        desc = f"Epoch {e}: "
        frames.append(_frame(0, batches, 0.0, step_s, desc, ", v_num=7"))
        for n in range(1, batches + 1):
            frames.append(_frame(n, batches, n * step_s, step_s, desc, f", v_num=7, train_loss={2.0 / n:.3f}"))
        frames.append("Validation: |          | 0/? [00:00<?, ?it/s]")
        frames += [_frame(k, val_batches, k * 0.2, 0.2, "Validation DataLoader 0: ") for k in range(val_batches + 1)]
        done = batches * step_s + val_batches * 0.2
        frames.append(_frame(batches, batches, done, step_s, desc, ", v_num=7, train_loss=0.410, val_loss=0.395"))
    lines = [
        "GPU available: True (cuda), used: True",
        "LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0]",
        "\r".join(frames),
        f"`Trainer.fit` stopped: `max_epochs={epochs}` reached.",
    ]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(("batches", "step_s"), [(2, 1.1), (4, 0.55), (3, 0.9)])
def test_lightning_epochs_of_about_two_seconds_keep_every_epochs_clock(
    tmp_path: Path, batches: int, step_s: float
) -> None:
    # each epoch's bar restarts at 0 and at 00:00: the epochs follow one another, not all at the first's seconds
    epochs = 8
    path = tmp_path / "fit.log"
    path.write_text(_lightning_run(epochs, batches, step_s))
    r = goodput(path)
    assert_sane_goodput(r)
    assert [(a.first_step, a.last_step, a.ended) for a in r.acc.attempts] == [(0, epochs * batches, "completed")]
    train = r.acc.buckets.get("productive", 0.0) + r.acc.buckets.get("warmup", 0.0)
    # whole-second clocks: each epoch reads 1 s short at most
    assert train >= epochs * (batches * step_s - 1.0), r.acc.buckets


def test_lightning_two_writers_in_one_epoch_still_read_as_one_bar(tmp_path: Path) -> None:
    # both ranks draw the epoch bar, the second a batch behind: dropped, within every epoch
    frames: list[str] = []
    for e in range(3):
        desc = f"Epoch {e}: "
        frames += [_frame(0, 30, 0.0, 1.3, desc), _frame(0, 30, 0.0, 1.3, desc)]
        for n in range(1, 31):
            frames += [_frame(n, 30, n * 1.3, 1.3, desc), _frame(n - 1, 30, (n - 1) * 1.3 + 0.4, 1.3, desc)]
    path = tmp_path / "fit.log"
    path.write_text("LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0,1]\n" + "\r".join(frames) + "\n")
    r = goodput(path)
    assert [(a.first_step, a.last_step) for a in r.acc.attempts] == [(0, 90)]
    assert r.acc.steps_completed == 90


def _bar_set_back_each_epoch(epochs: int, batches: int, step_s: float, desc: str) -> str:
    """One bar for the whole run whose count is set back to 0 every epoch while its clock goes on
    (`pbar.n = 0; pbar.refresh()` at each epoch's start: ONT Remora's training loop)."""
    frames: list[str] = []
    elapsed = 0.0
    for _ in range(epochs):
        frames.append(_frame(0, batches, elapsed, step_s, desc) if elapsed else _frame(0, batches, 0.0, step_s, desc))
        for n in range(1, batches + 1):
            elapsed += step_s
            frames.append(_frame(n, batches, elapsed, step_s, desc))
    return "\r".join(frames)


@pytest.mark.parametrize("desc", ["Epoch Progress: ", ""])
def test_a_bar_set_back_to_zero_with_its_clock_going_on_keeps_every_epochs_time(tmp_path: Path, desc: str) -> None:
    # epochs 2 and 3 are not a second writer's frames: their time stays in the run (3 x 70 steps x 0.9 s)
    path = tmp_path / "train.log"
    path.write_text("***** Running training *****\n" + _bar_set_back_each_epoch(3, 70, 0.9, desc) + "\n")
    r = goodput(path)
    assert sum(r.acc.buckets.values()) == pytest.approx(3 * 70 * 0.9, abs=3), r.acc.buckets


def test_a_resume_whose_bar_clock_carried_the_skipped_batches_is_a_second_attempt(tmp_path: Path) -> None:
    # killed at 300 of 1000 (no line), resumed from checkpoint-200: the bar opens again, and its clock
    # carries the batches skipped before step 201 (an older Trainer's skip loop): not a writer behind
    first = [_frame(n, 1000, n * 1.5, 1.5) for n in range(0, 301)]
    again = [_frame(n, 1000, 400 + (n - 200) * 1.5, 1.5) for n in range(201, 1001)]
    path = tmp_path / "train.log"
    path.write_text("***** Running training *****\n" + "\r".join(first) + "\n" + "\r".join(again) + "\n")
    r = goodput(path)
    assert len(r.acc.attempts) == 2  # (not one that swallowed steps 201..300 run again)
    first_attempt, second_attempt = r.acc.attempts
    assert (first_attempt.first_step, first_attempt.last_step) == (0, 300)
    assert second_attempt.last_step == 1000 and second_attempt.first_step in (200, 201)


_T0 = datetime.datetime(2025, 3, 14, 9, 12, 5)


def _hf_glued_with_stamped_records(total: int, step_s: float, every: int, stamp: str) -> str:
    """An HF example script's log that lost tqdm's `\\r`: the frames since the last newline, then the
    Trainer's stamped INFO record (`Saving model checkpoint to ...`) every `every` steps, ending their line."""
    lines = ["[INFO|trainer.py:2128] 2025-03-14 09:12:05,118 >> ***** Running training *****"]
    frames = [_frame(0, total, 0.0, step_s)]
    for n in range(1, total + 1):
        frames.append(_frame(n, total, n * step_s, step_s))
        if n % every == 0:
            t = _T0 + datetime.timedelta(seconds=n * step_s + 0.4)
            record = stamp.format(t=t, ms=t.microsecond // 1000, n=n)
            lines.append("".join(frames) + record)
            frames = []
    lines.append("".join(frames))
    return "\n".join(lines) + "\n"


_STAMPS = [
    "{t:%m/%d/%Y %H:%M:%S} - INFO - transformers.trainer - Saving model checkpoint to out/checkpoint-{n}",
    "[INFO|trainer.py:3705] {t:%Y-%m-%d %H:%M:%S},{ms:03d} >> Saving model checkpoint to out/checkpoint-{n}",
]


@pytest.mark.parametrize("stamp", _STAMPS)
def test_glued_frames_before_a_stamped_record_keep_their_own_clock(tmp_path: Path, stamp: str) -> None:
    path = tmp_path / "train.log"
    path.write_text(_hf_glued_with_stamped_records(total=300, step_s=0.8, every=30, stamp=stamp))
    r = goodput(path)
    assert_sane_goodput(r)
    assert r.acc.steps_completed == 300
    steps = [m for m in r.acc.attempts[0].marks if m.kind == "step" and m.t is not None]
    # the 30 frames of a line ran over 24 s: not at one instant (the record's second)
    assert len({m.t for m in steps if 31 <= (m.step or 0) <= 60}) >= 20
    assert r.acc.ideal_step_s == pytest.approx(0.8, abs=0.12)
    assert r.acc.buckets.get("productive", 0.0) == pytest.approx(300 * 0.8, abs=6)


def test_a_single_frame_on_a_stamped_line_still_takes_the_stamp(tmp_path: Path) -> None:
    # a collector's stamp (moreutils' ts, kubectl --timestamps) on each frame of a bar drawn a line at a time
    lines = ["LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0]"]
    for n in range(0, 121):
        t = _T0 + datetime.timedelta(seconds=n * 2.5)
        lines.append(f"{t:%Y-%m-%dT%H:%M:%S}.{t.microsecond:06d}Z " + _frame(n, 120, n * 2.5 + 0.3, 2.5, "Epoch 0: "))
    path = tmp_path / "pod.log"
    path.write_text("\n".join(lines) + "\n")
    r = goodput(path)
    assert r.acc.steps_completed == 120
    assert r.acc.ideal_step_s == pytest.approx(2.5, abs=0.1)
    steps = [m for m in r.acc.attempts[0].marks if m.kind == "step"]
    assert all(m.t_src == "own" for m in steps)


def test_the_glued_frame_pattern_reads_a_long_line_in_linear_time() -> None:
    # `| n/m [` again and again with no `]` to close one (a table, a dump), and a `%|` after it all
    line = ("| 1/2 [" * 9300)[:65000] + " 50%|"
    t0 = time.perf_counter()
    GLUED_BAR_FRAME.sub("\\1\r", line)
    assert time.perf_counter() - t0 < 0.1
