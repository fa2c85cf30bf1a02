# ruff: noqa: E501  (log lines are kept whole, as the programs print them)
"""Goodput classes from the heldout11 training logs (issue 40), each on a few lines written here in the real
programs' formats: a launcher's own success lines end a run as completed, a run that dies before its first
step is accounted (not refused), a save before a stretch whose lines state their own per-step time blocks
only what that time leaves, a relaunch from iteration 0 redoes the lost attempts' steps, and untimestamped
evaluation and save lines between two timestamps take the span they bound."""

from __future__ import annotations

from pathlib import Path

import pytest
from scope.analyzers.goodput import found_anything, goodput

from tests.helpers import write_log

_DS = "[2025-01-02 {t}] [INFO] "


def _ds_steps(first_s: int, steps: range) -> list[str]:
    """DeepSpeed's progress line every 10 steps, 7 s apart, from second FIRST_S after 15:47:00."""
    lines = []
    for i, step in enumerate(steps):
        s = first_s + 7 * i
        t = f"15:{47 + s // 60:02d}:{s % 60:02d},{100 + i:03d}"
        lines.append(
            _DS.format(t=t)
            + f"[logging.py:128:log_dist] [Rank 0] step={step}, skipped=0, lr=[5e-05, 5e-05], mom=[(0.9, 0.95), (0.9, 0.95)]"
        )
    return lines


def test_deepspeed_launcher_success_lines_complete_the_run(tmp_path: Path) -> None:
    """The launcher's `Process N exits successfully.` for every rank after the last step: the run completed
    (not `running`); the same for torchrun's exit barrier `Local worker group finished (WorkerState.SUCCEEDED)`."""
    exits = [
        _DS.format(t=f"15:49:{10 + r:02d},000") + f"[launch.py:351:main] Process {1000 + r} exits successfully."
        for r in range(4)
    ]
    r = goodput(write_log(tmp_path / "ds", [*_ds_steps(0, range(10, 110, 10)), *exits]))
    assert [a.ended for a in r.acc.attempts] == ["completed"], r.acc.attempts
    assert "exits successfully" in r.acc.attempts[0].end_evidence
    torchrun = "[2024-03-12 08:22:56,574] torch.distributed.elastic.agent.server.api: [INFO] Local worker group finished (WorkerState.SUCCEEDED). Waiting 300 seconds for other agents to finish"
    steps = [f"[2024-03-12 08:2{i}:00,000] train INFO: step {i * 10}/100 loss 1.0" for i in range(1, 3)]
    r = goodput(write_log(tmp_path / "tr", [*steps, torchrun]))
    assert [a.ended for a in r.acc.attempts] == ["completed"], r.acc.attempts


def test_failure_after_some_ranks_exit_successfully_still_decides(tmp_path: Path) -> None:
    """One rank exits 0, another dies: the launcher's sigkill line after the success line makes it a failure."""
    tail = [
        _DS.format(t="15:49:10,000") + "[launch.py:351:main] Process 1000 exits successfully.",
        _DS.format(t="15:49:12,000") + "[launch.py:341:sigkill_handler] Killing subprocess 1001",
        _DS.format(t="15:49:12,500").replace("INFO", "ERROR")
        + "[launch.py:341:sigkill_handler] ['/usr/bin/python', '-u', 'main.py', '--local_rank=1'] exits with return code = 1",
    ]
    r = goodput(write_log(tmp_path, [*_ds_steps(0, range(10, 60, 10)), *tail]))
    assert [a.ended for a in r.acc.attempts] == ["failed"], r.acc.attempts


def _mmcv(t: str, epoch: int, it: int, step_s: float, data_s: float) -> str:
    return (
        f"2022-08-29 {t} - mmdet - INFO - Epoch [{epoch}][{it}/200]\tlr: 1.000e-02, eta: 3 days, 1:00:00, "
        f"time: {step_s:.3f}, data_time: {data_s:.3f}, memory: 8000, loss_cls: 0.4, loss_bbox: 0.9, loss: 1.3"
    )


