# ruff: noqa: E501  (log lines are kept whole, as the programs print them)
"""Goodput on short real excerpts of the training-log classes a held-out set of real logs showed missed:
mmcv's epoch-end save and validation, OLMo's `[step=N/M]` blocks, scepter's per-rank iteration lines,
an evaluation read from its own progress bar or `Running Prediction` line, a per-step time field over
the spacing of lines, and the step count of a log that starts mid-run. Each excerpt is at most 15 lines,
quoted from the public log named beside it."""

from __future__ import annotations

from pathlib import Path

import pytest
from scope.analyzers.goodput import goodput
from scope.analyzers.goodput.report import GoodputReport

from scope.render.goodput import steps_text
from tests.helpers import assert_sane_goodput, write_log


def _goodput_of(tmp_path: Path, lines: list[str]) -> GoodputReport:
    return goodput(write_log(tmp_path, lines, "job.log").parent)


# https://github.com/Alibaba-MIIL/ASL/issues/90 (mmcls on mmcv's EpochBasedRunner: the save at the epoch's end,
# then the validation pass, whose metrics line is the next line; no progress bar in the paste)
ASL = [
    "2022-07-13 13:49:19,493 - mmcls - INFO - Epoch [32][400/575]\tlr: 8.588e-05, eta: 3:27:01, time: 0.466, data_time: 0.013, memory: 5854, loss: 1.0219",
    "2022-07-13 13:49:42,632 - mmcls - INFO - Epoch [32][450/575]\tlr: 8.573e-05, eta: 3:26:40, time: 0.464, data_time: 0.014, memory: 5854, loss: 1.0506",
    "2022-07-13 13:50:05,570 - mmcls - INFO - Epoch [32][500/575]\tlr: 8.558e-05, eta: 3:26:18, time: 0.459, data_time: 0.014, memory: 5854, loss: 1.0462",
    "2022-07-13 13:50:29,104 - mmcls - INFO - Epoch [32][550/575]\tlr: 8.543e-05, eta: 3:25:58, time: 0.471, data_time: 0.013, memory: 5854, loss: 1.0268",
    "2022-07-13 13:50:40,907 - mmcls - INFO - Saving checkpoint at 32 epochs",
    "2022-07-13 13:52:10,199 - mmcls - INFO - Epoch(val) [32][282]\tmAP: 0.8237, CP: 0.6174, CR: 0.8417, CF1: 0.7123, OP: 0.6169, OR: 0.8727, OF1: 0.7228",
    "2022-07-13 13:52:35,665 - mmcls - INFO - Epoch [33][50/575]\tlr: 8.520e-05, eta: 3:25:12, time: 0.502, data_time: 0.050, memory: 5854, loss: 0.9921",
    "2022-07-13 13:52:58,829 - mmcls - INFO - Epoch [33][100/575]\tlr: 8.505e-05, eta: 3:24:50, time: 0.463, data_time: 0.013, memory: 5854, loss: 1.0270",
]


def test_mmcv_epoch_end_save_and_validation_are_not_productive(tmp_path: Path) -> None:
    r = _goodput_of(tmp_path, ASL)
    assert_sane_goodput(r)
    b = r.acc.buckets
    # Saving 13:50:40.907 -> Epoch(val) 13:52:10.199: the validation pass (the save's own share is not logged)
    assert b["evaluation"] == pytest.approx(89.3, abs=0.5)
    assert b["productive"] < r.wall_s - 89
    assert r.acc.ideal_step_s == pytest.approx(0.466, abs=0.01)  # the `time` field: seconds per iteration
    # epochs count from 1: [32][400/575] is step 31 x 575 + 400; the save says epoch 32's last step ran
    assert r.acc.attempts[0].first_step == 18225 and r.acc.attempts[0].last_step == 33 * 575 - 475
    assert [m for m in r.acc.attempts[0].marks if m.kind == "step" and m.step == 32 * 575], "epoch 32's end uncounted"
    assert r.acc.completed_is_bound and steps_text(r.result()).startswith("at least ")


