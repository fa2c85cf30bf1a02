# ruff: noqa: E501  (log lines are kept whole, as the programs print them)
"""Goodput classes from the heldout13 training logs (issue 40), each on a few lines written here in the real
programs' formats: iteration counters that restart every epoch (PaddleGAN, PaddleVideo), evaluation passes of
minutes, and the idle time between one launch and the next."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from scope.analyzers.goodput import goodput

from tests.helpers import write_log

_T0 = datetime(2021, 5, 20, 4, 54, 6)


def _bracket_stamp(s: float) -> str:
    """The `[MM/DD HH:MM:SS]` prefix PaddleGAN's and PaddleVideo's loggers print, S seconds after the first."""
    return f"[{(_T0 + timedelta(seconds=s)):%m/%d %H:%M:%S}]"


def _ppgan_iteration(s: float, global_iter: int, per_epoch: int, epochs: int) -> str:
    """ppgan/engine/trainer.py's print_log: `iter` is the global iteration modulo the epoch's, the epoch the
    data loader's count, which moves only after the wrap (global 30 of 25 an epoch prints `Epoch: 1, iter: 5`)."""
    epoch = (global_iter - 10) // per_epoch + 1
    return (
        f"{_bracket_stamp(s)} ppgan.engine.trainer INFO: Epoch: {epoch}/{epochs}, iter: {global_iter % per_epoch}/{per_epoch} "
        "lr: 2.000e-04 perceptual: 102.727 equivariance_value: 0.110 batch_cost: 1.30000 sec reader_cost: 0.00529 sec "
        "ips: 0.88669 images/s eta: 1:00:00"
    )


def test_ppgan_counter_wrapping_before_its_epoch_moves_is_one_run(tmp_path: Path) -> None:
    """4 epochs of 25 iterations, a line every 10 (13 s apart): the per-epoch counter falls back (`iter: 20` ->
    `iter: 5` within epoch 1, `iter: 15` -> `iter: 0` within epoch 2) while the epoch field lags. One attempt,
    global iterations 10..100, nothing redone."""
    lines = [f"{_bracket_stamp(0)} ppgan INFO: Configs: {{'epochs': 4, 'output_dir': 'output_dir/run'}}"]
    lines += [_ppgan_iteration(20 + 13 * n, 10 * (n + 1), 25, 4) for n in range(10)]
    r = goodput(write_log(tmp_path, lines))
    a = r.acc.attempts
    assert [(x.first_step, x.last_step) for x in a] == [(10, 100)], a
    assert r.acc.steps_redone == 0 and r.acc.buckets["redone"] == 0


def _ppvideo_step(s: float, epoch: int, step: int, epochs: int) -> str:
    """paddlevideo/utils/record.py's log_batch: `epoch:[  e/E] train step:N` with no steps-per-epoch printed."""
    return (
        f"{_bracket_stamp(s)} epoch:[{epoch:>3}/{epochs}] train step:{step:<4} loss: 3.33008 lr: 0.006990 top1: 0.12285 "
        "top5: 0.35830 batch_cost: 0.54446 sec, reader_cost: 0.00037 sec, ips: 117.54796 instance/sec."
    )


def _ppvideo_launch(s: float, epochs: int) -> list[str]:
    """A launch's banner then EPOCHS epochs of 3 progress lines (step 0, 10, 20; 6 s apart, 16 s an epoch)."""
    lines = [f"{_bracket_stamp(s)} DALI is not installed, you can improve performance if use DALI"]
    for e in range(1, epochs + 1):
        t = s + 10 + 16 * (e - 1)
        lines += [_ppvideo_step(t + 5 * k, e, 10 * k, epochs) for k in range(3)]
    return lines


def test_ppvideo_counter_restarting_each_epoch_is_the_next_epoch_not_a_relaunch(tmp_path: Path) -> None:
    """5 epochs whose `train step:` counts 0, 10, 20 each: one run, the step counted across epochs from the
    largest counter seen (21 steps an epoch at least: 0..20); a second launch from epoch 1 is a second attempt."""
    r = goodput(write_log(tmp_path, [*_ppvideo_launch(0, 5), *_ppvideo_launch(200, 5)]))
    a = r.acc.attempts
    assert [(x.first_step, x.last_step) for x in a] == [(0, 104), (0, 104)], a