def test_save_before_a_stretch_timed_by_its_own_step_timer_blocks_only_what_the_timer_leaves(tmp_path: Path) -> None:
    """mmcv: the epoch-end save, then 50 iterations whose line says `time: 9.000` each (IterTimerHook
    restarts at the epoch's start, so the epoch-end save is outside it): 451 s after the save line, the save blocked at most 1 s, not the 100 s beyond the usual pace;
    the slow stretch is the data loader's (`data_time` 4.0 against a steady 0.4): 50 x 3.6 s of data stall,
    the steady wait none; no save warning."""
    lines = [
        _mmcv("10:00:00,000", 1, 100, 7.0, 0.4),
        _mmcv("10:05:50,000", 1, 150, 7.0, 0.4),
        _mmcv("10:11:40,000", 1, 200, 7.0, 0.4),
        "2022-08-29 10:11:41,000 - mmdet - INFO - Saving checkpoint at 1 epochs",
        _mmcv("10:19:12,000", 2, 50, 9.0, 4.0),
        _mmcv("10:25:02,000", 2, 100, 7.0, 0.4),
    ]
    r = goodput(write_log(tmp_path, lines))
    assert r.acc.buckets["checkpoint_save"] <= 1.0 + 1e-6, r.acc.buckets
    assert 50 * 3.5 <= r.acc.buckets["data_stall"] <= 50 * 3.6 + 1e-6, r.acc.buckets  # (4.0 - the steady 0.4)
    assert not [f for f in r.findings if f.kind == "checkpoint_stall"], [f.summary for f in r.findings]


def test_save_stall_finding_counts_the_saves_its_bucket_rests_on(tmp_path: Path) -> None:
    """A Megatron save with no end line, then the next 10 iterations' line 10 minutes later, its timer 6 s per
    iteration (the save line untimestamped, so the interval runs from the iteration-190 line): the 9 min that
    the 10 iterations at 6 s leave of it is the save's; the stall found names 1 save (never `0 saves` beside
    the seconds it blocked)."""

    def it(t: str, step: int) -> str:
        return f" [2024-03-05 {t}] iteration {step:>8}/    1000 | consumed samples: {step * 8:>12} | elapsed time per iteration (ms): 6000.0 | learning rate: 1.000000E-04 | lm loss: 2.0E+00 |"

    steps = [it(f"10:{m:02d}:00", m * 10) for m in range(0, 20)]
    save = "saving checkpoint at iteration     190 to /ckpt in torch_dist format"
    later = it("10:29:00", 200)
    r = goodput(write_log(tmp_path, [*steps, save, later]))
    stall = [f for f in r.findings if f.kind == "checkpoint_stall"]
    assert stall and "0 saves" not in stall[0].summary and "1 save" in stall[0].summary, [f.summary for f in r.findings]


