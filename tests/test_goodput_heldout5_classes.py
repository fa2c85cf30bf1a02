"""Goodput classes from the released heldout5 training logs, each on a short real excerpt (sources in
tests/data/goodput/README.md): MMEngine's best-checkpoint saves; a trainer's progress lines flushed after
the line that says training finished (NeMo 2 after Lightning's "`Trainer.fit` stopped")."""

from __future__ import annotations

from pathlib import Path

from scope.analyzers.goodput import goodput

from tests.helpers import assert_sane_goodput, write_log

_MM = "2024/11/08 {} - mmengine - INFO - "
_TRAIN = "Epoch(train)   [{}][{}/333]  lr: 1.0000e-03  eta: 5:47:33  time: 0.6301  data_time: 0.0094  memory: 6107"
_VAL_END = "Epoch(val) [{}][167/167]    acc/top1: {}  acc/top5: 0.9643  acc/mean1: 0.786  data_time: 0.008  time: 0.12"
_BEST = "The best checkpoint with {} acc/top1 at {} epoch is saved to best_acc_top1_epoch_{}.pth."
_REMOVED = "The previous best checkpoint /home/node1/work_dirs/c3d-ucf101-all-zqf/best_acc_top1_epoch_1.pth is removed"
# mmaction2 C3D on UCF101 (CJL-sysu/mmaction2-train-log): epoch 1 and 2 ends, each evaluated, each a new best
MMACTION2_BEST = [
    _MM.format("09:18:04") + _TRAIN.format(1, 320),
    _MM.format("09:18:13") + _TRAIN.format(1, 333),
    _MM.format("09:18:33") + _VAL_END.format(1, "0.7894"),
    _MM.format("09:18:33") + _BEST.format("0.7894", 1, 1),
    _MM.format("09:18:47") + _TRAIN.format(2, " 20"),
    _MM.format("09:18:59") + _TRAIN.format(2, " 40"),
    _MM.format("09:22:04") + _TRAIN.format(2, 333),
    _MM.format("09:22:24") + _VAL_END.format(2, "0.8776"),
    _MM.format("09:22:24") + _REMOVED,
    _MM.format("09:22:25") + _BEST.format("0.8776", 2, 2),
    _MM.format("09:22:38") + _TRAIN.format(3, " 20"),
]


def test_mmengine_best_checkpoint_lines_are_saves(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path, MMACTION2_BEST))
    assert_sane_goodput(r)
    saves = [c for c in r.checkpoints if c.op == "save"]
    assert len(saves) == 2, saves
    # the second: from the removal of the previous best to the saved line, 1 s
    assert saves[1].blocking_s is not None and abs(saves[1].blocking_s - 1.0) < 0.01
    assert len(r.acc.attempts) == 1


_NEMO_W = "[NeMo W 2024-12-16 {} nemo_logging:349] /opt/megatron-lm/megatron/core/tensor_parallel/layers.py:609: "
_NEMO_STEP = (
    "Training epoch 0, iteration {i}/19 | lr: 1.499e-07 | consumed_samples: {s} | global_batch_size: 64 | "
    "global_step: {i} | reduced_train_loss: 10.84 | train_step_timing in s: {t}"
)
_NEMO_TIMES = {0: "3.632", 8: "13.75", 9: "-12.71"}  # (the real run's first step, and its timer's artefact)
# NeMo 2.0 toy Llama3 pretraining (verdimrc/playground-nemo-2.0-gh): all 20 step lines come after Lightning's
# end line, the timestamped warnings (stderr) printed while the steps ran come before it
NEMO2_BUFFERED = [
    "[NeMo I 2024-12-16 11:44:45 tokenizer_utils:223] Getting Megatron tokenizer for pretrained model name: x",
    _NEMO_W.format("11:44:57") + "UserWarning: async_grad_allreduce is deprecated",
    _NEMO_W.format("11:44:59") + "UserWarning: async_grad_allreduce is deprecated",
    "`Trainer.fit` stopped: `max_steps=20` reached.",
    _NEMO_W.format("11:45:08") + "DeprecationWarning: `product` is deprecated as of NumPy 1.25.0",
    *(_NEMO_STEP.format(i=i, s=64 * (i + 1), t=_NEMO_TIMES.get(i, "0.4531")) for i in range(20)),
    "[NeMo I 2024-12-16 11:45:13 model_checkpoint:457] Scheduled async checkpoint save for /tmp/x-last.ckpt",
]


