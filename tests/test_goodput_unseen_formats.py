# ruff: noqa: E501  (log lines are kept whole, as posted)
"""Real training-log fragments of frameworks no row of formats/ listed (issue 40, "Goodput on fragments"), each
from the public thread named above it: the goodput report reads them by their structure or by a row added for
the class of line, and every figure stays within the fragment's own span."""

from __future__ import annotations

from pathlib import Path

import pytest
from scope.analyzers.goodput import goodput
from scope.analyzers.goodput.parse import parse_text
from scope.analyzers.goodput.structural import structural_step

from scope.render.goodput import render_goodput
from tests.helpers import assert_sane_goodput, write_log

# https://github.com/facebookresearch/detectron2/issues/195 (detectron2's EventWriter: `[mm/dd HH:MM:SS name]:`
# with no year, every 20 iterations, `time` the median seconds per iteration with no unit)
DETECTRON2 = [
    "[11/01 11:20:11 d2.utils.events]: eta: 8:29:46  iter: 19  total_loss: 1.739  loss_cls: 1.226  loss_box_reg: 0.516  time: 0.3401  data_time: 0.0466  lr: 0.000200  max_mem: 3957M",
    "[11/01 11:20:17 d2.utils.events]: eta: 8:16:52  iter: 39  total_loss: 1.744  loss_cls: 1.227  loss_box_reg: 0.512  time: 0.3359  data_time: 0.0391  lr: 0.000400  max_mem: 3957M",
    "[11/01 11:20:24 d2.utils.events]: eta: 8:14:55  iter: 59  total_loss: 1.754  loss_cls: 1.242  loss_box_reg: 0.513  time: 0.3349  data_time: 0.0402  lr: 0.000599  max_mem: 3957M",
    "[11/01 11:20:31 d2.utils.events]: eta: 8:14:48  iter: 79  total_loss: 1.746  loss_cls: 1.235  loss_box_reg: 0.511  time: 0.3350  data_time: 0.0384  lr: 0.000799  max_mem: 3957M",
    "[11/01 11:20:38 d2.utils.events]: eta: 8:14:18  iter: 99  total_loss: 1.743  loss_cls: 1.232  loss_box_reg: 0.515  time: 0.3337  data_time: 0.0367  lr: 0.000999  max_mem: 3957M",
    "[11/01 11:20:44 d2.utils.events]: eta: 8:11:07  iter: 119  total_loss: 1.730  loss_cls: 1.232  loss_box_reg: 0.504  time: 0.3334  data_time: 0.0324  lr: 0.001199  max_mem: 3957M",
    "[11/01 11:20:51 d2.utils.events]: eta: 8:10:26  iter: 139  total_loss: 1.725  loss_cls: 1.224  loss_box_reg: 0.499  time: 0.3326  data_time: 0.0331  lr: 0.001399  max_mem: 3957M",
]

# https://github.com/facebookresearch/maskrcnn-benchmark/issues/976 (MetricLogger: no timestamps; `time: current
# (global average)` in seconds per iteration, no unit)
MASKRCNN = [
    "INFO: eta: 11:21:28  iter: 1120  loss: 1.4617 (1.4511)  loss_box_reg: 0.1761 (0.1431)  loss_classifier: 0.5327 (0.4516)  loss_mask: 0.4678 (0.5598)  loss_objectness: 0.1397 (0.1830)  loss_rpn_box_reg: 0.0723 (0.1136)  time: 0.5088 (0.4600)  data: 0.0164 (0.0177)  cpu2cuda: 0.1160 (0.1145)  forward: 0.2219 (0.2200)  backward: 0.0810 (0.0850)  lr: 0.020000  max mem: 3150",
    "INFO: eta: 11:21:51  iter: 1140  loss: 1.3548 (1.4514)  loss_box_reg: 0.1438 (0.1434)  loss_classifier: 0.4288 (0.4518)  loss_mask: 0.4968 (0.5587)  loss_objectness: 0.1977 (0.1836)  loss_rpn_box_reg: 0.0669 (0.1139)  time: 0.4698 (0.4604)  data: 0.0176 (0.0177)  cpu2cuda: 0.1157 (0.1144)  forward: 0.2209 (0.2202)  backward: 0.0814 (0.0853)  lr: 0.020000  max mem: 3273",
    "INFO: eta: 11:22:26  iter: 1160  loss: 1.3427 (1.4511)  loss_box_reg: 0.1638 (0.1441)  loss_classifier: 0.4600 (0.4529)  loss_mask: 0.4664 (0.5572)  loss_objectness: 0.1262 (0.1832)  loss_rpn_box_reg: 0.0936 (0.1138)  time: 0.4809 (0.4609)  data: 0.0137 (0.0177)  cpu2cuda: 0.1062 (0.1142)  forward: 0.2181 (0.2206)  backward: 0.0942 (0.0855)  lr: 0.020000  max mem: 3273",
]

