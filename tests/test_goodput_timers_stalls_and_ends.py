# ruff: noqa: E501  (log lines are kept whole, as the programs print them)
"""Goodput on the shapes a review of the goodput55 change found misread, each on a few lines written here in
the real programs' formats: a relaunch from 0 with another learning rate is a new run, not a rollback; a step
timer that includes the save (mmcv's IterBasedRunner) bounds nothing; the data wait of a line whose timer
reaches back into the evaluation before it is no stall; a healthy loader's jitter is no stall, and MMEngine's
two-space `data_time` is read; a completed HF run with its final evaluation is completed; a finished HF loop
with no step line shown is not `0 steps`; an attempt whose only step line is its last line trained."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from scope.analyzers.goodput import goodput

from scope.render.goodput import render_goodput
from tests.helpers import write_log

# --- 1. detectron2: an operator's relaunch with another learning rate -------------------------------------


def _d2_launch(start: datetime, lr_peak: float) -> list[str]:
    """One detectron2 launch from iteration 0 of a long run (eta hours), stopped at iteration 199 with the
    hooks' summary and no Ctrl-C line (detectron2 sends tracebacks to stderr); lr warming up to LR_PEAK."""

    def at(s: float) -> str:
        return (start + timedelta(seconds=s)).strftime("[%m/%d %H:%M:%S]")

    lines = [
        f"{at(0)} detectron2 INFO: Rank of current process: 0. World size: 4",
        f"{at(6)} d2.engine.train_loop INFO: Starting training from iteration 0",
    ]
    for k in range(10):
        it = 19 + 20 * k
        lr = lr_peak * (k + 1) / 10
        lines.append(
            f"{at(19 + 13.6 * (k + 1))} d2.utils.events INFO:  eta: 16:59:46  iter: {it}  total_loss: 2.1  time: 0.6800  data_time: 0.0100  lr: {lr:.6f}  max_mem: 5000M"
        )
    end = 19 + 13.6 * 10 + 1
    lines += [
        f"{at(end)} d2.engine.hooks INFO: Overall training speed: 198 iterations in 0:02:14 (0.6800 s / it)",
        f"{at(end)} d2.engine.hooks INFO: Total training time: 0:02:19 (0:00:05 on hooks)",
    ]
    return lines


def test_relaunch_from_zero_with_another_learning_rate_is_a_new_run(tmp_path: Path) -> None:
    """Two launches of the same plan, each stopped short with the summary and no Ctrl-C line; the second
    prints lr 0.040000 where the first printed 0.020000 at the same iteration: an operator's relaunch with
    another setting, a new run (nothing redone, no rollback warning). The same schedule printed again is
    still the rollback it was."""
    t0 = datetime(2024, 11, 18, 14, 20, 9)
    first = _d2_launch(t0, 0.02)
    r = goodput(write_log(tmp_path / "lr", [*first, *_d2_launch(t0 + timedelta(minutes=5), 0.04)]))
    assert r.acc.steps_redone == 0, (r.acc.steps_redone, [a.new_run for a in r.acc.attempts])
    assert "learning rate" in r.acc.attempts[1].new_run, r.acc.attempts[1].new_run
    assert not [f for f in r.findings if f.kind == "rollback_loss"], [f.summary for f in r.findings]
    same = goodput(write_log(tmp_path / "same", [*first, *_d2_launch(t0 + timedelta(minutes=5), 0.02)]))
    assert same.acc.steps_redone > 0, [a.new_run for a in same.acc.attempts]


# --- 2, 3, 6, 7, 8. OpenMMLab timers ------------------------------------------------------------------------

_T0 = datetime(2021, 8, 1, 10, 0, 0)


def _mm(s: float, text: str) -> str:
    return (_T0 + timedelta(seconds=s)).strftime("%Y-%m-%d %H:%M:%S,000") + " - mmseg - INFO - " + text


def _it(s: float, it: int, total: int, step_s: float = 0.5, data_s: float = 0.010) -> str:
    return _mm(
        s,
        f"Iter [{it}/{total}]\tlr: 9.576e-03, eta: 0:08:50, time: {step_s:.3f}, data_time: {data_s:.3f}, memory: 3000, decode.loss_ce: 0.5, loss: 0.6",
    )


def test_iter_based_save_inside_the_step_timer_is_not_removed(tmp_path: Path) -> None:
    """mmcv 1.x IterBasedRunner: CheckpointHook (NORMAL) runs before IterTimerHook (LOW), so the 30 s save
    after iteration 150 is inside that iteration's time (`time: 1.100` over 50 iterations): the timer bounds
    nothing; the save line comes once the 50 iterations ran, and the 30 s to the next line is the save's."""
    lines = [
        _mm(0, "Start running, host: u@h, work_dir: /w"),
        _mm(0.1, "workflow: [('train', 1)], max: 250 iters"),
        _it(25, 50, 250),
        _it(50, 100, 250),
        _mm(75, "Saving checkpoint at 150 iterations"),
        _it(105, 150, 250, step_s=1.1),
        _it(130, 200, 250),
        _it(155, 250, 250),
    ]
    r = goodput(write_log(tmp_path, lines))
    assert 29.0 <= r.acc.buckets["checkpoint_save"] <= 30.0 + 1e-6, r.acc.buckets


