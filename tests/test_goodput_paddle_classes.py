# ruff: noqa: E501  (log lines are kept whole, as the programs print them)
"""Goodput classes of Paddle programs' logs (PaddleGAN's ppgan/engine/trainer.py, PaddleVideo's
paddlevideo/utils/record.py and tasks/train.py, Paddle3D's tools/train.py, RITM-paddle's train script), and of
hand-written PyTorch loops beside them, each on a few lines written here in the programs' formats: iteration
counters that restart every epoch (and relaunches within them), evaluation passes of minutes, and the idle
time between one launch and the next."""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from pathlib import Path

from scope.analyzers.goodput import goodput
from scope.analyzers.goodput.structural import structural_epoch, structural_step

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
    global iterations 10..100, nothing redone, completed at the 4 x 25th; cut at the 60th, still running."""
    lines = [f"{_bracket_stamp(0)} ppgan INFO: Configs: {{'epochs': 4, 'output_dir': 'output_dir/run'}}"]
    lines += [_ppgan_iteration(20 + 13 * n, 10 * (n + 1), 25, 4) for n in range(10)]
    r = goodput(write_log(tmp_path, lines))
    a = r.acc.attempts
    assert [(x.first_step, x.last_step) for x in a] == [(10, 100)], a
    assert r.acc.steps_redone == 0 and r.acc.buckets["redone"] == 0
    # (ppgan prints no end line: `Epoch: 4/4, iter: 0/25` is the 4 x 25th iteration, the planned last)
    assert a[0].ended == "completed"
    cut = goodput(write_log(tmp_path / "cut", lines[:7]))
    assert [(x.first_step, x.last_step, x.ended) for x in cut.acc.attempts] == [(10, 60, "running")]


def _ppvideo_step(s: float, epoch: int, step: int, epochs: int) -> str:
    """paddlevideo/utils/record.py's log_batch: `epoch:[  e/E] train step:N` with no steps-per-epoch printed."""
    return (
        f"{_bracket_stamp(s)} epoch:[{epoch:>3}/{epochs}] train step:{step:<4} loss: 3.33008 lr: 0.006990 top1: 0.12285 "
        "top5: 0.35830 batch_cost: 0.54446 sec, reader_cost: 0.00037 sec, ips: 117.54796 instance/sec."
    )


def _ppvideo_banner(s: float) -> list[str]:
    """A PaddleVideo launch's first line, then Paddle's NCCL init (glog) a second later."""
    return [
        f"{_bracket_stamp(s)} DALI is not installed, you can improve performance if use DALI",
        f"I{(_T0 + timedelta(seconds=s + 1)):%m%d %H:%M:%S}.297259 30407 nccl_context.cc:74] init nccl context nranks: 2 local rank: 0 gpu id: 0 ring id: 0",
    ]


def _ppvideo_launch(s: float, epochs: int) -> list[str]:
    """A launch's banner then EPOCHS epochs of 3 progress lines (step 0, 10, 20; 6 s apart, 16 s an epoch)."""
    lines = _ppvideo_banner(s)
    for e in range(1, epochs + 1):
        t = s + 10 + 16 * (e - 1)
        lines += [_ppvideo_step(t + 5 * k, e, 10 * k, epochs) for k in range(3)]
    return lines


def test_ppvideo_counter_restarting_each_epoch_is_the_next_epoch_not_a_relaunch(tmp_path: Path) -> None:
    """5 epochs whose `train step:` counts 0, 10, 20 each: one run, the step counted across epochs, an epoch's
    steps the counter's span plus one log interval (0..20 + 10: 30); a second launch from epoch 1 is a second
    attempt."""
    r = goodput(write_log(tmp_path, [*_ppvideo_launch(0, 5), *_ppvideo_launch(200, 5)]))
    a = r.acc.attempts
    assert [(x.first_step, x.last_step) for x in a] == [(0, 140), (0, 140)], a


_T3D = datetime(2023, 2, 9, 16, 57, 45)


def _paddle3d_crash_launch(s: float) -> list[str]:
    """A Paddle3D launch S seconds after the first that dies in start-up: its dataset line, its config echo
    (untimestamped), Paddle's device note, then a traceback 2 s after the launch and the TCP store's exit."""
    t = _T3D + timedelta(seconds=s)
    return [
        f"{t:%Y-%m-%d %H:%M:%S},210 -     INFO - Load 2207 Pedestrian database infos",
        "batch_size: 8",
        "epochs: 80",
        f"W{t:%m%d %H:%M:%S}.380403  2080 gpu_resources.cc:61] Please NOTE: device: 0, GPU Compute Capability: 8.6, Driver API Version: 11.4, Runtime API Version: 11.2",
        f"{(t + timedelta(seconds=2)):%Y-%m-%d %H:%M:%S},100 -     INFO - pointnet2_ops builded success!",
        "Traceback (most recent call last):",
        '  File "tools/train.py", line 160, in <module>',
        "RuntimeError: the model raised an error in its first training step",
        f"I{(t + timedelta(seconds=3)):%m%d %H:%M:%S}.452283  3057 tcp_store.cc:257] receive shutdown event and so quit from MasterDaemon run loop",
    ]


