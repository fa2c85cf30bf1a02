# ruff: noqa: E501  (log lines are kept whole, as posted)
"""Classes of real training logs the goodput report misread (issue 40, the second held-out set of training logs),
each on a short excerpt of the public log named above it: a step counter that restarts every epoch, a float
counter with a `dt` step time, a Ctrl-C ending short of the stated plan, a cumulative timer reset after warm-up,
JSON-lines trainer logs with a resume, fresh relaunches in one file."""

from __future__ import annotations

from pathlib import Path

import pytest
from scope.analyzers.goodput import goodput

from scope.render.goodput import render_goodput
from tests.helpers import assert_sane_goodput, write_log

# https://github.com/cattidea/VinVL-Paddle/blob/78c15c4bd4832203d8509bfde2390f13b86445bf/log/workerlog.0 (lines
# 121-146: the end of epoch 1 and the start of epoch 2; the step counter restarts at 100 every epoch)
VINVL = [
    "02/13/2022 23:56:14 - INFO - Epoch: [1], step: [4200], lr: 0.000019, batch_loss: 0.0167, avg_loss: 0.0239",
    "02/13/2022 23:57:20 - INFO - Epoch: [1], step: [4300], lr: 0.000019, batch_loss: 0.0043, avg_loss: 0.0239",
    "02/13/2022 23:58:26 - INFO - Epoch: [1], step: [4400], lr: 0.000019, batch_loss: 0.0348, avg_loss: 0.0239",
    "02/13/2022 23:58:43 - INFO - ** ** Epoch [1] done! Training loss: 0.02386 ** **",
    "02/13/2022 23:59:38 - INFO - ** * ** Eval at Epoch [1]! Eval Reults:  ** * **",
    "02/14/2022 00:00:47 - INFO - Epoch: [2], step: [100], lr: 0.000019, batch_loss: 0.0455, avg_loss: 0.0145",
    "02/14/2022 00:01:53 - INFO - Epoch: [2], step: [200], lr: 0.000019, batch_loss: 0.0050, avg_loss: 0.0157",
    "02/14/2022 00:02:59 - INFO - Epoch: [2], step: [300], lr: 0.000019, batch_loss: 0.0074, avg_loss: 0.0151",
]

# https://github.com/saforem2/vault/blob/d96afcb06ae007719358935729013925a1d52c1a/imported/0007-MeetingNotes/Venkat/logs/mlprof/train-deepspeed-thetaGPU.md
# (lines 477-867 in part: DeepSpeed's `step=0` at its first print, then mlprof's `epoch=E step=S dt=...` with
# float counters, quoted with "> ")
MLPROF = [
    ">     [2023-01-11 13:27:59,212] [INFO] [logging.py:68:log_dist] [Rank 0] step=0, skipped=0, lr=[0.001], mom=[[0.8, 0.999]]",
    ">     [2023-01-11 13:28:13,846][mlprof.trainers.pytorch.trainer][INFO] - [0] [1/10: 0/1875 (0%)] epoch=1.0000 step=1.0000 dt=0.3665 batch_acc=0.1094 batch_loss=0.0090 acc=0.0149 running_loss=0.0012",
    ">     [2023-01-11 13:28:14,036][mlprof.trainers.pytorch.trainer][INFO] - [0] [1/10: 1280/1875 (62%)] epoch=1.0000 step=6.0000 dt=0.0025 batch_acc=0.5469 batch_loss=0.0063 acc=0.2709 running_loss=0.0066",
    ">     [2023-01-11 13:28:15,405][mlprof.trainers.pytorch.trainer][INFO] - [0] [2/10: 0/1875 (0%)] epoch=2.0000 step=9.0000 dt=0.0046 batch_acc=0.6758 batch_loss=0.0050 acc=0.0923 running_loss=0.0007",
    ">     [2023-01-11 13:28:15,583][mlprof.trainers.pytorch.trainer][INFO] - [0] [2/10: 1280/1875 (62%)] epoch=2.0000 step=14.0000 dt=0.0022 batch_acc=0.6992 batch_loss=0.0035 acc=0.5723 running_loss=0.0033",
    ">     [2023-01-11 13:28:16,935][mlprof.trainers.pytorch.trainer][INFO] - [0] [3/10: 0/1875 (0%)] epoch=3.0000 step=17.0000 dt=0.0026 batch_acc=0.8086 batch_loss=0.0026 acc=0.1104 running_loss=0.0004",
    ">     [2023-01-11 13:28:26,589][mlprof.trainers.pytorch.trainer][INFO] - [0] :: Total training time: 13.143308877944946 seconds",
]