def test_data_wait_of_a_timer_reaching_back_into_the_evaluation_is_no_stall(tmp_path: Path) -> None:
    """mmseg 0.x iteration-based: the evaluation after iteration 200 runs after IterTimerHook, so the next
    line's `time: 1.700, data_time: 1.210` (50 iterations, 85 s by its timer) holds the 60 s evaluation, yet
    comes 25 s after the evaluation's result line: its data wait is the evaluation's, already counted, not a
    stall in those 25 s."""
    lines = [
        _mm(0, "Start running, host: u@h, work_dir: /w"),
        _mm(0, "workflow: [('train', 1)], max: 400 iters"),
        *[_it(25 * k, 50 * k, 400) for k in range(1, 5)],
        "[>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>] 500/500, 8.3 task/s, elapsed: 59s, ETA:     0s",
        _mm(160, "Iter(val) [500]\taAcc: 0.9012, mIoU: 0.7012, mAcc: 0.8011"),
        _it(185, 250, 400, step_s=1.7, data_s=1.21),
        *[_it(185 + 25 * k, 250 + 50 * k, 400) for k in range(1, 4)],
    ]
    r = goodput(write_log(tmp_path, lines))
    assert r.acc.buckets["data_stall"] == 0.0, r.acc.buckets
    assert r.acc.buckets["evaluation"] >= 55.0, r.acc.buckets


def test_healthy_data_time_jitter_is_no_stall_and_mmengine_data_time_is_read(tmp_path: Path) -> None:
    """`data_time` 0.003-0.012 s beside `time: 0.45`: a healthy loader's jitter (4x the median, but a few ms),
    no stall, in mmcv's wording and in MMEngine's (`time: 0.4620  data_time: 0.0120`, two spaces), whose
    data wait is now read: no `data stalls are not measured` note; a real wait (0.9 s against 0.4) in
    MMEngine's wording is a stall."""
    waits = [0.0035, 0.012, 0.0031, 0.004, 0.0031, 0.009, 0.009, 0.0035, 0.012, 0.0031]

    def mmengine(s: float, it: int, step_s: float, data_s: float) -> str:
        when = (_T0 + timedelta(seconds=s)).strftime("%Y/%m/%d %H:%M:%S")
        return f"{when} - mmengine - INFO - Iter(train) [{it}/8000]  lr: 9.7e-04  eta: 0:52:51  time: {step_s:.4f}  data_time: {data_s:.4f}  memory: 4911  loss: 0.9169"

    mmcv = [_it(45 * k, 100 * k, 8000, step_s=0.45 + w, data_s=w) for k, w in enumerate(waits, 1)]
    r = goodput(write_log(tmp_path / "mmcv", mmcv))
    assert r.acc.buckets["data_stall"] == 0.0, r.acc.buckets
    engine = [mmengine(45 * k, 100 * k, 0.45 + w, w) for k, w in enumerate(waits, 1)]
    r = goodput(write_log(tmp_path / "mmengine", engine))
    assert r.acc.buckets["data_stall"] == 0.0, r.acc.buckets
    assert any(m.data_s for a in r.acc.attempts for m in a.marks), "MMEngine's data_time not read"
    assert not [c for c in r.cannot if "data stalls are not measured" in c], r.cannot
    slow = [mmengine(45 * k, 100 * k, 0.45, 0.4) for k in range(1, 6)]
    slow += [mmengine(45 * 5 + 95, 600, 0.95, 0.9), mmengine(45 * 5 + 140, 700, 0.45, 0.4)]
    r = goodput(write_log(tmp_path / "slow", slow))
    assert 49.0 <= r.acc.buckets["data_stall"] <= 50.0 + 1e-6, r.acc.buckets


def test_attempt_whose_only_step_line_is_its_last_line_trained(tmp_path: Path) -> None:
    """`Start running`, then one `Iter [50/1000] ... time: 0.500` line 25 s later, the log's last: the steps
    it reports ran (productive 0.5 s at the line's pace), not all initialization beside `1 completed`."""
    lines = [
        _mm(0, "Start running, host: u@h, work_dir: /w"),
        _mm(0.1, "workflow: [('train', 1)], max: 1000 iters"),
        _it(25, 50, 1000),
    ]
    r = goodput(write_log(tmp_path, lines))
    assert r.acc.buckets["productive"] > 0, r.acc.buckets
    assert r.goodput_pct is not None and r.goodput_pct > 0, r.acc.buckets


# --- 4, 5. HF Trainer ---------------------------------------------------------------------------------------