def test_idle_time_after_a_crash_is_the_failures_cost_however_long(tmp_path: Path) -> None:
    """Three launches that crash in start-up: the second 1,000 s after the first, the third 10 h later (the
    next day). Each launch's config echo belongs to it, so nothing is unexplained; both waits follow a
    failure, so both are the restart's cost (failure_to_restart), the 10 h too: never time between jobs."""
    lines = [*_paddle3d_crash_launch(0), *_paddle3d_crash_launch(1002), *_paddle3d_crash_launch(1002 + 36_000)]
    r = goodput(write_log(tmp_path, lines))
    assert [x.ended for x in r.acc.attempts] == ["failed", "failed", "failed"], r.acc.attempts
    b = r.acc.buckets
    assert b["unexplained"] < 1.0, b
    assert b["between_jobs"] == 0.0, b
    assert abs(b["failure_to_restart"] - 999 - 35_997) < 4.0, b


def _ritm(s: float, msg: str) -> str:
    """A line of RITM-paddle's logger (`YYYY-MM-DD HH:MM:SS [INFO]<tab>msg`), S seconds after the first."""
    return f"{(datetime(2021, 4, 16, 16, 0, 0) + timedelta(seconds=s)):%Y-%m-%d %H:%M:%S} [INFO]\t{msg}"


def test_a_metric_of_the_evaluated_iteration_ends_an_evaluation_of_minutes(tmp_path: Path) -> None:
    """A line every 10 steps (80 s apart); after step 50's line a 300 s validation whose only line is its
    metric naming the iteration (`mean iou of iter 50 is 0.81`): those 300 s are evaluation, not productive."""
    lines = [_ritm(80 * n, f"Epoch=1, Step={10 * n}/40001, loss=0.0194, lr=0.0005") for n in range(1, 6)]
    lines.append(_ritm(400 + 300, "mean iou of iter 50 is 0.8137425740690406"))
    lines += [_ritm(700 + 80 * n, f"Epoch=1, Step={50 + 10 * n}/40001, loss=0.0194, lr=0.0005") for n in range(1, 6)]
    r = goodput(write_log(tmp_path, lines))
    assert abs(r.acc.buckets["evaluation"] - 300) < 1.0, r.acc.buckets


def _ppvideo_test_launch(s: float) -> list[str]:
    """A PaddleVideo test launch: its banner, 3 batches predicted, its results' file written 20 s later."""
    return [
        *_ppvideo_banner(s),
        *[f"{_bracket_stamp(s + 10 + k)} [TEST] Processing batch {k}/3 ..." for k in range(3)],
        f"{_bracket_stamp(s + 20)} Results saved in submission.csv !",
    ]


def test_ppvideo_launches_end_as_their_last_lines_say_and_the_minutes_between_are_no_ones(tmp_path: Path) -> None:
    """A training launch that prints `training AGCN finished`, a test launch 200 s later that writes its results,
    a second training launch 150 s after that: three launches, each completed; the minutes between them are
    the wait between launches (queued: 201 s after the training's end line, 151 s after the results' line), not
    unexplained time inside one."""
    lines = [*_ppvideo_launch(0, 3), f"{_bracket_stamp(60)} training AGCN finished"]
    lines += [*_ppvideo_test_launch(260), *_ppvideo_launch(430, 3), f"{_bracket_stamp(490)} training AGCN finished"]
    r = goodput(write_log(tmp_path, lines))
    assert [(x.first_step, x.last_step, x.ended) for x in r.acc.attempts] == [
        (0, 80, "completed"),
        (None, None, "completed"),
        (0, 80, "completed"),
    ], r.acc.attempts
    between = [iv for iv in r.acc.intervals if iv.why == "between attempts"]
    assert [iv.bucket for iv in between] == ["queued", "queued"], between
    assert abs(r.acc.buckets["queued"] - 352.6) < 1.0, r.acc.buckets


def _loop_line(s: float, epoch: int, step: int, epochs: int = 2, per_epoch: int = 938) -> str:
    """A hand-written PyTorch loop's progress line (`Epoch [e/E], Step [s/S], Loss: ..`, the PyTorch tutorial's)."""
    t = datetime(2023, 1, 1, 10, 0, 0) + timedelta(seconds=s)
    return f"{t:%Y-%m-%d %H:%M:%S},000 INFO Epoch [{epoch}/{epochs}], Step [{step}/{per_epoch}], Loss: 0.2345"