def _d2_launch(start_s: int, last_iter: int, end: str) -> list[str]:
    """One detectron2 launch of a 200-iteration run (resume=False) from second START_S: its setup lines, an
    events line every 20 iterations at 0.98 s each to LAST_ITER, then END: `stopped` (the hooks' summary
    printed on the way out, then the last events line, as after_train writes them) or `eval` (the last
    iteration's saves, the summary, then `Start inference` and one progress line, where the log stops)."""

    def at(s: int) -> str:
        s += start_s
        return f"[12/22 {19 + s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}]"

    def events(s: int, it: int) -> str:
        eta = round((199 - it) * 0.98)
        return f"{at(s)} d2.utils.events INFO:  eta: 0:{eta // 60:02d}:{eta % 60:02d}  iter: {it}  total_loss: 4.7  time: 0.9800  data_time: 0.0070  lr: 0.002  max_mem: 9000M"

    lines = [
        f"{at(0)} detectron2 INFO: Rank of current process: 0. World size: 4",
        f"{at(1)} detectron2 INFO: Command line arguments: Namespace(config_file='configs/shot10.yaml', resume=False, eval_only=False, num_gpus=4)",
        f"{at(9)} d2.engine.train_loop INFO: Starting training from iteration 0",
    ]
    its = [*range(19, last_iter, 20), last_iter]
    lines += [events(9 + round(0.98 * (it + 1)) + 7, it) for it in its[:-1]]
    s = 9 + round(0.98 * (last_iter + 1)) + 7
    if end == "stopped":
        lines += [
            f"{at(s)} d2.engine.hooks INFO: Overall training speed: {last_iter - 2} iterations in 0:02:45 (0.9800 s / it)",
            f"{at(s)} d2.engine.hooks INFO: Total training time: 0:02:45 (0:00:00 on hooks)",
            events(s, last_iter),
        ]
    else:
        lines += [
            f"{at(s - 1)} fvcore.common.checkpoint INFO: Saving checkpoint to output/model_{last_iter:07d}.pth",
            f"{at(s - 1)} fvcore.common.checkpoint INFO: Saving checkpoint to output/model_final.pth",
            events(s, last_iter),
            f"{at(s)} d2.engine.hooks INFO: Overall training speed: 198 iterations in 0:03:13 (0.9800 s / it)",
            f"{at(s)} d2.engine.hooks INFO: Total training time: 0:03:15 (0:00:01 on hooks)",
            f"{at(s)} d2.evaluation.evaluator INFO: Start inference on 346 batches",
            f"{at(s + 26)} d2.evaluation.evaluator INFO: Inference done 11/346. Dataloading: 0.0013 s / iter. Inference: 0.7237 s / iter. Eval: 0.0003 s / iter. Total: 0.7253 s / iter. ETA=0:04:02",
        ]
    return lines


def test_relaunches_from_iteration_zero_of_the_same_run_redo_the_lost_attempts_steps(tmp_path: Path) -> None:
    """Three launches of the same 200-iteration run, each from iteration 0 with nothing loaded: the first left
    its loop at 171 with 27 s (27 of its 0.98 s iterations) still estimated, the second trained to 199 and
    its log stops in the evaluation after training, the third the same. The first two's steps are redone by
    the relaunches (171 + 199), not new runs; a log stopping in the evaluation after training completed
    nothing it can show (`unknown`), and the gap after such an end is unexplained, not another job's."""
    lines = _d2_launch(0, 171, "stopped") + _d2_launch(613, 199, "eval") + _d2_launch(7800, 199, "eval")
    r = goodput(write_log(tmp_path, lines, name="log.txt"))
    a = r.acc.attempts
    assert [(x.last_step, x.ended, x.new_run) for x in a] == [
        (171, "interrupted", ""),
        (199, "unknown", ""),
        (199, "unknown", ""),
    ]
    assert "estimated 27 s, 28 steps left" in a[0].end_evidence and "evaluation after training" in a[2].end_evidence
    assert r.acc.steps_redone == 171 + 199 and r.acc.steps_discarded == 0
    assert r.acc.buckets["between_jobs"] == 0 and r.acc.buckets["unexplained"] > 6900


def test_relaunch_whose_eta_implies_another_run_length_is_a_new_run(tmp_path: Path) -> None:
    """No config dump: the first events line's `eta:` over its own step time gives each launch's length; a
    launch of another length (a 2,000-iteration run after a 200-iteration one) is a new run, nothing redone."""
    longer = [ln.replace("eta: 0:02:56", "eta: 0:32:15") for ln in _d2_launch(613, 199, "eval")]
    r = goodput(write_log(tmp_path, _d2_launch(0, 171, "stopped") + longer, name="log.txt"))
    assert "planned length about 200 -> 1,994 steps" in r.acc.attempts[1].new_run, r.acc.attempts[1].new_run
    assert r.acc.steps_redone == 0