# https://github.com/OpenNMT/OpenNMT-py/issues/1362 (onmt's ReportMgr: `Step N/M; ...; src/tgt tok/s; elapsed sec`,
# a dataset shard loaded between two reports)
OPENNMT = [
    "[2019-03-21 18:31:43,773 INFO] Step 2250/200000; acc:  31.18; ppl: 57.53; xent: 4.05; lr: 0.00028; 5092/261 tok/s;   6641 sec",
    "[2019-03-21 18:34:11,780 INFO] Step 2300/200000; acc:  30.36; ppl: 61.43; xent: 4.12; lr: 0.00028; 4953/257 tok/s;   6789 sec",
    "[2019-03-21 18:35:23,631 INFO] Loading dataset from XXXX.train.0.pt, number of examples: 66620",
    "[2019-03-21 18:37:48,505 INFO] Step 2350/200000; acc:  31.05; ppl: 57.21; xent: 4.05; lr: 0.00029; 3444/188 tok/s;   7006 sec",
    "[2019-03-21 18:40:13,159 INFO] Step 2400/200000; acc:  30.83; ppl: 55.57; xent: 4.02; lr: 0.00030; 5165/262 tok/s;   7150 sec",
    "[2019-03-21 18:42:38,243 INFO] Step 2450/200000; acc:  32.16; ppl: 50.01; xent: 3.91; lr: 0.00030; 5124/265 tok/s;   7295 sec",
]

# https://github.com/deepspeedai/DeepSpeed/issues/2629 (DeepSpeed 0.7.7's ThroughputTimer, every micro step)
DEEPSPEED_07 = [
    "stdout: [2022-12-20 08:26:26,101] [INFO] [timer.py:197:stop] 0/17, RunningAvgSamplesPerSec=158.31157878546472, CurrSamplesPerSec=159.628891629629, MemAllocated=1.75GB, MaxMemAllocated=2.6GB",
    "stdout: [2022-12-20 08:26:26,325] [INFO] [timer.py:197:stop] 0/18, RunningAvgSamplesPerSec=157.41495682912333, CurrSamplesPerSec=145.0889530760849, MemAllocated=1.75GB, MaxMemAllocated=2.6GB",
    "stdout: [2022-12-20 08:26:26,531] [INFO] [timer.py:197:stop] 0/19, RunningAvgSamplesPerSec=157.4379014217289, CurrSamplesPerSec=157.80592669930536, MemAllocated=1.75GB, MaxMemAllocated=2.6GB",
    "stdout: [2022-12-20 08:26:26,741] [INFO] [timer.py:197:stop] 0/20, RunningAvgSamplesPerSec=157.30644223355802, CurrSamplesPerSec=155.10475468488542, MemAllocated=1.75GB, MaxMemAllocated=2.6GB",
    "stdout: [2022-12-20 08:26:26,950] [INFO] [timer.py:197:stop] 0/21, RunningAvgSamplesPerSec=157.18392990885116, CurrSamplesPerSec=155.01088859630886, MemAllocated=1.75GB, MaxMemAllocated=2.62GB",
    "stdout: [2022-12-20 08:26:27,159] [INFO] [timer.py:197:stop] 0/22, RunningAvgSamplesPerSec=157.0806611496739, CurrSamplesPerSec=155.14401867030702, MemAllocated=1.75GB, MaxMemAllocated=2.62GB",
]

# https://github.com/deepspeedai/DeepSpeed/issues/5779 (DeepSpeed >= 0.8: epoch / micro step / global step)
DEEPSPEED_GLOBAL = "[2024-07-17 19:53:24,981] [INFO] [timer.py:258:stop] epoch=0/micro_step=4500/global_step=4500, RunningAvgSamplesPerSec=16.124955167964504, CurrSamplesPerSec=16.807402094161112, MemAllocated=0.02GB, MaxMemAllocated=0.97GB"


def test_yearless_bracketed_clock_and_a_bare_time_field_time_detectron2(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path, DETECTRON2))
    assert_sane_goodput(r)
    assert r.wall_s == pytest.approx(40.0)  # 11:20:11 -> 11:20:51
    assert r.acc.steps_completed == 120  # iterations 19..139 of a longer run: a bound, printed as one
    assert "at least 120 completed" in render_goodput(r.result())
    assert r.acc.ideal_step_s == pytest.approx(0.333, abs=0.01)
    text = render_goodput(r.result())
    assert "1970" not in text and "from timestamps without a year" in text  # times since its start, never 1970


def test_a_bare_time_field_without_a_clock_is_seconds_per_iteration_maskrcnn(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path, MASKRCNN))
    assert_sane_goodput(r)
    # iterations 1120 -> 1160 at the `time` of each report: 20 x 0.4698 + 20 x 0.4809 s
    assert r.wall_s == pytest.approx(20 * 0.4698 + 20 * 0.4809, abs=0.05)
    assert r.acc.steps_completed == 40