# https://github.com/auroraGPT-ANL/torchtitan/blob/24c86d4f9512c8fc59f4eb6e223816481ff768b5/torchtitan/experiments/blendcorpus/docs/aurora.md
# (the output block, lines in part: the plan, the start, the first and last steps, then the terminal's ^C)
TORCHTITAN_CTRL_C = [
    "   [INFO][2025-09-11 14:09:18.390498] Training iterations: 1000",
    "  [2025-09-11 14:09:20,264934][I][blendcorpus/train:556:train] Training starts at step 1.",
    "  [2025-09-11 14:09:46,954794][I][components/metrics:437:log] step:  1  loss: 10.8595  grad_norm:  3.2105  memory:  8.44GiB(13.20%)  tps: 149  tflops: 1.39  mfu: 0.47%",
    "  [2025-09-11 14:09:47,568581][I][components/metrics:437:log] step:  2  loss: 14.4458  grad_norm: 41.7880  memory:  8.44GiB(13.20%)  tps: 6,697  tflops: 62.15  mfu: 20.84%",
    "  [2025-09-11 14:09:48,193890][I][components/metrics:437:log] step:  3  loss: 15.2005  grad_norm: 66.6053  memory:  8.44GiB(13.20%)  tps: 6,562  tflops: 60.90  mfu: 20.42%",
    "  [2025-09-11 14:10:49,973188][I][components/metrics:437:log] step: 103  loss:  5.2459  grad_norm:  1.6686  memory:  8.44GiB(13.20%)  tps: 6,636  tflops: 61.58  mfu: 20.65%",
    "  [2025-09-11 14:10:50,591512][I][components/metrics:437:log] step: 104  loss:  5.3994  grad_norm:  1.9303  memory:  8.44GiB(13.20%)  tps: 6,635  tflops: 61.57  mfu: 20.65%",
    "  [2025-09-11 14:10:51,208789][I][components/metrics:437:log] step: 105  loss:  5.3256  grad_norm:  1.5555  memory:  8.44GiB(13.20%)  tps: 6,647  tflops: 61.68  mfu: 20.69%",
    "  ^C",
]

# https://github.com/KellerJordan/modded-nanogpt/blob/0b373b7a60c1ecc6d1db8cc27b18ddf3e12538e1/records/011825_GPT2Medium/241dd7a7-3d76-4dce-85a4-7df60387f32a.txt
# (steps 0-14: train_time holds the ~16 min of compilation in step 1, then is reset at step 11)
MODDED_NANOGPT = [
    "step:0/7500 val_loss:10.8258 train_time:0ms step_avg:nanms",
    "step:1/7500 train_time:960506ms step_avg:nanms",
    "step:2/7500 train_time:963371ms step_avg:nanms",
    "step:3/7500 train_time:963579ms step_avg:nanms",
    "step:4/7500 train_time:963798ms step_avg:nanms",
    "step:5/7500 train_time:964016ms step_avg:nanms",
    "step:6/7500 train_time:964233ms step_avg:nanms",
    "step:7/7500 train_time:964456ms step_avg:nanms",
    "step:8/7500 train_time:964681ms step_avg:nanms",
    "step:9/7500 train_time:964902ms step_avg:nanms",
    "step:10/7500 train_time:965122ms step_avg:nanms",
    "step:11/7500 train_time:221ms step_avg:nanms",
    "step:12/7500 train_time:442ms step_avg:nanms",
    "step:13/7500 train_time:666ms step_avg:221.89ms",
    "step:14/7500 train_time:887ms step_avg:221.76ms",
]


def test_a_step_counter_restarting_every_epoch_is_progress_vinvl_paddle(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path, VINVL))
    assert_sane_goodput(r)
    assert len(r.acc.attempts) == 1 and r.acc.steps_redone == 0  # not a restart
    # 4200 -> 4400 in epoch 1, then 300 more in epoch 2: cumulative, a bound (the log is cut)
    assert r.acc.steps_completed == 500 and r.acc.completed_is_bound
    assert r.wall_s == pytest.approx(405.0)  # 23:56:14 -> 00:02:59
    assert r.acc.buckets["productive"] > 0.5 * r.wall_s


def test_float_counters_and_a_dt_field_are_steps_beside_a_stray_known_line_mlprof(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path, MLPROF))
    assert_sane_goodput(r)
    assert r.acc.steps_completed == 17  # step=1.0000 .. step=17.0000, not DeepSpeed's lone `step=0`
    assert r.acc.attempts[0].first_step == 1
    # the 14.6 s before the first step line is start-up, not training
    assert r.acc.buckets["initialization"] > 10.0
    assert r.acc.buckets["productive"] < 0.2 * r.wall_s


def test_a_bare_ctrl_c_after_the_last_step_is_an_interruption_with_the_plan_unrun_torchtitan(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path, TORCHTITAN_CTRL_C))
    assert_sane_goodput(r)
    (a,) = r.acc.attempts
    assert a.ended == "interrupted" and a.last_step == 105
    assert a.planned_steps == 1000
    text = render_goodput(r.result())
    assert "step 105 of 1,000 planned: 895 planned steps not run" in text
    assert r.acc.buckets["warmup"] == pytest.approx(26.1, abs=0.5)  # the first step's 26.7 s, less one step


def test_a_cumulative_timer_reset_after_warmup_is_no_restart_modded_nanogpt(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path, MODDED_NANOGPT))
    assert_sane_goodput(r)
    assert len(r.acc.attempts) == 1 and r.acc.steps_completed == 14
    # the 965 s before the reset stay in the wall time, as warm-up; the steps after it at ~0.22 s
    assert r.wall_s == pytest.approx(965.122 + 0.887, abs=0.01)
    assert r.acc.buckets["warmup"] == pytest.approx(960.0, abs=5.0)
    assert "hung" not in {k for k, v in r.acc.buckets.items() if v}
