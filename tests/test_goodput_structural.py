# ruff: noqa: E501  (log lines are kept whole, as the programs print them)
"""Training-log fragments of formats no row of formats/ lists, read by their structure (analyzers/goodput/
structural.py): an increasing step counter with a per-step time in a stated unit, or a timestamp on each line.
The excerpts are written here in each program's public format (MMEngine / mmcv loggers, timm's train.py, a
plain `step=N loss=X` logger with timestamps); the refusal names the file and what is missing."""

from __future__ import annotations

from pathlib import Path

import pytest
from scope.analyzers.goodput import found_anything, goodput
from scope.analyzers.goodput.line_marks import parse_clock
from scope.analyzers.goodput.structural import structural_step

from scope.cli import main
from tests.helpers import write_log

MMENGINE = [
    "2024/03/01 10:00:00 - mmengine - INFO - Epoch(train)  [1][  50/1000]  base_lr: 1.0000e-02 lr: 1.0000e-02  eta: 2:10:11  time: 0.4512  data_time: 0.0121  memory: 9812  loss: 1.2345",
    "2024/03/01 10:00:22 - mmengine - INFO - Epoch(train)  [1][ 100/1000]  base_lr: 1.0000e-02 lr: 1.0000e-02  eta: 2:09:50  time: 0.4498  data_time: 0.0119  memory: 9812  loss: 1.1011",
    "2024/03/01 10:00:45 - mmengine - INFO - Epoch(train)  [1][ 150/1000]  base_lr: 1.0000e-02 lr: 1.0000e-02  eta: 2:09:31  time: 0.4503  data_time: 0.0120  memory: 9812  loss: 1.0234",
    "2024/03/01 10:01:07 - mmengine - INFO - Epoch(val)  [1][ 50/500]    eta: 0:00:10  time: 0.1  data_time: 0.01  memory: 1200",
    "2024/03/01 10:01:30 - mmengine - INFO - Epoch(train)  [2][  50/1000]  base_lr: 1.0000e-02 lr: 1.0000e-02  eta: 2:01:00  time: 0.4500  data_time: 0.0120  memory: 9812  loss: 0.9",
]
MMCV_NO_CLOCK = [
    "Epoch [1][50/7330]\tlr: 1.996e-03, eta: 1 day, 1:23:45, time: 0.512, data_time: 0.051, memory: 3845, loss: 1.8",
    "Epoch [1][100/7330]\tlr: 3.994e-03, eta: 1 day, 1:20:00, time: 0.498, data_time: 0.010, memory: 3845, loss: 1.5",
    "Epoch [1][150/7330]\tlr: 5.992e-03, eta: 1 day, 1:19:00, time: 0.501, data_time: 0.010, memory: 3845, loss: 1.3",
]
TIMM = [
    "Train: 0 [   0/1251 (  0%)]  Loss: 6.935 (6.94)  Time: 5.111s,  200.35/s  (5.111s,  200.35/s)  LR: 1.000e-06  Data: 4.012 (4.012)",
    "Train: 0 [  50/1251 (  4%)]  Loss: 6.912 (6.92)  Time: 0.412s, 2485.44/s  (0.510s, 2007.84/s)  LR: 1.000e-06  Data: 0.010 (0.089)",
    "Train: 0 [ 100/1251 (  8%)]  Loss: 6.890 (6.91)  Time: 0.411s, 2491.48/s  (0.461s, 2221.26/s)  LR: 1.000e-06  Data: 0.010 (0.050)",
    "Train: 1 [   0/1251 (  0%)]  Loss: 6.500 (6.50)  Time: 0.409s, 2503.67/s  (0.409s, 2503.67/s)  LR: 1.000e-05  Data: 0.010 (0.010)",
]
STAMPED = [
    "2024-06-01 12:00:00 INFO epoch=1 step=100 loss=2.31",
    "2024-06-01 12:01:00 INFO epoch=1 step=200 loss=2.21",
    "2024-06-01 12:02:00 INFO epoch=1 step=300 loss=2.11",
    "2024-06-01 12:03:00 INFO epoch=1 step=400 loss=2.01",
]


def test_bracketed_epoch_counters_are_global_steps() -> None:
    assert structural_step(MMENGINE[0]) == (50, None, pytest.approx(0.4512))
    assert structural_step(MMENGINE[4]) == (1050, None, pytest.approx(0.45))  # epoch 2 of 1000 iterations
    assert structural_step(MMENGINE[3]) is None  # validation is not a training step
    assert structural_step(TIMM[3]) == (1251, None, pytest.approx(0.409))  # timm counts epochs from 0
    assert structural_step(
        "2024/03/01 10:00:00 - mmengine - INFO - Iter(train) [  200/90000]  lr: 2e-2  eta: 1 day  time: 0.35  data_time: 0.01  loss: 2.0"
    ) == (200, 90000, pytest.approx(0.35))