# https://github.com/yvr1037/fenghuo-project-of-mmdet/blob/7d51c087aa36fd39c8e844fbbe15a28e952a22a5/mm.md (mmdet
# 2.18 / mmcv 1.4: the validation ProgressBar's last state is glued to the next logger line)
MMDET = [
    "2021-12-21 21:54:49,453 - mmdet - INFO - Epoch [1][850/930]     lr: 2.000e-02, eta: 0:43:12, time: 0.245, data_time: 0.008, memory: 3050, loss: 0.4455",
    "2021-12-21 21:55:02,245 - mmdet - INFO - Epoch [1][900/930]     lr: 2.000e-02, eta: 0:43:02, time: 0.256, data_time: 0.008, memory: 3050, loss: 0.4607",
    "2021-12-21 21:55:09,711 - mmdet - INFO - Saving checkpoint at 1 epochs",
    "[>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>] 764/764, 10.9 task/s, elapsed: 70s, ETA:     0s2021-12-21 21:56:22,062 - mmdet - INFO - Evaluating bbox...",
    "2021-12-21 21:56:23,045 - mmdet - INFO - Evaluating segm...",
    "2021-12-21 21:56:24,156 - mmdet - INFO - Epoch(val) [1][764]    bbox_mAP: 0.0110, bbox_mAP_50: 0.0170, bbox_mAP_75: 0.0130, segm_mAP: 0.0110",
    "2021-12-21 21:56:39,033 - mmdet - INFO - Epoch [2][50/930]      lr: 2.000e-02, eta: 0:41:46, time: 0.296, data_time: 0.052, memory: 3050, loss: 0.4545",
]


MMDET_T0 = 1640123689.453  # 2021-12-21 21:54:49.453 UTC, MMDET's first line


def test_mmcv_validation_bar_starts_the_evaluation_the_save_is_before_it(tmp_path: Path) -> None:
    r = _goodput_of(tmp_path, MMDET)
    assert_sane_goodput(r)
    b = r.acc.buckets
    # the bar ended at 21:56:22.062 after 70 s: it began 21:55:12.06, 2.35 s after the save line
    assert b["checkpoint_save"] == pytest.approx(2.35, abs=0.1)
    assert b["evaluation"] == pytest.approx(72.1, abs=0.2)  # 21:55:12.06 -> the Epoch(val) line 21:56:24.156
    assert r.acc.attempts[0].last_step == 930 + 50  # epoch 1's [930/930], never printed, counted by its save
    assert len(r.acc.saves) == 1


# https://github.com/AntonioLopardo/OLMo/blob/f2d902491c7ff14443a4ebeca98b0e617b452701/training.log (AI2 OLMo under
# torchrun, 8 GPUs; each step line is followed by indented metrics, left out here; killed by SIGTERM at the end)
_OL = "2025-12-12 {}\tquick-rain-shines-fin-03:0\t{}\tINFO\t{}"
OLMO = [
    _OL.format("11:04:38.501", "train:375", "Starting training..."),
    _OL.format("11:05:02.009", "olmo.train:979", "[step=1/15000,epoch=0]"),
    _OL.format("11:05:05.850", "olmo.train:979", "[step=2/15000,epoch=0]"),
    _OL.format("11:05:09.701", "olmo.train:979", "[step=3/15000,epoch=0]"),
    _OL.format("11:37:14.758", "olmo.train:979", "[step=499/15000,epoch=0]"),
    _OL.format("11:37:18.641", "olmo.train:979", "[step=500/15000,epoch=0]"),
    _OL.format("11:37:18.641", "olmo.train:1304", "Saving unsharded checkpoint..."),
    _OL.format(
        "11:37:55.024",
        "olmo.train:1306",
        "Unsharded checkpoint saved to /home/vec_norm/OLMo/checkpoints/OLMo-1B-0724-continue/step500-unsharded",
    ),
    _OL.format("11:37:58.917", "olmo.train:979", "[step=501/15000,epoch=0]"),
    _OL.format("11:38:02.777", "olmo.train:979", "[step=502/15000,epoch=0]"),
    "W1212 12:11:26.083000 9724 torch/distributed/elastic/agent/server/api.py:725] Received 15 death signal, shutting down workers",
]


def test_olmo_step_blocks_and_unsharded_save_are_read(tmp_path: Path) -> None:
    r = _goodput_of(tmp_path, OLMO[:-1])
    assert_sane_goodput(r)
    assert r.acc.steps_completed == 502
    assert [(b.step, round(s or 0, 1)) for b, _, s in r.acc.saves] == [(500, 36.4)]
    # the save, then the wait for step 501 (3.9 s) less one step's own time
    assert r.acc.buckets["checkpoint_save"] == pytest.approx(36.4 + 3.9 - 3.87, abs=0.5)
    assert r.acc.ideal_step_s == pytest.approx(3.87, abs=0.02)