def test_a_rerun_from_the_epochs_start_after_a_crash_is_a_second_attempt(tmp_path: Path) -> None:
    """Epoch 1's steps 100..900 of 938, an OOM traceback, a new `Starting training`, then the same epoch again
    from step 100 into epoch 2: the drop back is a relaunch (a failure line between), not the counter wrapping
    at its epoch's end. Two attempts, the first failed, its 900 steps redone; the rerun completes (its last line
    within one log interval of the 2 x 938 planned)."""
    lines = ["2023-01-01 10:00:00,000 INFO Starting training"]
    lines += [_loop_line(5 + 10 * k, 1, 100 * (k + 1)) for k in range(9)]
    lines += ["Traceback (most recent call last):", '  File "train.py", line 10, in <module>']
    lines += ["torch.OutOfMemoryError: CUDA out of memory.", "2023-01-01 10:02:35,000 INFO Starting training"]
    lines += [_loop_line(160 + 10 * k, 1, 100 * (k + 1)) for k in range(9)]
    lines += [_loop_line(254 + 10 * k, 2, 100 * (k + 1)) for k in range(9)]
    r = goodput(write_log(tmp_path, lines))
    a = r.acc.attempts
    assert [(x.first_step, x.last_step, x.ended) for x in a] == [(100, 900, "failed"), (100, 1838, "completed")], a
    assert r.acc.steps_redone == 900