def test_steps_printed_after_the_end_line_are_the_run_before_it(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path, NEMO2_BUFFERED))
    assert_sane_goodput(r)
    assert len(r.acc.attempts) == 1, [(a.first_step, a.last_step, a.ended) for a in r.acc.attempts]
    a = r.acc.attempts[0]
    assert (a.first_step, a.last_step, a.ended) == (1, 20, "completed")  # (global_step 0..19: 20 steps)
    # steps 1..20 ran before the end line (by their own times back from 11:45:08), not after it: the first at
    # the ideal pace (its 3.6 s past it is start-up), 17 more at 0.4531 s, two together in 1.04 s
    assert abs(r.acc.buckets.get("productive", 0.0) - (18 * 0.4531 + 13.75 - 12.71)) < 0.05


def test_a_negative_step_time_is_the_step_before_s_artefact(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path, NEMO2_BUFFERED))
    times = dict(r.acc.step_times)
    assert all(d >= 0 for d in times.values()), times
    assert abs(times[9] - 1.04) < 0.01  # 13.75 s then -12.71 s: the two steps took 1.04 s, no stall


def test_a_step_line_after_the_end_with_steps_before_it_is_still_a_new_attempt(tmp_path: Path) -> None:
    lines = [NEMO2_BUFFERED[0], NEMO2_BUFFERED[5], NEMO2_BUFFERED[6], NEMO2_BUFFERED[3], NEMO2_BUFFERED[7]]
    lines += [_NEMO_W.format("11:46:00") + "x", _NEMO_STEP.format(i=5, s=384, t="0.45")]
    r = goodput(write_log(tmp_path, lines))
    assert len(r.acc.attempts) == 2  # trained, said it ended, then trained on: the next launch (unchanged)


# ezpz's diffusion example on 24 Intel XPUs (saforem2/ezpz docs): `dt` in seconds, the shape saforem2's
# wordplay prints in ms; steps 0 and 1 are warm-up (compilation), then ~20 ms a step
_EZPZ = "[2025-12-31 12:11:{}][I][examples/diffusion:425:train] step={} loss=1.1 dt={}"
EZPZ_SECONDS = [
    _EZPZ.format(*row)
    for row in (
        ("14,278484", 0, "5.796297"),
        ("36,757215", 1, "22.401235"),
        ("36,787329", 2, "0.020253"),
        ("36,817558", 3, "0.021092"),
        ("36,846406", 4, "0.019109"),
        ("36,876569", 5, "0.020697"),
        ("36,907126", 6, "0.021068"),
        ("36,936136", 7, "0.019009"),
        ("36,965275", 8, "0.018095"),
        ("36,992008", 9, "0.017481"),
    )
]


def test_a_unitless_step_time_is_read_in_the_unit_the_clock_agrees_with(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path, EZPZ_SECONDS))
    assert_sane_goodput(r)
    times = dict(r.acc.step_times)
    assert abs(times[1] - 22.401235) < 1e-6 and abs(times[5] - 0.020697) < 1e-6, times
    assert r.acc.ideal_step_s is not None and 0.015 < r.acc.ideal_step_s < 0.025


def test_a_unitless_step_time_the_clock_agrees_with_as_ms_stays_ms(tmp_path: Path) -> None:
    # wordplay's own shape (ms): lines as far apart as their dt in ms
    lines = [
        f"[2024-04-02 01:59:{46 + i // 10:02d}.{(i % 10) * 100:03d}][INFO][trainer:837] - step={i} loss=3.2 dt=100.0"
        for i in range(10)
    ]
    r = goodput(write_log(tmp_path, lines))
    assert abs(dict(r.acc.step_times)[5] - 0.1) < 1e-9


# nanoGPT under Termux on a phone (ChenZihua-cn/nanoGPT train.log, iters 385-450): no timestamps; the
# evaluation at 400 and its save are inside iteration 400's timer (10.56 s against ~1.44 s); the loss turns
# NaN at 425 and stays
NANOGPT_TERMUX = [
    "iter 385: loss 3.3494, time 1446.03ms, mfu 0.01%",
    "iter 390: loss 3.4328, time 1447.45ms, mfu 0.01%",
    "iter 395: loss 3.5382, time 1447.95ms, mfu 0.01%",
    "step 400: train loss 3.3296, val loss 3.3687",
    "saving checkpoint to out-kirin",
    "iter 400: loss 3.3025, time 10555.02ms, mfu 0.01%",
    "iter 405: loss 3.2481, time 1452.75ms, mfu 0.01%",
    "iter 410: loss 3.3197, time 1445.70ms, mfu 0.01%",
    "iter 415: loss 3.2452, time 1446.25ms, mfu 0.01%",
    "iter 420: loss 3.5023, time 1445.08ms, mfu 0.01%",
    "iter 425: loss nan, time 1440.31ms, mfu 0.01%",
    "iter 430: loss nan, time 1439.49ms, mfu 0.01%",
    "iter 435: loss nan, time 1440.00ms, mfu 0.01%",
    "iter 440: loss nan, time 1439.46ms, mfu 0.01%",
    "iter 445: loss nan, time 1437.82ms, mfu 0.01%",
    "iter 450: loss nan, time 1440.08ms, mfu 0.01%",
]