def test_mmengine_log_is_timed_by_its_own_clock(tmp_path: Path) -> None:
    assert parse_clock("2024/03/01 10:00:22 - mmengine - INFO - x")[0] == 1709287222.0  # type: ignore[index]
    report = goodput(write_log(tmp_path, MMENGINE))
    assert report.clock == "own"
    assert report.acc.steps_completed == 1000  # step 50 to 1050: the log's own span of steps
    assert report.wall_s == pytest.approx(90.0)  # 10:00:00 to 10:01:30
    # MMEngine's train line has its own row now (formats/ mmcv_epoch_iter): not read by structure alone
    assert not any("read by their structure" in w for w in report.warnings)


def test_mmcv_without_timestamps_is_timed_by_its_seconds_per_iteration(tmp_path: Path) -> None:
    report = goodput(write_log(tmp_path, MMCV_NO_CLOCK))
    assert report.clock == "derived"
    assert report.acc.steps_completed == 100
    assert report.wall_s == pytest.approx(50 * 0.498 + 50 * 0.501, rel=0.05)


def test_timm_epochs_continue_the_step_count(tmp_path: Path) -> None:
    report = goodput(write_log(tmp_path, TIMM))
    assert report.acc.steps_completed == 1251
    assert len(report.acc.attempts) == 1


def test_step_lines_without_a_time_field_are_timed_by_their_timestamps(tmp_path: Path) -> None:
    report = goodput(write_log(tmp_path, STAMPED))
    assert report.clock == "own"
    assert report.acc.steps_completed == 300
    assert report.wall_s == pytest.approx(180.0)


def test_stamped_lines_that_report_no_training_are_not_steps(tmp_path: Path) -> None:
    lines = [f"2024-06-01 12:0{i}:00 INFO saving shard step {i * 100} of the export" for i in range(5)]
    assert not found_anything(goodput(write_log(tmp_path, lines)))


def test_a_log_with_nothing_to_read_is_refused_naming_the_file_and_what_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_log(tmp_path, ["2024-06-01 12:00:00 starting", "2024-06-01 13:00:00 still here"], "empty.log")
    assert main(["goodput", str(path)]) == 3
    err = capsys.readouterr().err
    assert "empty.log" in err and "increasing step counter" in err and "timestamp" in err


def test_mmengine_2022_lines_with_a_yearless_clock_are_timed(tmp_path: Path) -> None:
    lines = [
        f"04/21 21:0{i}:5{i} - mmengine - INFO - Epoch(train) [1][{10 * (i + 1)}/90]  lr: 1.000e-02  eta: 0:00:25  "
        f"time: 0.010  data_time: 0.000  memory: 0  loss: {11.0 - i:.4f}"
        for i in range(4)
    ]
    assert parse_clock(lines[0]) is not None
    report = goodput(write_log(tmp_path, lines))
    assert report.clock == "own"
    assert report.acc.steps_completed == 30
    assert report.wall_s == pytest.approx(3 * 61.0)


def test_hand_written_epoch_and_step_counters_are_global_steps_even_untimed(tmp_path: Path) -> None:
    lines = [
        "Epoch [1/5], Step [100/600], Loss: 0.2345",
        "Epoch [1/5], Step [200/600], Loss: 0.2145",
        "Epoch [1/5], Step [300/600], Loss: 0.2045",
        "Epoch [2/5], Step [100/600], Loss: 0.1945",
    ]
    assert structural_step(lines[3]) == (700, None, None)
    report = goodput(write_log(tmp_path, lines))
    assert report.acc.steps_completed == 600  # step 100 to 700, counted from the step numbers alone
    assert report.clock == "none" and report.goodput_pct is None


def test_a_time_field_that_only_grows_is_the_runs_clock_not_a_steps_time(tmp_path: Path) -> None:
    lines = [
        f"Epoch:[1/2]({459800 + 100 * i}/850049) loss:{2.0 - i / 10:.3f} lr:0.000000465 epoch_Time:{m:.1f}min:"
        for i, m in enumerate((1612, 1613, 1613, 1614))
    ]
    report = goodput(write_log(tmp_path, lines))
    assert report.acc.steps_completed == 300
    assert 0 < report.wall_s <= 2 * 60.0  # never more than the clock's own span (1612 to 1614 min)


@pytest.mark.parametrize(
    ("line", "seconds"),
    [
        ("step 100/1000 | loss 2.31 | lr 1e-4 | 2.48 s/it", 2.48),
        ("iteration 20 loss=1.9 speed: 1.25 it/s", 0.8),
        ("global_step=300 loss 0.5 throughput 0.5 steps/s", 2.0),
    ],
)
def test_a_rate_field_is_a_step_time(line: str, seconds: float) -> None:
    found = structural_step(line)
    assert found is not None and found[2] == pytest.approx(seconds)


def test_a_sample_or_token_rate_is_no_step_time() -> None:
    found = structural_step("step 100 loss 2.31 1523.4 samples/s")
    assert found is None or found[2] is None