_HF = "12/01/2023 {t} - INFO - transformers.trainer - "


def test_hf_final_evaluation_after_a_completed_loop_keeps_the_run_completed(tmp_path: Path) -> None:
    """`Training completed. Do not forget ...`, the final save, `***** Running Evaluation *****`, then the
    untimestamped `***** eval metrics *****` block and the script's `done` 15 s later: completed (the loop said
    it finished; the metrics block is the evaluation's result), the 15 s evaluation."""
    lines = [
        "12/01/2023 10:00:00 - INFO - __main__ - Training/evaluation parameters TrainingArguments(output_dir=out)",
        _HF.format(t="10:00:05") + "***** Running training *****",
        _HF.format(t="10:00:05") + "  Total optimization steps = 30",
        "{'loss': 2.1, 'learning_rate': 4e-05, 'epoch': 1.0}",
        _HF.format(t="10:01:05") + "Saving model checkpoint to out/checkpoint-10",
        "{'loss': 1.9, 'learning_rate': 3e-05, 'epoch': 2.0}",
        _HF.format(t="10:02:05") + "Saving model checkpoint to out/checkpoint-20",
        "{'loss': 1.7, 'learning_rate': 1e-05, 'epoch': 3.0}",
        _HF.format(t="10:03:05") + "Saving model checkpoint to out/checkpoint-30",
        _HF.format(t="10:03:07") + "Training completed. Do not forget to share your model on huggingface.co/models =)",
        "{'train_runtime': 182.0, 'train_samples_per_second': 16.5, 'epoch': 3.0}",
        _HF.format(t="10:03:08") + "Saving model checkpoint to out",
        "12/01/2023 10:03:10 - INFO - __main__ - *** Evaluate ***",
        _HF.format(t="10:03:10") + "***** Running Evaluation *****",
        _HF.format(t="10:03:10") + "  Num examples = 200",
        "***** eval metrics *****",
        "  epoch                   =        3.0",
        "  eval_loss               =     1.6512",
        "12/01/2023 10:03:25 - INFO - __main__ - done",
    ]
    r = goodput(write_log(tmp_path, lines))
    assert [a.ended for a in r.acc.attempts] == ["completed"], [(a.ended, a.end_evidence) for a in r.acc.attempts]
    assert 14.0 <= r.acc.buckets["evaluation"] <= 15.0 + 1e-6, r.acc.buckets


def test_hf_loop_that_finished_with_no_step_line_shown_is_not_zero_steps(tmp_path: Path) -> None:
    """logging_strategy=no: `Running training`, `Total optimization steps = 3000`, then `Training completed.`
    and its train_runtime an hour later, no step line: steps ran unseen, so steps and goodput are unknown
    (never `0 completed` beside `completed`)."""
    lines = [
        "12/01/2023 10:00:00 - INFO - __main__ - Training/evaluation parameters TrainingArguments(output_dir=out, logging_strategy=no, disable_tqdm=True)",
        _HF.format(t="10:00:05") + "***** Running training *****",
        _HF.format(t="10:00:05") + "  Num examples = 100000",
        _HF.format(t="10:00:05") + "  Total optimization steps = 3000",
        _HF.format(t="11:00:07") + "Training completed. Do not forget to share your model on huggingface.co/models =)",
        "{'train_runtime': 3602.0, 'train_samples_per_second': 83.3, 'train_steps_per_second': 0.833, 'train_loss': 1.23, 'epoch': 3.0}",
        _HF.format(t="11:00:08") + "Saving model checkpoint to out",
        "12/01/2023 11:00:20 - INFO - __main__ - done",
    ]
    r = goodput(write_log(tmp_path, lines))
    assert r.acc.steps_completed is None, r.acc.steps_completed
    assert r.goodput_pct is None, r.acc.buckets
    text = render_goodput(r.result())
    assert "0 completed" not in text and "no step;" not in text, text


# --- 10. the save-stall finding's words --------------------------------------------------------------------


def test_untimed_save_stall_does_not_read_as_time_beside_it(tmp_path: Path) -> None:
    """A Megatron save line with no end line, the next iteration line 10 min later: the finding says no line
    times the save and where its figure comes from, not `all of it after the save lines` (extra time)."""

    def it(t: str, step: int) -> str:
        return f" [2024-03-05 {t}] iteration {step:>8}/    1000 | consumed samples: {step * 8:>12} | elapsed time per iteration (ms): 6000.0 | learning rate: 1.000000E-04 | lm loss: 2.0E+00 |"

    steps = [it(f"10:{m:02d}:00", m * 10) for m in range(0, 20)]
    save = "saving checkpoint at iteration     190 to /ckpt in torch_dist format"
    r = goodput(write_log(tmp_path, [*steps, save, it("10:29:00", 200)]))
    stall = [f.summary for f in r.findings if f.kind == "checkpoint_stall"]
    assert stall and "no line times it" in stall[0] and "all of it" not in stall[0], stall