_DS_CRASH_START = [
    "[2023-06-09 05:17:46,388] [INFO] [real_accelerator.py:110:get_accelerator] Setting ds_accelerator to cuda (auto detect)",
    "[2023-06-09 05:17:49,071] [INFO] [runner.py:555:main] cmd = /opt/conda/bin/python -u -m deepspeed.launcher.launch --world_info=eyJ3b3JrZXItMCI6IFswLCAxXX0= --master_addr=10.0.0.1 --master_port=29500 main.py --zero_stage 3 --deepspeed",
    "[2023-06-09 05:17:52,629] [INFO] [launch.py:163:main] dist_world_size=2",
    "[2023-06-09 05:18:09,964] [INFO] [comm.py:594:init_distributed] cdb=None",
    "[2023-06-09 05:20:26,793] [INFO] [partition_parameters.py:453:__exit__] finished initializing model with 6.74B parameters",
]
_DS_CRASH_END = [
    "Traceback (most recent call last):",
    '  File "main.py", line 290, in main',
    "    perplexity = evaluation(model, eval_dataloader)",
    "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:1 and cpu!",
    "[2023-06-09 05:24:44,405] [INFO] [launch.py:428:sigkill_handler] Killing subprocess 20001",
    "[2023-06-09 05:24:44,406] [INFO] [launch.py:428:sigkill_handler] Killing subprocess 20002",
    "[2023-06-09 05:24:52,263] [ERROR] [launch.py:434:sigkill_handler] ['/opt/conda/bin/python', '-u', 'main.py', '--local_rank=1'] exits with return code = 1",
]


def test_a_run_that_dies_before_its_first_step_is_accounted_not_refused(tmp_path: Path) -> None:
    """DeepSpeed builds the engine (its `step=0` line is `_report_progress(0)` in the engine's constructor, no
    step), DeepSpeed-Chat starts its evaluation before training and every rank crashes: 0 steps, goodput 0,
    the whole wall time initialization and the failure, ended `failed` by the traceback."""
    engine = [
        "[2023-06-09 05:24:31,076] [INFO] [logging.py:96:log_dist] [Rank 0] DeepSpeed info: version=0.9.3, git-hash=unknown, git-branch=unknown",
        "[2023-06-09 05:24:38,195] [INFO] [logging.py:96:log_dist] [Rank 0] step=0, skipped=0, lr=[0.0001], mom=[(0.9, 0.95)]",
        "***** Running training *****",
        "***** Evaluating perplexity, Epoch 0/5 *****",
    ]
    r = goodput(write_log(tmp_path / "eval", [*_DS_CRASH_START, *engine, *_DS_CRASH_END]))
    assert found_anything(r) and r.acc.steps_completed == 0 and r.goodput_pct == 0.0, r.acc.buckets
    assert r.acc.buckets["productive"] == 0.0 and r.acc.buckets["initialization"] > 400
    assert r.wall_s == pytest.approx(425.875)
    assert [a.ended for a in r.acc.attempts] == ["failed"] and "Traceback" in r.acc.attempts[0].end_evidence

    # a crash in start-up, before the engine is built: still accounted, not refused
    r = goodput(write_log(tmp_path / "start", [*_DS_CRASH_START, *_DS_CRASH_END]))
    assert found_anything(r) and r.acc.steps_completed == 0 and r.goodput_pct == 0.0
    assert [a.ended for a in r.acc.attempts] == ["failed"]
    # and a log that stops in start-up says so
    r = goodput(write_log(tmp_path / "cut", _DS_CRASH_START))
    assert found_anything(r) and r.acc.steps_completed == 0
    assert "before a first step" in r.acc.attempts[0].end_evidence