def test_an_untimed_evaluation_then_save_inside_a_step_is_evaluation(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path, NANOGPT_TERMUX))
    assert_sane_goodput(r)
    assert r.acc.buckets["checkpoint_save"] == 0.0
    assert r.acc.buckets["evaluation"] > 8.0  # iteration 400's 10.56 s less its own ~1.44 s
    assert not [f for f in r.findings if f.kind == "checkpoint_stall"]
    assert [c.op for c in r.checkpoints] == ["save"]  # the save is still listed, its cost unknown


def test_a_loss_that_turns_nan_and_stays_is_a_finding(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path, NANOGPT_TERMUX))
    found = [f for f in r.findings if f.kind == "loss_not_finite"]
    assert len(found) == 1 and found[0].metrics["first_step"] == 425 and found[0].metrics["last_step"] == 450
    assert (
        abs(found[0].metrics["time_lost_us"] / 1e6 - (1440.08 + 1437.82 + 1439.46 + 1440.00 + 1439.49) * 5e-3 - 1.44031)
        < 0.5
    )


def test_a_loss_nan_that_recovers_is_no_finding(tmp_path: Path) -> None:
    lines = [*NANOGPT_TERMUX[:-1], "iter 450: loss 3.3025, time 1440.08ms, mfu 0.01%"]
    r = goodput(write_log(tmp_path, lines))
    assert not [f for f in r.findings if f.kind == "loss_not_finite"]


# modded-llama2's loop (nwyin/modded-llama2#10): pipe-separated fields, no name on the counter or the time
MODDED_LLAMA2 = [
    "40 | loss 6.6875 | lr 3.000000e-04 | 13808.97ms",
    "50 | loss 6.3125 | lr 3.000000e-04 | 13771.78ms",
    "60 | loss 5.6562 | lr 3.000000e-04 | 13814.18ms",
    "70 | loss 5.7500 | lr 3.000000e-04 | 13814.19ms",
]


def test_pipe_separated_counter_and_time_with_no_names_are_read(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path, MODDED_LLAMA2))
    assert_sane_goodput(r)
    assert (r.acc.attempts[0].first_step, r.acc.attempts[0].last_step) == (40, 70)
    assert r.acc.ideal_step_s is not None and abs(r.acc.ideal_step_s - 13.81) < 0.01


def test_a_table_of_numbers_between_pipes_is_no_step_line(tmp_path: Path) -> None:
    rows = ["| 8 | 128 | 12.5 ms |", "| 16 | 256 | 13.1 ms |", "| 32 | 512 | 14.0 ms |"]  # a markdown table
    r = goodput(write_log(tmp_path, rows))
    assert not r.acc.attempts


# torchtune's LoRA recipe run multi-node (pytorch/torchtune#2620): the bar behind torchx's `[trainer0|0]:`, each
# state printed twice (the second glued to the next prefix)
TORCHTUNE_MULTINODE = [
    "[trainer0|0]:1|25|Loss: 1.2621808052062988:  26%|██▌       | 26/101 [06:45<17:27, 13.96s/it]",
    "[trainer0|0]:1|26|Loss: 1.2436443567276:  26%|██▌       | 26/101 [06:45<17:27, 13.96s/it]   [trainer0|0]:",
    "[trainer0|0]:1|26|Loss: 1.2436443567276:  27%|██▋       | 27/101 [07:00<17:31, 14.21s/it]",
    "[trainer0|0]:1|27|Loss: 1.1958776712417603:  27%|██▋       | 27/101 [07:00<17:31, 14.21s/it][trainer0|0]:",
    "[trainer0|0]:1|27|Loss: 1.1958776712417603:  28%|██▊       | 28/101 [07:20<19:16, 15.84s/it]",
    "[trainer0|0]:1|28|Loss: 1.2151892185211182:  28%|██▊       | 28/101 [07:20<19:16, 15.84s/it][trainer0|0]:",
    "[trainer0|0]:1|28|Loss: 1.2151892185211182:  29%|██▊       | 29/101 [07:38<19:45, 16.46s/it]",
    "[trainer0|0]:1|29|Loss: 1.2168413400650024:  29%|██▊       | 29/101 [07:38<19:45, 16.46s/it][trainer0|0]:",
]