def test_a_token_rate_line_is_progress_timed_by_its_timestamps_opennmt(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path, OPENNMT))
    assert_sane_goodput(r)
    assert r.wall_s == pytest.approx(10 * 60 + 54.470, abs=0.01)  # 18:31:43.773 -> 18:42:38.243
    assert r.acc.steps_completed == 200
    assert r.acc.ideal_step_s == pytest.approx(2.95, abs=0.03)  # 50 steps in ~147.5 s


def test_deepspeed_throughput_lines_are_steps_timed_by_their_timestamps(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path, DEEPSPEED_07))
    assert_sane_goodput(r)
    assert r.wall_s == pytest.approx(1.058, abs=1e-3)
    assert [a.last_step for a in r.acc.attempts] == [22]
    assert r.acc.ideal_step_s == pytest.approx(0.21, abs=0.01)


def test_deepspeed_global_step_line_and_the_batch_give_the_step_time() -> None:
    # the line as DeepSpeed >= 0.8 prints it, without the logger's prefix (no clock); the config dump's batch
    # (as DeepSpeedConfig.print writes it) turns its samples/s into seconds per step: 32 / 16.807 s
    batch = "[2024-07-17 19:50:00,000] [INFO] [config.py:1000:print]   train_batch_size ............. 32"
    bare = "[timer.py:258:stop] " + DEEPSPEED_GLOBAL.split("[timer.py:258:stop] ")[1]
    marks = parse_text("\n".join([batch, bare]), "ds.log").marks
    steps = [m for m in marks if m.kind == "step"]
    assert [m.step for m in steps] == [4500]
    assert steps[0].step_s == pytest.approx(32 / 16.807402094161112)
    assert [m.kind for m in marks] == ["clock", "step"]  # the batch line still times the log's start
    stamped = [m for m in parse_text("\n".join([batch, DEEPSPEED_GLOBAL]), "ds.log").marks if m.kind == "step"]
    assert stamped[0].step_s is None  # a timestamped line is timed by its clock


def test_a_throughput_field_marks_a_stamped_line_as_progress() -> None:
    # no row: the structure alone (a step counter, a rate in samples) on a line with a timestamp
    assert structural_step(DEEPSPEED_GLOBAL.replace("epoch=0/micro_step=4500/", ""), stamped=True) == (4500, None, None)


# https://github.com/yvr1037/fenghuo-project-of-mmdet/blob/7d51c087aa36fd39c8e844fbbe15a28e952a22a5/mm.md (mmdet 2.18
# on mmcv's EpochBasedRunner: the plan at the start, the last epoch's last lines; `[930/930]` is never logged)
_MM = "2021-12-21 {} - mmdet - INFO - {}"
MMDET_END = [
    _MM.format("21:51:15,623", "workflow: [('train', 1)], max: 12 epochs"),
    _MM.format(
        "22:55:51,856",
        "Epoch [12][850/930]\tlr: 2.000e-04, eta: 0:00:19, time: 0.246, data_time: 0.009, memory: 3050, loss: 0.2865",
    ),
    _MM.format(
        "22:56:04,717",
        "Epoch [12][900/930]\tlr: 2.000e-04, eta: 0:00:07, time: 0.257, data_time: 0.008, memory: 3050, loss: 0.2904",
    ),
    _MM.format("22:56:12,185", "Saving checkpoint at 12 epochs"),
    "[>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>] 764/764, 8.9 task/s, elapsed: 86s, ETA:     0s"
    + _MM.format("22:57:40,254", "Evaluating bbox..."),
    _MM.format("22:57:43,654", "Epoch(val) [12][764]\tbbox_mAP: 0.0290, bbox_mAP_50: 0.0410, segm_mAP: 0.0290"),
]


def test_a_run_that_reaches_its_planned_length_completed_mmcv(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path, MMDET_END))
    assert_sane_goodput(r)
    assert [a.ended for a in r.acc.attempts] == ["completed"]
    assert r.acc.attempts[0].last_step == 12 * 930  # the epoch's end, said by its save


def test_a_log_cut_before_its_planned_length_is_still_running(tmp_path: Path) -> None:
    eleven = [ln.replace("[12]", "[11]").replace("at 12 epochs", "at 11 epochs") for ln in MMDET_END]
    r = goodput(write_log(tmp_path, eleven))
    assert [a.ended for a in r.acc.attempts] == ["running"]


@pytest.mark.parametrize(
    "line",
    ["step 10 loss 2.31 time: 12:30:01", "iter: 20  loss: 1.9  time: 0:01:07"],
)
def test_a_clock_in_a_time_field_is_no_step_time(line: str) -> None:
    found = structural_step(line)
    assert found is not None and found[2] is None  # a step (its loss), with no time of its own