def test_the_launchers_sigterm_ends_the_attempt_at_its_line_as_a_stop_not_a_failure(tmp_path: Path) -> None:
    # the workers' SignalException traceback after it is the stop's consequence, not a failure of their own
    tail = [
        "Traceback (most recent call last):",
        "torch.distributed.elastic.multiprocessing.api.SignalException: Process 9724 got signal: 15",
    ]
    r = _goodput_of(tmp_path, OLMO + tail)
    a = r.acc.attempts[0]
    assert a.ended == "stopped" and "death signal" in a.end_evidence
    assert r.cadence.failures == 0  # a cancel is no failure: no MTBF, no interval recommended from it
    assert r.acc.buckets["failure_to_restart"] == 0


# https://github.com/modelscope/scepter/issues/48 ("Training details": each data-parallel rank prints the line)
SCEPTER = [
    "scepter [INFO] 2024-10-06 20:20:13,249 [File: log.py Function: _print_iter_log at line 71]  Stage [train] iter: [50/500], data_time: 0.2484(0.4062), time: 0.5387(0.7207), loss: 0.1633(0.1154), nvidia-smi: 9886.000000(9885.8800), pg0_lr: 0.000100, scale: 65536.000000, [57secs 10.00%(8mins 35secs)]",
    "scepter [INFO] 2024-10-06 20:20:13,277 [File: log.py Function: _print_iter_log at line 71]  Stage [train] iter: [50/500], data_time: 0.2944(0.4476), time: 0.5389(0.7206), loss: 0.1633(0.1154), nvidia-smi: 9886.000000(9885.8800), pg0_lr: 0.000100, scale: 65536.000000, [57secs 10.00%(8mins 35secs)]",
    "scepter [INFO] 2024-10-06 20:20:18,492 [File: log.py Function: _print_iter_log at line 71]  Stage [train] iter: [60/500], data_time: 0.2386(0.3800), time: 0.5300(0.6889), loss: 0.1802(0.1262), nvidia-smi: 9886.000000(9885.9000), pg0_lr: 0.000100, scale: 65536.000000, [1mins 2secs 12.00%(7mins 38secs)]",
    "scepter [INFO] 2024-10-06 20:20:18,550 [File: log.py Function: _print_iter_log at line 71]  Stage [train] iter: [60/500], data_time: 0.2662(0.3986), time: 0.5300(0.6889), loss: 0.1802(0.1262), nvidia-smi: 9886.000000(9885.9000), pg0_lr: 0.000100, scale: 65536.000000, [1mins 2secs 12.00%(7mins 38secs)]",
]


def test_scepter_iteration_lines_of_several_ranks_are_read_not_refused(tmp_path: Path) -> None:
    r = _goodput_of(tmp_path, SCEPTER)
    assert_sane_goodput(r)
    assert r.wall_s == pytest.approx(5.301, abs=0.01)
    assert r.acc.ideal_step_s == pytest.approx(0.53, abs=0.01)  # the batch time field, not the line spacing
    assert r.acc.attempts[0].last_step == 60
    # printed every 10 iterations from mid-run: the steps before its first line are not shown: a bound
    assert r.acc.steps_completed == 10 and r.acc.completed_is_bound
    assert steps_text(r.result()).startswith("at least 10 completed")
    from scope.app.pages.goodput import _summary_facts  # the dashboard's Goodput page says the same

    assert str(dict(_summary_facts(r.result()))["steps completed"]).startswith("at least 10")


# https://github.com/kharelb/ai-science-training-series/blob/10b28bff75ff7c01d3ead0f93ec2aa5357448b05/06_parallel_training/homework_6.md
# (saforem2's wordplay: a step line every 5 iterations, glued to tqdm's bar; `dt` is the last step's ms)
WORDPLAY = [
    "  4%|▍         | 4/100 [00:04<01:12,  1.32it/s][2024-04-02 01:59:46][INFO][trainer:837] - step=5 loss=3.6606 dt=108.1093 dtf=4.6110 dtb=100.7493 sps=73.9992 mtps=1.2124 mfu=-100.0000 train_loss=4.2922 val_loss=4.2905",
    "  9%|▉         | 9/100 [00:05<00:19,  4.61it/s][2024-04-02 01:59:46][INFO][trainer:837] - step=10 loss=3.2386 dt=85.2848 dtf=4.6529 dtb=77.9241 sps=93.8033 mtps=1.5369 mfu=4.3692 train_loss=4.2922 val_loss=4.2905",
    " 14%|█▍        | 14/100 [00:05<00:12,  7.10it/s][2024-04-02 01:59:47][INFO][trainer:837] - step=15 loss=2.9490 dt=106.7558 dtf=4.4962 dtb=99.6278 sps=74.9374 mtps=1.2278 mfu=4.2813 train_loss=4.2922 val_loss=4.2905",
    " 19%|█▉        | 19/100 [00:06<00:08,  9.84it/s][2024-04-02 01:59:47][INFO][trainer:837] - step=20 loss=2.7594 dt=112.4793 dtf=4.5539 dtb=104.8465 sps=71.1242 mtps=1.1653 mfu=4.1844 train_loss=4.2922 val_loss=4.2905",
    " 24%|██▍       | 24/100 [00:06<00:08,  8.90it/s][2024-04-02 01:59:48][INFO][trainer:837] - step=25 loss=2.6489 dt=97.2465 dtf=4.5298 dtb=90.0386 sps=82.2652 mtps=1.3478 mfu=4.1492 train_loss=4.2922 val_loss=4.2905",
    " 29%|██▉       | 29/100 [00:07<00:07,  9.69it/s][2024-04-02 01:59:48][INFO][trainer:837] - step=30 loss=2.6084 dt=73.1144 dtf=4.5159 dtb=65.8305 sps=109.4176 mtps=1.7927 mfu=4.2439 train_loss=4.2922 val_loss=4.2905",
]