def test_ppgan_relaunch_resuming_its_epoch_is_no_wrap(tmp_path: Path) -> None:
    """PaddleGAN's lines (epochs of 100, a line every 10) through epoch 3's iteration 90, a crash, then a
    relaunch that resumes epoch 3 from its iteration 10: a drop of one log interval modulo the epoch, but with
    a failure between and no next epoch after it; a relaunch, epoch 3's 80 iterations redone."""
    stamp = _bracket_stamp
    head = f"{stamp(0)} ppgan INFO: Configs: {{'epochs': 5}}"
    line = "{} ppgan.engine.trainer INFO: Epoch: {}/5, iter: {}/100 lr: 2.000e-04 perceptual: 102.727 batch_cost: 1.30000 sec reader_cost: 0.00529 sec ips: 0.88669 images/s"
    lines = [head, *[line.format(stamp(10 + 13 * n), 1 + n // 9, 10 * (n % 9 + 1)) for n in range(27)]]
    lines += [
        "Traceback (most recent call last):",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
    ]
    lines += [f"{stamp(421)} ppgan INFO: Configs: {{'epochs': 5}}"]
    lines += [line.format(stamp(431 + 13 * n), 3, 10 * (n + 1)) for n in range(8)]
    r = goodput(write_log(tmp_path, lines))
    a = r.acc.attempts
    assert [(x.first_step, x.last_step, x.ended) for x in a] == [(10, 290, "failed"), (210, 280, "running")], a
    assert r.acc.steps_redone >= 80


def _ppvideo_lines(s: float, epochs: range, steps: range, total: int = 10, every: float = 10.0) -> list[str]:
    """PaddleVideo's train lines of the given epochs, each printing the given steps, EVERY seconds apart."""
    out, t = [], s
    for e in epochs:
        for k in steps:
            out.append(_ppvideo_step(t, e, k, total))
            t += every
    return out


_PV_CRASH = [
    "Traceback (most recent call last):",
    '  File "main.py", line 10, in <module>',
    "RuntimeError: CUDA out of memory.",
]


def test_ppvideo_resume_from_an_earlier_epoch_goes_on_from_that_epochs_steps(tmp_path: Path) -> None:
    """Epochs 1..7 of `train step:` 0..90 (a line every 10 steps: 100 an epoch), a crash, then a relaunch that
    resumes epoch 5: the second attempt's steps are epoch 5's on (400..), with one offset for the whole log,
    and epochs 5..7 (~300 steps) are redone, not all 700 from 0."""
    lines = [*_ppvideo_banner(0), *_ppvideo_lines(10, range(1, 8), range(0, 100, 10)), *_PV_CRASH]
    lines += [*_ppvideo_banner(800), *_ppvideo_lines(810, range(5, 11), range(0, 100, 10))]
    r = goodput(write_log(tmp_path, lines))
    a = r.acc.attempts
    assert [(x.first_step, x.last_step) for x in a] == [(0, 690), (400, 990)], a
    assert 250 <= r.acc.steps_redone <= 300, r.acc.steps_redone


def test_ppvideo_crash_in_the_first_epoch_then_a_full_run_is_one_restart(tmp_path: Path) -> None:
    """Three lines of epoch 1, an OOM, then a full 5-epoch run: the drop within epoch 1 is the relaunch, and
    it does not stop the next run's counter being read across its epochs. Two attempts, one restart, 20 steps
    redone; the second run 0..490."""
    lines = [*_ppvideo_banner(0), *_ppvideo_lines(10, range(1, 2), range(0, 30, 10), total=5), *_PV_CRASH]
    lines += [*_ppvideo_banner(100), *_ppvideo_lines(110, range(1, 6), range(0, 100, 10), total=5)]
    r = goodput(write_log(tmp_path, lines))
    a = r.acc.attempts
    assert [(x.first_step, x.last_step) for x in a] == [(0, 20), (0, 490)], a
    assert r.acc.steps_redone == 20


def test_ppvideo_validation_lines_are_an_evaluation_not_steps(tmp_path: Path) -> None:
    """`--validate`: after each epoch's train lines, `val step:0..20` lines 3 s apart and `END epoch:N val`;
    the val counter falling back to 0 is no relaunch. One attempt, the validation's time evaluation."""
    lines = _ppvideo_banner(0)
    t = 10.0
    for e in range(1, 5):
        lines += _ppvideo_lines(t, range(e, e + 1), range(0, 100, 10), total=4)
        t += 100
        lines += [_ppvideo_step(t + 3 * k, e, 10 * k, 4).replace("] train step:", "] val step:") for k in range(3)]
        lines.append(f"{_bracket_stamp(t + 9)} END epoch:{e:<3d} val loss_avg: 3.33 top1_avg: 0.12 top5_avg: 0.36")
        t += 10
    r = goodput(write_log(tmp_path, lines))
    a = r.acc.attempts
    assert [(x.first_step, x.last_step) for x in a] == [(0, 390)], a
    assert r.acc.buckets["evaluation"] >= 30.0, r.acc.buckets


def test_ppvideo_counter_printed_every_20_steps_counts_whole_epochs(tmp_path: Path) -> None:
    """20 epochs of 100 steps printed at 0, 20, .., 80: an epoch is 100 steps (80 + one interval), the last
    line step 1980, and no epoch boundary reads as a slow step."""
    lines = [*_ppvideo_banner(0), *_ppvideo_lines(10, range(1, 21), range(0, 100, 20), total=20, every=20.0)]
    r = goodput(write_log(tmp_path, lines))
    a = r.acc.attempts
    assert [(x.first_step, x.last_step) for x in a] == [(0, 1980)], a


def test_other_programs_training_finished_wording_ends_nothing(tmp_path: Path) -> None:
    """A torchtitan-style log that prints `training epoch finished` after each 100 steps: not PaddleVideo's
    `[MM/DD HH:MM:SS] training AGCN finished`, so one attempt, not one completed launch per epoch."""
    t0 = datetime(2024, 3, 1, 18, 0, 0)
    lines = [f"{t0:%Y-%m-%d %H:%M:%S},000 INFO Starting job: llama3 8B training"]
    for n in range(1, 31):
        t = t0 + timedelta(seconds=10 * n + (n - 1) // 10)
        lines.append(f"{t:%Y-%m-%d %H:%M:%S},000 INFO step: {10 * n}  loss: 2.3100  memory: 30.1GiB  tps: 3,000")
        if n % 10 == 0:
            lines.append(f"{t + timedelta(seconds=1):%Y-%m-%d %H:%M:%S},000 INFO training epoch finished")
    r = goodput(write_log(tmp_path, lines))
    assert len(r.acc.attempts) == 1, r.acc.attempts


def test_epoch_field_with_a_long_run_of_blanks_is_read_in_linear_time() -> None:
    """`epoch` then 20,000 blanks and no number (a line up to parse.MAX_LINE): no cubic backtracking."""
    start = time.perf_counter()
    assert structural_epoch("epoch" + " " * 20_000 + "x") is None
    blanks = structural_step("Epoch [1/2]" + " " * 20_000 + "Step" + " " * 20_000 + "x loss 1")
    assert blanks == structural_step("Epoch [1/2] Step x loss 1")  # (the epoch alone: a step of 2)
    assert time.perf_counter() - start < 0.5
    assert structural_epoch("epoch:[  3/100] train step:20") == 3


def test_ppvideo_epoch_with_only_its_first_line_is_still_the_next_epoch(tmp_path: Path) -> None:
    """Epochs of `train step:` 0, 10, 20, but epoch 3 printed only its `step:0` (its other lines lost): epoch 4's
    `step:0` right after it is the same counter restarting, not a counter of the whole run. One attempt 0..110."""
    lines = [*_ppvideo_banner(0), *_ppvideo_lines(10, range(1, 3), range(0, 30, 10), total=4)]
    lines += [*_ppvideo_lines(70, range(3, 4), range(0, 1), total=4, every=30.0)]
    lines += _ppvideo_lines(100, range(4, 5), range(0, 30, 10), total=4)
    r = goodput(write_log(tmp_path, lines))
    a = r.acc.attempts
    assert [(x.first_step, x.last_step) for x in a] == [(0, 110)], a