def test_untimestamped_evaluation_and_save_lines_take_the_span_they_bound(tmp_path: Path) -> None:
    """DeepSpeed-Chat prints its evaluations and its final save with no timestamp, between DeepSpeed's stamped
    lines: the evaluation before training runs from the engine's last line to the first step's stretch, and
    the final evaluation and save fill the span from the last step line to the launcher's exit lines: an
    evaluation bounded by its two timestamps, not unexplained time."""
    start = [
        "[2025-01-02 15:45:19,529] [INFO] [runner.py:607:main] cmd = python3 -u -m deepspeed.launcher.launch --world_info=eyJsb2NhbGhvc3QiOiBbMF19 main.py",
        "[2025-01-02 15:46:55,967] [INFO] [logging.py:128:log_dist] [Rank 0] step=0, skipped=0, lr=[5e-05, 5e-05], mom=[(0.9, 0.95), (0.9, 0.95)]",
        "[2025-01-02 15:46:56,000] [INFO] [config.py:999:print] DeepSpeedEngine configuration:",
        "***** Running training *****",
        "***** Evaluating rewards, Epoch 1/1 *****",
        "chosen: 0.0, rejected: 0.0, loss: 0.693359375",
        "Beginning of Epoch 1/1, Total Micro Batches 400",
    ]
    end = [
        "***** Evaluating rewards, Epoch 1/1 *****",
        "chosen: -31.9375, rejected: -33.96875, loss: 0.6650807857513428",
        "saving the final model ...",
        "[2025-01-02 15:49:10,000] [INFO] [launch.py:351:main] Process 1000 exits successfully.",
    ]
    r = goodput(write_log(tmp_path, [*start, *_ds_steps(30, range(10, 110, 10)), *end]))
    assert [a.ended for a in r.acc.attempts] == ["completed"], r.acc.attempts
    evaluation = [iv for iv in r.acc.intervals if iv.bucket == "evaluation"]
    assert len(evaluation) == 2, r.acc.intervals
    # 15:48:33,109 (step 100's line) -> 15:49:10 (the launcher's exit line): the final evaluation and save
    assert evaluation[-1].end - evaluation[-1].start == pytest.approx(36.891, abs=0.01)
    assert "at most" in evaluation[-1].why
    assert r.acc.buckets["unexplained"] == 0.0 and r.acc.buckets["productive"] == pytest.approx(70.0, abs=0.1)


def test_detectron2_terminal_format_is_read_like_its_file_log(tmp_path: Path) -> None:
    """detectron2's terminal (and pre-2020) format `[01/29 06:25:28 d2.utils.events]: ` puts `]: ` where the
    file log has ` INFO: `: its launch, training start, save, summary and evaluation lines are read the same."""
    lines = [
        "[01/29 06:24:50 detectron2]: Rank of current process: 0. World size: 1",
        "[01/29 06:25:02 d2.engine.train_loop]: Starting training from iteration 0",
    ]
    for i, it in enumerate(range(19, 400, 20)):
        t = 6 * 3600 + 25 * 60 + 28 + round(i * 9.1)
        eta = round((399 - it) * 0.455)
        lines.append(
            f"[01/29 {t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d} d2.utils.events]:  eta: 0:{eta // 60:02d}:{eta % 60:02d}  iter: {it}  total_loss: 2.1  loss_cls: 0.6  time: 0.4550  data_time: 0.0252  lr: 0.000200  max_mem: 3069M"
        )
    lines += [
        "[01/29 06:28:21 fvcore.common.checkpoint]: Saving checkpoint to ./output/model_final.pth",
        "[01/29 06:28:22 d2.engine.hooks]: Overall training speed: 398 iterations in 0:03:01 (0.4550 s / it)",
        "[01/29 06:28:22 d2.engine.hooks]: Total training time: 0:03:03 (0:00:02 on hooks)",
        "[01/29 06:28:22 d2.evaluation.evaluator]: Start inference on 5000 images",
        "[01/29 06:30:02 d2.evaluation.evaluator]: Total inference time: 0:01:39.411 (0.019893 s / img per device, on 1 devices)",
        "[01/29 06:30:40 d2.evaluation.testing]: copypaste: Task: bbox",
    ]
    r = goodput(write_log(tmp_path, lines, name="log.txt"))
    rows = {m.row for a in r.acc.attempts for m in a.marks}
    assert {"d2_setup", "d2_train_begin", "d2_save", "d2_eval_begin", "d2_eval_result"} <= rows, rows
    assert [(a.last_step, a.ended) for a in r.acc.attempts] == [(399, "completed")]
    assert r.acc.buckets["evaluation"] == pytest.approx(138.0) and len(r.saves()) == 1