def test_a_per_step_time_field_beats_the_spacing_of_lines_printed_every_k_steps(tmp_path: Path) -> None:
    r = _goodput_of(tmp_path, WORDPLAY)
    assert_sane_goodput(r)
    # the median of the dt fields (97.2 and 106.8 ms in the middle), not 1-s timestamps over 5 steps (0.2 s)
    assert r.acc.ideal_step_s == pytest.approx(0.102, abs=0.003)
    assert r.acc.attempts[0].ended == "running"


def test_wandbs_success_footer_is_a_clean_end(tmp_path: Path) -> None:
    # the same log's end: W&B prints `(success)` only when the process exits 0
    r = _goodput_of(tmp_path, [*WORDPLAY, "wandb: Waiting for W&B process to finish... (success)."])
    assert r.acc.attempts[0].ended == "completed"


def test_a_markdown_heading_glued_to_the_first_line_is_the_log_not_a_header(tmp_path: Path) -> None:
    # mm.md (yvr1037/fenghuo-project-of-mmdet, above): the paste's first line carries the notes' `#####`
    first = "##### 2021-12-21 21:51:09,265 - mmdet - INFO - Environment info:"
    r = _goodput_of(tmp_path, [first, *MMDET])
    assert r.acc.start == pytest.approx(MMDET_T0 - 220.188, abs=0.01)  # 21:51:09.265, not the next line


# https://github.com/pytorch/torchtitan/pull/950 (rank 0's lines as posted: a run's middle, one step per line)
TITAN = [
    "[rank0]:[titan] 2025-03-12 11:10:21,511 - root - INFO - step: 22  loss:  6.2250  memory:  1.41GiB(1.79%)  tps: 193,831  tflops: 18.36  mfu: 1.86%",
    "[rank0]:[titan] 2025-03-12 11:10:21,589 - root - INFO - step: 23  loss:  6.2236  memory:  1.41GiB(1.79%)  tps: 212,462  tflops: 20.12  mfu: 2.03%",
    "[rank0]:[titan] 2025-03-12 11:10:21,603 - root - WARNING - Dataset c4_test is being re-looped",
    "[rank0]:[titan] 2025-03-12 11:10:21,667 - root - INFO - step: 24  loss:  6.1861  memory:  1.41GiB(1.79%)  tps: 209,645  tflops: 19.86  mfu: 2.01%",
    "[rank0]:[titan] 2025-03-12 11:10:21,751 - root - INFO - step: 25  loss:  6.1657  memory:  1.41GiB(1.79%)  tps: 197,367  tflops: 18.69  mfu: 1.89%",
    "[rank0]:[titan] 2025-03-12 11:10:21,848 - root - INFO - step: 26  loss:  6.1338  memory:  1.41GiB(1.79%)  tps: 169,197  tflops: 16.03  mfu: 1.62%",
    "[rank0]:[titan] 2025-03-12 11:10:21,929 - root - INFO - step: 27  loss:  6.1061  memory:  1.41GiB(1.79%)  tps: 203,673  tflops: 19.29  mfu: 1.95%",
    "[rank0]:[titan] 2025-03-12 11:10:22,009 - root - INFO - step: 28  loss:  6.0646  memory:  1.41GiB(1.79%)  tps: 205,287  tflops: 19.44  mfu: 1.97%",
    "[rank0]:[titan] 2025-03-12 11:10:22,092 - root - INFO - step: 29  loss:  6.1441  memory:  1.41GiB(1.79%)  tps: 196,687  tflops: 18.63  mfu: 1.88%",
]