def test_torchtune_bar_behind_a_launcher_prefix_is_read(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path, TORCHTUNE_MULTINODE))
    assert_sane_goodput(r)
    assert r.acc.steps_completed == 3 and r.wall_s == 53.0  # 26/101 at 06:45 -> 29/101 at 07:38


# PaddleNLP's event-extraction fine-tune (klein-wang/event_element_extraction workerlog.0): a bare bar over the
# 392,507 examples being converted (thousands of items a second), then the training loop's own lines
PADDLENLP_DATA_BAR = [
    "[2021-05-19 13:59:22,714] [    INFO] - Downloading ernie_v1_chn_base.pdparams from https://paddlenlp.bj.bcebos.com/x",
    "  0%|          | 0/392507 [00:00<?, ?it/s]  0%|          | 1283/392507 [00:00<00:30, 12747.92it/s]"
    "  1%|          | 4723/392507 [00:00<00:24, 15713.35it/s]  2%|▏         | 8601/392507 [00:00<00:20, 19125.97it/s]",
    "W0519 13:59:30.552155  1264 device_context.cc:404] Please NOTE: device: 0, GPU Compute Capability: 7.0",
    "============start train==========",
    *(f"train epoch: 0 - step: {s} (total: 1814) - loss: 0.107434" for s in range(10, 60, 10)),
]


def test_a_bar_of_thousands_of_items_a_second_is_data_preparation_not_steps(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path, PADDLENLP_DATA_BAR))
    steps = [(a.first_step, a.last_step) for a in r.acc.attempts]
    assert steps and all(last is not None and last <= 50 for _, last in steps), steps


def test_step_lines_with_no_time_of_their_own_leave_goodput_unknown(tmp_path: Path) -> None:
    from scope.render.goodput import render_goodput, summary_line

    r = goodput(write_log(tmp_path, PADDLENLP_DATA_BAR))
    assert r.timed and r.steps_untimed and r.goodput_pct is None
    text = render_goodput(r.result())
    assert "goodput unknown" in text and "the step lines carry no time of their own" in text
    assert "unknown" in summary_line(r.result())


# a plain PyTorch loop under LSF (MrCogito/Deep_learning_2023, PaiNN): one line per epoch of a stated number,
# a validation line after each, no step counter, no time
EPOCHS_ONLY = [
    "Epoch [1/650], Train Loss: 0.1746, Train L1 Loss: 1.9826",
    "Epoch [1/650], Validation Loss: 0.0714, Validation L1: 1.7551, Smoothed Validation Loss: 0.0714",
    "Epoch [2/650], Train Loss: 0.0586, Train L1 Loss: 1.5459",
    "Epoch [2/650], Validation Loss: 0.0697, Validation L1: 1.7230, Smoothed Validation Loss: 0.0713",
    "Epoch [3/650], Train Loss: 0.0547, Train L1 Loss: 1.4923",
    "Epoch [3/650], Validation Loss: 0.1037, Validation L1: 2.3174, Smoothed Validation Loss: 0.0745",
    "Epoch [4/650], Train Loss: 0.0512, Train L1 Loss: 1.4402",
]


def test_a_loop_that_counts_only_epochs_counts_them_as_steps(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path, EPOCHS_ONLY))
    assert len(r.acc.attempts) == 1
    assert (r.acc.attempts[0].first_step, r.acc.attempts[0].last_step) == (1, 4)
    assert r.acc.steps_redone == 0  # the validation lines are no second step of their epoch


def test_an_epoch_line_with_both_training_and_validation_results_is_that_epochs_step() -> None:
    """`Epoch [3/50], Train Loss: 0.03, Val Loss: 0.13`: one line an epoch reporting both is the epoch's step; only
    a validation line of its own is skipped (it was refused: no training progress found)."""
    from scope.analyzers.goodput.structural import structural_step

    assert structural_step("2024-06-01 12:03:00 Epoch [3/50], Train Loss: 0.03, Val Loss: 0.13", stamped=True)
    assert structural_step("2024-06-01 12:03:00 Epoch [3/50], Val Loss: 0.13", stamped=True) is None