def test_a_mid_run_log_of_one_line_per_step_counts_the_step_lines_shown(tmp_path: Path) -> None:
    r = _goodput_of(tmp_path, TITAN)
    assert r.acc.steps_completed == 8 and not r.acc.completed_is_bound  # steps 22..29, each line a step's record
    assert r.wall_s == pytest.approx(0.581, abs=0.001)


# https://github.com/2200xiaohu/LMSYS/blob/3259a5c2a80438e8e227d57cd391563bd4646220/train.log (HF Trainer + tqdm; the
# evaluation's bare bar, 2,948 batches, is drawn between the training bar's lines; its own clock restarts at 0)
_BAR = "  2%|▊         | {}/8264 [{}<15:44:25,  {}s/it]"
_EVAL = "{}%|▊         | {}/2948 [{}<00:00,  5.86it/s]\x1b[A"
LMSYS = [
    _BAR.format(198, "23:24", "7.29"),
    _BAR.format(199, "23:31", "7.29"),
    _BAR.format(200, "23:37", "7.03"),
    _EVAL.format("  0", 0, "00:00"),
    _EVAL.format("  0", 2, "00:00"),
    _EVAL.format("100", 2947, "10:39"),
    _EVAL.format("100", 2948, "10:39"),
    _BAR.format(200, "34:20", "7.03"),
    _EVAL.format("100", 2948, "10:42"),
    _BAR.format(201, "34:37", "202.72"),
    _BAR.format(202, "34:44", "144.09"),
    _BAR.format(203, "34:51", "103.10"),
]


def test_an_evaluation_bar_between_training_bar_lines_is_evaluation_not_a_hang(tmp_path: Path) -> None:
    r = _goodput_of(tmp_path, LMSYS)
    assert_sane_goodput(r)
    # eval_runtime 642.65 s in the log; the bar's run reads 10:39 (its 10:42 redraw comes after the training bar's)
    assert r.acc.buckets["evaluation"] == pytest.approx(641, abs=3)
    assert r.acc.buckets["hung"] == 0
    assert not [f for f in r.findings if f.name == "no_progress"]


# https://github.com/LemonNoel/PaddleNLP/blob/12ebe6ef7210326ce88aa40058695f90fbc66d32/examples/benchmark/fewclue/results/a9/cmnli.base.ft.b
# (PaddleNLP's port of HF Trainer: after the final save, two test passes announced as `Running Prediction`)
_PD = "[2022-08-31 {}] [    INFO] - {}"
PADDLE = [
    _PD.format(
        "15:07:19,156",
        "loss: 0.50122747, learning_rate: 2.9786344331917674e-05, global_step: 2180, interval_runtime: 5.6668, interval_samples_per_second: 11.294, interval_steps_per_second: 1.765, epoch: 0.3561",
    ),
    _PD.format(
        "15:07:24,824",
        "loss: 0.56284022, learning_rate: 2.9785364260045738e-05, global_step: 2190, interval_runtime: 5.6688, interval_samples_per_second: 11.29, interval_steps_per_second: 1.764, epoch: 0.3577",
    ),
    _PD.format(
        "15:07:30,509",
        "loss: 0.51201382, learning_rate: 2.97843841881738e-05, global_step: 2200, interval_runtime: 5.6849, interval_samples_per_second: 11.258, interval_steps_per_second: 1.759, epoch: 0.3594",
    ),
    _PD.format("15:08:30,432", "Saving model checkpoint to ./checkpoints/"),
    _PD.format("15:08:31,998", "Special tokens file saved in ./checkpoints/special_tokens_map.json"),
    _PD.format("15:08:32,009", "***** Running Prediction *****"),
    _PD.format("15:09:34,191", "***** Running Prediction *****"),
    _PD.format("15:10:52,052", "Predictions for cmnlif saved to ./fewclue_submit_examples."),
]


def test_prediction_passes_after_the_last_save_are_evaluation_not_the_save(tmp_path: Path) -> None:
    r = _goodput_of(tmp_path, PADDLE)
    assert_sane_goodput(r)
    # 15:08:32.009 -> 15:10:52.052: the two test passes (62.2 s and 77.9 s)
    assert r.acc.buckets["evaluation"] >= 140.0
    assert r.acc.buckets["checkpoint_save"] < 62.0  # the save (and the unlogged minute before it), not the passes
