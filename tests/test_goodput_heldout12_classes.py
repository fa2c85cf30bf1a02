# ruff: noqa: E501  (log lines are kept whole, as the programs print them)
"""Goodput classes from the heldout12 training logs (issue 40), each on a few lines written here in the real
programs' formats: LLaMA-Factory's logger prefix before HF Trainer's logs dict, and saves that blocked no
longer than their lines show."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from scope.analyzers.goodput import goodput

from tests.helpers import write_log

_T0 = datetime(2024, 11, 26, 22, 7, 6)
_RUN = "saves/Qwen-7B/lora/train_2024-11-26"


def _lf(s: float, where: str, msg: str) -> str:
    """One line of LLaMA-Factory's logger, S seconds after the first."""
    return f"[INFO|{(_T0 + timedelta(seconds=s)):%Y-%m-%d %H:%M:%S}] {where} >> {msg}"


def _lf_save(s: float, step: int) -> list[str]:
    """HF Trainer's periodic save of a LoRA adapter, its files all written within the second."""
    ckpt = f"{_RUN}/checkpoint-{step}"
    return [
        _lf(s, "trainer.py:3801", f"Saving model checkpoint to {ckpt}"),
        _lf(s, "tokenization_utils_base.py:2646", f"tokenizer config file saved in {ckpt}/tokenizer_config.json"),
        _lf(s, "tokenization_utils_base.py:2655", f"Special tokens file saved in {ckpt}/special_tokens_map.json"),
    ]


def _lf_run(with_loss_lines: bool, tail: str = "") -> list[str]:
    """A LoRA run logging every 5 steps (100 s apart), evaluating (10 s) then saving (0 s) every 20 steps; the
    5 steps after each save run 8 s slower than the median (the first batches after the evaluation)."""
    lines = [
        _lf(0, "parser.py:355", "Process rank: 0, device: cuda:0, n_gpu: 1, distributed training: True"),
        _lf(9, "trainer.py:2313", "***** Running training *****"),
        _lf(9, "trainer.py:2321", "  Total optimization steps = 1,000"),
    ]
    s = 9.0
    for n in range(1, 13):  # the n-th loss line is step 5n
        s += 108 if n % 4 == 1 and n > 1 else 100
        if with_loss_lines:
            lines.append(
                _lf(
                    s,
                    "logging.py:157",
                    f"{{'loss': {2.0 - n / 10:.4f}, 'learning_rate': 5.0000e-05, 'epoch': {n * 0.29:.2f}{tail}}}",
                )
            )
        if n % 4 == 0:
            lines += [_lf(s, "trainer.py:4117", ""), "***** Running Evaluation *****"]
            lines += [_lf(s, "trainer.py:4119", "  Num examples = 243")]
            s += 10
            lines += _lf_save(s, 5 * n)
    return lines


def test_llamafactory_loss_lines_are_steps_and_its_saves_block_what_their_lines_show(tmp_path: Path) -> None:
    """The logs dict behind LLaMA-Factory's `[INFO|...] logging.py:157 >> ` prefix is read as steps (it was
    not: no step, 94.5% of the run booked as a critical save stall); the 8 s by which the steps after each
    0-s save ran over the median pace is the steps' noise, not the save's."""
    r = goodput(write_log(tmp_path, _lf_run(with_loss_lines=True)))
    assert [(a.first_step, a.last_step) for a in r.acc.attempts] == [(5, 60)], r.acc.attempts
    assert r.acc.steps_completed == 60
    assert r.acc.buckets["checkpoint_save"] < 1.0, r.acc.buckets
    assert r.acc.buckets["evaluation"] == 30.0
    assert not [f for f in r.findings if f.kind == "checkpoint_stall"]


def test_llamafactory_loss_lines_with_keys_after_the_epoch_are_steps(tmp_path: Path) -> None:
    """LLaMA-Factory's Web UI adds `'throughput'` after the epoch (and RL stages `'reward'`, `'accuracy'`):
    the lines are steps all the same (none was read: no step, the saves booked as stalls)."""
    r = goodput(write_log(tmp_path, _lf_run(with_loss_lines=True, tail=", 'throughput': 1523.44, 'reward': '-0.5'")))
    assert [(a.first_step, a.last_step) for a in r.acc.attempts] == [(5, 60)], r.acc.attempts
    assert r.acc.buckets["evaluation"] == 30.0
    assert not [f for f in r.findings if f.kind == "checkpoint_stall"]


def test_with_no_step_line_the_time_after_a_save_is_unexplained_not_a_stall(tmp_path: Path) -> None:
    """The same run with no progress line read: the 5 minutes from each save's last file to the next
    evaluation are not shown to be the save's: unexplained, and no checkpoint_stall finding."""
    r = goodput(write_log(tmp_path, _lf_run(with_loss_lines=False)))
    assert r.acc.buckets["checkpoint_save"] < 1.0, r.acc.buckets
    assert r.acc.buckets["unexplained"] > 600, r.acc.buckets
    assert not [f for f in r.findings if f.kind == "checkpoint_stall"]


def _ppdet(s: int, msg: str) -> str:
    """A PaddleDetection logger line, S seconds after 09:00:00."""
    return f"[03/02 09:{s // 60:02d}:{s % 60:02d}] {msg}"


def _ppdet_launch(s: int, pid: int) -> list[str]:
    """One launch from S: an epoch of 100 iterations at 0.6 s (lines at 0 and 50), the epoch-end save (10 s,
    its line printed once written), a 20-s evaluation, the best-model save (10 s), then iterations 0 and 50 of
    the next epoch and the launcher's SIGTERM, with the DataLoader's traceback it causes."""
    step = "ppdet.engine INFO: Epoch: [{}] [{:>3d}/100] learning_rate: 0.000010 loss: 9.100000 eta: 0:20:00 batch_cost: 0.6000 data_cost: 0.0100 ips: 6.6 images/s"
    save = "ppdet.utils.checkpoint INFO: Save checkpoint: output/rtdetr_r50vd"
    return [
        f"I0302 09:{s // 60:02d}:{s % 60:02d}.100000 {pid} nccl_context.cc:83] init nccl context nranks: 2 local rank: 0 gpu id: 0 ring id: 0",
        _ppdet(s + 4, step.format(0, 0)),
        _ppdet(s + 34, step.format(0, 50)),
        _ppdet(s + 74, save),
        _ppdet(s + 94, "ppdet.engine INFO: Total sample number: 232, average FPS: 9.0"),
        _ppdet(s + 94, "ppdet.engine INFO: Best test bbox ap is 0.010."),
        _ppdet(s + 104, save),
        _ppdet(s + 105, step.format(1, 0)),
        _ppdet(s + 135, step.format(1, 50)),
        "FatalError: `Termination signal` is detected by the operating system.",
        f"  [SignalInfo: *** SIGTERM (@0x3e8) received by PID {pid} (TID 0x7f3a11ffe700) from PID {pid - 80} ***]",
        "Traceback (most recent call last):",
        "RuntimeError: DataLoader 2 workers exit unexpectedly, pids: 4101, 4102",
    ]


def test_launcher_sigterm_stops_each_launch_and_ppdet_saves_block_before_their_lines(tmp_path: Path) -> None:
    """Paddle's `SIGTERM ... received by PID` ends each launch as stopped (not failed, whatever traceback
    follows); the down time until the next launch's NCCL init is queued; `Save checkpoint:` is printed once
    the save is written, so each blocked the 10 s before it (after the epoch's last 50 iterations at 0.6 s)."""
    r = goodput(write_log(tmp_path, [*_ppdet_launch(0, 4180), *_ppdet_launch(300, 5260)]))
    assert [a.ended for a in r.acc.attempts] == ["stopped", "stopped"], r.acc.attempts
    assert r.acc.buckets["checkpoint_save"] == pytest.approx(40.0, abs=1.0), r.acc.buckets
    assert [round(c.blocking_s or 0) for c in r.saves()] == [10, 10, 10, 10]
    assert r.acc.buckets["evaluation"] == pytest.approx(40.0, abs=1.0)
    assert r.acc.buckets["queued"] == pytest.approx(300 - 135, abs=1.0)
    assert r.acc.buckets["unexplained"] < 1.0


def test_launcher_abort_after_a_sigterm_makes_it_a_peers_failure(tmp_path: Path) -> None:
    """Paddle's launcher SIGTERMs the survivors when a trainer fails, then logs `ABORT!!! ... was aborted`:
    the launch failed (read as stopped); the rank's own DataLoader traceback after its SIGTERM alone is no
    peer's failure (the launches of the test above stay stopped)."""
    abort = "ERROR 2022-03-02 09:02:16,000 launch_utils.py:343] ABORT!!! Out of all 2 trainers, the trainer process with rank=[1] was aborted. Please check its log."
    r = goodput(write_log(tmp_path, [*_ppdet_launch(0, 4180), abort]))
    assert [a.ended for a in r.acc.attempts] == ["failed"], r.acc.attempts
    assert "ABORT!!!" in r.acc.attempts[0].end_evidence


_YOLOX_T0 = datetime(2021, 7, 28, 15, 0, 0)


def _yolox(s: float, where: str, msg: str, level: str = "INFO") -> str:
    """A YOLOX loguru line, S seconds after 15:00:00."""
    return (
        f"{(_YOLOX_T0 + timedelta(seconds=s)):%Y-%m-%d %H:%M:%S.%f}"[:-3]
        + f" | {level:<8} | yolox.core.trainer:{where} - {msg}"
    )


def _yolox_launch(s: float, epochs: int, max_epoch: int = 120) -> list[str]:
    """A launch from scratch at S: 8 s of start-up, then EPOCHS epochs (of MAX_EPOCH planned) of 100
    iterations at 0.5 s (a line every 10), each ended by a 1-s save."""
    lines = [
        _yolox(s, "before_train:133", "args: Namespace(batch_size=8, devices=2, exp_file='exps/yolox_voc_s.py')"),
        _yolox(s + 8, "before_train:188", "Training start..."),
    ]
    t = s + 8
    for epoch in range(1, epochs + 1):
        lines.append(_yolox(t, "before_epoch:196", f"---> start train epoch{epoch}"))
        for it in range(10, 101, 10):
            t += 5
            lines.append(
                _yolox(
                    t,
                    "after_iter:246",
                    f"epoch: {epoch}/{max_epoch}, iter: {it}/100, mem: 9272Mb, iter_time: 0.500s, data_time: 0.003s, total_loss: 6.0, lr: 1.0e-02, size: 640, ETA: 1:40:00",
                )
            )
        lines.append(_yolox(t, "save_ckpt:326", "Save weights to ./YOLOX_outputs/yolox_voc_s"))
        t += 1
    return lines


def test_relaunches_from_scratch_are_attempts_and_the_down_time_between_them_is_no_hang(tmp_path: Path) -> None:
    """YOLOX launched three times: the first trains 3 epochs and falls silent; 10 min later a launch crashes
    in start-up (its traceback 1.5 s after its args line); 40 s later a third trains from epoch 1. Each
    launch is an attempt (the second failed in initialization); the 10 min before a launch from scratch is
    down time (queued), not a hang nor unexplained; the crash's 40 s is the restart's."""
    crash = [
        _yolox(774, "before_train:133", "args: Namespace(batch_size=8, devices=2, exp_file='exps/yolox_voc_s.py')"),
        _yolox(
            775.5,
            "launch:147",
            "An error has been caught in function '_distributed_worker', process 'SpawnProcess-1' (641602), thread 'MainThread' (1403):",
            "ERROR",
        ),
        "Traceback (most recent call last):",
        "FileNotFoundError: [Errno 2] No such file or directory: 'datasets/VOCdevkit/VOC2012/ImageSets/Main/trainval.txt'",
    ]
    r = goodput(write_log(tmp_path, [*_yolox_launch(0, 3), *crash, *_yolox_launch(815.5, 2)]))
    a = r.acc.attempts
    assert [(x.first_step, x.last_step) for x in a] == [(10, 300), (None, None), (10, 200)], a
    assert a[1].ended == "failed"
    assert r.acc.buckets["hung"] == 0 and not [f for f in r.findings if f.kind == "no_progress"]
    assert r.acc.buckets["queued"] == pytest.approx(774 - 161, abs=1.0), r.acc.buckets
    assert r.acc.buckets["failure_to_restart"] == pytest.approx(40, abs=1.0)
    assert r.acc.buckets["unexplained"] < 2.0


def _yolox_steps(s: float, iters: range, step_s: float, per_epoch: int = 100) -> list[str]:
    """YOLOX progress lines for the run's iterations ITERS (a line every 10), the first at S, STEP_S apart."""
    return [
        _yolox(
            s + 10 * step_s * i,
            "after_iter:246",
            f"epoch: {n // per_epoch + 1}/120, iter: {n % per_epoch + 10}/{per_epoch}, mem: 9272Mb, iter_time: {step_s:.3f}s, data_time: 0.003s, total_loss: 6.0, lr: 1.0e-02, size: 640, ETA: 1:40:00",
        )
        for i, n in enumerate(iters)
    ]


def test_a_relaunch_of_another_configuration_is_measured_against_its_own_pace(tmp_path: Path) -> None:
    """A first run at 0.53 s an iteration, its lines cut between iterations 300 and 3,000 (at its own steady
    pace), then a relaunch from scratch at 0.30 s with more lines: against the job's 0.30 s median, the cut
    read as 10 minutes of hang; against the run's own pace it is work. The 400 s before the relaunch is down
    time, not a slow restart."""
    args = "args: Namespace(batch_size=8, devices=2, exp_file='exps/yolox_voc_s.py')"
    first = [_yolox(0, "before_train:133", args), *_yolox_steps(8, range(0, 300, 10), 0.53)]
    cut_at = 8 + 5.3 * 30 + 0.53 * 2700
    first += ["[... cut ...]", *_yolox_steps(cut_at, range(2990, 3290, 10), 0.53)]
    last = cut_at + 5.3 * 29  # the first run's last line; 400 s of silence, then the relaunch
    second = [_yolox(last + 400, "before_train:133", args), *_yolox_steps(last + 408, range(0, 800, 10), 0.3)]
    r = goodput(write_log(tmp_path, first + second))
    assert len(r.acc.attempts) == 2, r.acc.attempts
    assert r.acc.buckets["hung"] == 0, r.acc.buckets
    assert not [f for f in r.findings if f.kind == "no_progress"]
    # the 400 s before the relaunch from scratch follow a line in mid-epoch: nothing shows the first run had
    # ended rather than hung until killed: unexplained (not queued, not hung)
    assert r.acc.buckets["unexplained"] == pytest.approx(400, abs=1.0), r.acc.buckets
    assert r.acc.buckets["queued"] == 0


@pytest.mark.parametrize("silence_s", [60.0, 2400.0])
@pytest.mark.parametrize("at_rest", [True, False])
def test_silence_before_a_relaunch_from_scratch_is_down_time_only_after_a_rest(
    tmp_path: Path, silence_s: float, at_rest: bool
) -> None:
    """A YOLOX launch, silent, then a relaunch from epoch 1: queued when its last line is its epoch's end
    save, unexplained when the launch went silent mid-epoch (it may have hung until killed); the same for a
    minute's silence as for 40 minutes'."""
    args = "args: Namespace(batch_size=8, devices=2, exp_file='exps/yolox_voc_s.py')"
    first = [_yolox(0, "before_train:133", args), *_yolox_steps(8, range(0, 150 if at_rest else 140, 10), 0.5)]
    last = 8 + 5.0 * (14 if at_rest else 13)
    if at_rest:
        first += [_yolox(last, "save_ckpt:326", "Save weights to ./YOLOX_outputs/yolox_voc_s")]
    second = [
        _yolox(last + silence_s, "before_train:133", args),
        *_yolox_steps(last + silence_s + 8, range(0, 100, 10), 0.5),
    ]
    r = goodput(write_log(tmp_path, first + second))
    assert len(r.acc.attempts) == 2 and r.acc.buckets["hung"] == 0, r.acc.attempts
    kind = "queued" if at_rest else "unexplained"
    assert r.acc.buckets[kind] == pytest.approx(silence_s, abs=1.0), r.acc.buckets


def _mrb(s: float, name: str, msg: str) -> str:
    """A maskrcnn-benchmark logger line, S seconds after 05:50:30."""
    stamp = datetime(2019, 7, 23, 5, 50, 30) + timedelta(seconds=s)
    return f"{stamp:%Y-%m-%d %H:%M:%S},{int(stamp.microsecond / 1000):03d} {name} INFO: {msg}"


def test_maskrcnn_periodic_saves_are_saves_and_a_log_ending_in_the_final_test_is_completed(tmp_path: Path) -> None:
    """maskrcnn-benchmark: 600 iterations at 0.8 s (a line every 20), `Saving checkpoint to model_0000200.pth`
    every 200 (0.5 s), `Total training time`, then the test after training, where the log ends: the run
    completed (its loop said so), and the periodic saves are saves."""
    lines = [_mrb(0, "maskrcnn_benchmark", "Using 4 GPUs"), _mrb(6, "maskrcnn_benchmark.trainer", "Start training")]
    t = 6.0
    for it in range(20, 601, 20):
        t += 16
        lines.append(
            _mrb(
                t,
                "maskrcnn_benchmark.trainer",
                f"eta: 0:10:00  iter: {it}  loss: 1.1549 (2.9918)  loss_mask: 0.4914 (2.0009)  time: 0.8000 (0.8100)  data: 0.0100 (0.0300)  lr: 0.020000  max mem: 4000",
            )
        )
        if it % 200 == 0:
            lines.append(
                _mrb(t, "maskrcnn_benchmark.utils.checkpoint", f"Saving checkpoint to ./outputs/model_{it:07d}.pth")
            )
            t += 0.5
    lines += [
        _mrb(t, "maskrcnn_benchmark.utils.checkpoint", "Saving checkpoint to ./outputs/model_final.pth"),
        _mrb(t + 0.6, "maskrcnn_benchmark.trainer", "Total training time: 0:08:10.000000 (0.8167 s / it)"),
        _mrb(t + 1, "maskrcnn_benchmark.inference", "Start evaluation on coco_2014_minival dataset(500 images)."),
        _mrb(t + 9, "maskrcnn_benchmark.inference", "Evaluating predictions"),
    ]
    r = goodput(write_log(tmp_path, lines))
    assert [(a.first_step, a.last_step, a.ended) for a in r.acc.attempts] == [(20, 600, "completed")], r.acc.attempts
    assert [c.step for c in r.saves()][:3] == [200, 400, 600]
    assert r.acc.buckets["evaluation"] == pytest.approx(8.0, abs=0.5), r.acc.buckets


def _yolox_worker_error(s: float, exception: str) -> list[str]:
    """loguru's logger.catch around YOLOX's worker: its ERROR line, the traceback, the exception's line."""
    return [
        _yolox(
            s,
            "launch:147",
            "An error has been caught in function '_distributed_worker', process 'SpawnProcess-1' (611819), thread 'MainThread' (1397):",
            "ERROR",
        ),
        "Traceback (most recent call last):",
        exception,
    ]


@pytest.mark.parametrize(
    ("exception", "ended", "evidence"),
    [
        ("KeyboardInterrupt", "interrupted", "KeyboardInterrupt"),
        ("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB", "failed", "An error has been caught"),
    ],
)
def test_yolox_summary_line_then_a_caught_exception_ends_the_launch_as_the_exception_says(
    tmp_path: Path, exception: str, ended: str, evidence: str
) -> None:
    """YOLOX's after_train runs in train()'s `finally`: its summary line, then loguru's worker error, then the
    traceback: a KeyboardInterrupt is the user's Ctrl-C (interrupted, not failed, not completed), another
    exception a failure named by loguru's line, the traceback's head (before YOLOX's rows: the bare `Traceback`
    line). The Ctrl-C case read the same before them (Python's traceback decided); it stays to keep loguru's
    line, a failure row of its own, from turning a Ctrl-C into a failure."""
    tail = [_yolox(200, "after_train:191", "Training of experiment is done and the best AP is 24.87")]
    r = goodput(write_log(tmp_path, [*_yolox_launch(0, 1), *tail, *_yolox_worker_error(200, exception)]))
    a = r.acc.attempts
    assert [(x.first_step, x.last_step, x.ended) for x in a] == [(10, 100, ended)], a
    assert evidence in a[0].end_evidence, a[0].end_evidence


def test_yolox_end_line_before_its_last_epoch_is_a_stop_not_a_completion(tmp_path: Path) -> None:
    """after_train prints `Training of experiment is done` on every way out of train(): after epoch 2 of 120
    (200 of 12,000 iterations, as the step lines state) it is a loop stopped early; after epoch 2 of 2 the run
    completed."""
    end = _yolox(200, "after_train:191", "Training of experiment is done and the best AP is 24.87")
    r = goodput(write_log(tmp_path / "short", [*_yolox_launch(0, 2), end]))
    a = r.acc.attempts
    assert [(x.last_step, x.ended, x.planned_steps) for x in a] == [(200, "interrupted", 12000)], a
    assert "200 of the 12,000 planned" in a[0].end_evidence
    done = goodput(write_log(tmp_path / "done", [*_yolox_launch(0, 2, max_epoch=2), end]))
    assert [(x.last_step, x.ended) for x in done.acc.attempts] == [(200, "completed")], done.acc.attempts


def _yolox_console(s: float, line: int, msg: str) -> str:
    """A line of YOLOX's console sink (`{time:YYYY-MM-DD HH:mm:ss} | {level: <8} | {name}:{line} - {message}`),
    as a nohup or SLURM .out file holds it, S seconds after 15:00:00."""
    return f"{(_YOLOX_T0 + timedelta(seconds=s)):%Y-%m-%d %H:%M:%S} | INFO     | yolox.core.trainer:{line} - {msg}"


def test_yolox_console_lines_are_read_as_its_log_file_is(tmp_path: Path) -> None:
    """The console sink prints no function name and no milliseconds: its launch, steps, saves, evaluation
    (the summary's first line) and end line are read (none was: no step, no attempt's end), 3 epochs of 3
    completed, the 30-s evaluation after epoch 2 booked as evaluation."""
    lines = [
        _yolox_console(0, 132, "args: Namespace(batch_size=8, devices=2)"),
        _yolox_console(8, 196, "Training start..."),
    ]
    t = 8.0
    for epoch in range(1, 4):
        lines.append(_yolox_console(t, 218, f"---> start train epoch{epoch}"))
        for it in range(10, 101, 10):
            t += 5
            lines.append(
                _yolox_console(
                    t,
                    246,
                    f"epoch: {epoch}/3, iter: {it}/100, mem: 9272Mb, iter_time: 0.500s, data_time: 0.003s, total_loss: 6.0, lr: 1.0e-02, size: 640, ETA: 0:05:00",
                )
            )
        lines.append(_yolox_console(t, 402, "Save weights to ./YOLOX_outputs/yolox_voc_s"))
        if epoch == 2:
            t += 30
            lines += [
                _yolox_console(t, 381, ""),
                "Average forward time: 9.60 ms, Average NMS time: 3.07 ms, Average inference time: 12.67 ms",
            ]
            lines.append(_yolox_console(t, 402, "Save weights to ./YOLOX_outputs/yolox_voc_s"))
        t += 1
    lines.append(_yolox_console(t, 200, "Training of experiment is done and the best AP is 24.87"))
    r = goodput(write_log(tmp_path, lines))
    assert [(a.first_step, a.last_step, a.ended) for a in r.acc.attempts] == [(10, 300, "completed")], r.acc.attempts
    assert r.acc.buckets["evaluation"] == pytest.approx(30.0, abs=1.0), r.acc.buckets


def _mrb_run(step_s: list[float]) -> list[str]:
    """maskrcnn-benchmark: a line every 20 iterations, each taking its entry of STEP_S per iteration."""
    lines, t = [_mrb(0, "maskrcnn_benchmark.trainer", "Start training")], 0.0
    for i, d in enumerate(step_s, 1):
        t += 20 * d
        lines.append(
            _mrb(
                t,
                "maskrcnn_benchmark.trainer",
                f"eta: 1:00:00  iter: {20 * i}  loss: 1.1549 (2.9918)  time: {d:.4f} ({d:.4f})  data: 0.0100 (0.0300)  lr: 0.020000  max mem: 4000",
            )
        )
    return lines


def test_a_steady_slowdown_is_a_finding_of_its_own(tmp_path: Path) -> None:
    """200 step lines whose step time grows steadily from 0.60 s to 0.78 s (+30%, no gap, no stall): a
    step_time_drift warning with the early and late pace; the same run at a steady pace has none."""
    r = goodput(write_log(tmp_path / "drift", _mrb_run([0.6 + 0.18 * i / 199 for i in range(200)])))
    drift = [f for f in r.findings if f.kind == "step_time_drift"]
    assert len(drift) == 1 and drift[0].severity == "warning", r.findings
    assert drift[0].metrics["first_s"] == pytest.approx(0.61, abs=0.01)
    assert drift[0].metrics["last_s"] == pytest.approx(0.77, abs=0.01)
    assert r.acc.buckets["hung"] == 0
    steady = goodput(write_log(tmp_path / "steady", _mrb_run([0.6 + 0.01 * (i % 3) for i in range(200)])))
    assert not [f for f in steady.findings if f.kind == "step_time_drift"]


def _meg_run(step_s: list[float], batch: list[int] | None = None, every: int = 10) -> list[str]:
    """Megatron-LM: a line every EVERY iterations (its timestamp to the second), each iteration taking its
    entry of STEP_S, with the global batch size it states (BATCH, else 512)."""
    lines, t = ["[before the start of training step] datetime: 2024-03-05 10:00:00 "], 0.0
    t0 = datetime(2024, 3, 5, 10, 0, 0)
    for i, d in enumerate(step_s, 1):
        t += every * d
        b = batch[i - 1] if batch else 512
        lines.append(
            f" [{(t0 + timedelta(seconds=t)):%Y-%m-%d %H:%M:%S}] iteration {every * i:>8d}/  100000 | consumed samples: {every * i * b:>12d} | elapsed time per iteration (ms): {1000 * d:.1f} | learning rate: 1.000000E-04 | global batch size: {b:>5d} | lm loss: 7.123456E+00 |"
        )
    return lines


def _drift(tmp_path: Path, lines: list[str]) -> list[object]:
    return [f for f in goodput(write_log(tmp_path, lines)).findings if f.kind == "step_time_drift"]


def test_step_time_drift_is_gradual_separated_and_stated_work_is_no_drift(tmp_path: Path) -> None:
    """No step_time_drift on healthy runs that the median of each tenth's samples warned on: a batch-size
    rampup the lines state, a freeze -> unfreeze change of pace at mid-run, log-normal noise around one pace,
    a step time alternating between two paces, one line a step with timestamps to the second, and too few
    lines; the same growth spread over the run (0.5 s -> 0.75 s, a line every 10 steps) is one."""
    n = 300
    ramp = [0.3 + 0.9 * i / n for i in range(n)]
    assert not _drift(tmp_path / "ramp", _meg_run(ramp, batch=[64 + 448 * i // n for i in range(n)]))
    assert not _drift(tmp_path / "unfreeze", _meg_run([0.5 if i < n // 2 else 0.9 for i in range(n)]))
    rng = random.Random(4)
    assert not _drift(tmp_path / "noise", _meg_run([1.0 * rng.lognormvariate(0, 0.25) for _ in range(n)]))
    blocks = [1.0 if (i // rng.randint(5, 40)) % 2 else 1.4 for i in range(n)]
    assert not _drift(tmp_path / "bimodal", _meg_run(blocks))
    assert not _drift(tmp_path / "quantised", _meg_run([0.6 + 0.05 * (i % 2) for i in range(2000)], every=1))
    assert not _drift(tmp_path / "few", _meg_run([0.5 + 0.25 * i / 60 for i in range(60)]))
    found = _drift(tmp_path / "drift", _meg_run([0.5 + 0.25 * i / n for i in range(n)]))
    assert len(found) == 1, found


def test_llamafactory_steps_snap_to_its_logging_interval_and_a_stop_short_of_plan_is_interrupted(
    tmp_path: Path,
) -> None:
    """The logs dict prints no step, only the epoch to 2 decimals (17.047 steps an epoch): worked out from
    it, step 2,105 reads 2,104; every estimate is 5 apart and every save (checkpoint-100, ...) a multiple of 5,
    so each is the nearest multiple of 5. `Training completed.` at step 2,105 of the 17,000 planned
    (`Total optimization steps = 17,000`) is a run stopped early, not completed."""
    lines = [_lf(0, "trainer.py:2313", "***** Running training *****")]
    lines.append(_lf(0, "trainer.py:2321", "  Total optimization steps = 17,000"))
    for step in range(5, 2106, 5):
        s = 21 * step
        epoch = f"{step / (2182 / 128):.2f}"
        lines.append(_lf(s, "logging.py:157", f"{{'loss': 0.5000, 'learning_rate': 5.0000e-05, 'epoch': {epoch}}}"))
        if step % 100 == 0:
            lines += _lf_save(s, step)
    lines += ["Training completed. Do not forget to share your model on huggingface.co/models =)"]
    lines += [_lf(21 * 2105 + 61, "trainer.py:3801", f"Saving model checkpoint to {_RUN}")]
    r = goodput(write_log(tmp_path, lines))
    assert [(a.first_step, a.last_step, a.ended) for a in r.acc.attempts] == [(5, 2105, "interrupted")]


def _hf_stopped_at(step: int, tail: list[str]) -> list[str]:
    """HF Trainer behind LLaMA-Factory's prefix: 1,000 steps planned, a loss line every 50 steps (100 s), an
    evaluation and a save every 100, the loop left after STEP, then the TAIL lines."""
    lines = [_lf(0, "trainer.py:2313", "***** Running training *****")]
    lines.append(_lf(0, "trainer.py:2321", "  Total optimization steps = 1,000"))
    s = 0
    for n in range(50, step + 1, 50):
        s += 100
        lines.append(
            _lf(s, "logging.py:157", f"{{'loss': 0.5000, 'learning_rate': 5.0000e-05, 'epoch': {n / 100:.2f}}}")
        )
        if n % 100 == 0:
            lines += [_lf(s, "trainer.py:4117", "***** Running Evaluation *****")]
            lines += [_lf(s + 10, "logging.py:157", "{'eval_loss': 0.6, 'eval_runtime': 10.0, 'epoch': 1.0}")]
            lines += _lf_save(s + 10, n)
            s += 10
    return lines + [_lf(s + 1 + i, "trainer.py:2600", line) for i, line in enumerate(tail)]


_DONE = "Training completed. Do not forget to share your model on huggingface.co/models =)"


@pytest.mark.parametrize(
    "tail",
    [
        [_DONE, f"Loading best model from {_RUN}/checkpoint-200 (score: 0.41)."],  # EarlyStoppingCallback
        [_DONE],  # early stopping without load_best_model_at_end: the evaluation, then the end
        [
            "There seems not to be a single sample in your epoch_iterator, stopping training at step 300! This is expected if you're using an IterableDataset and set num_steps (1000) higher than the number of available samples.",
            _DONE,
        ],
    ],
    ids=["best-model", "after-evaluation", "data-exhausted"],
)
def test_hf_trainer_ending_itself_short_of_plan_is_completed(tmp_path: Path, tail: list[str]) -> None:
    """The trainer's own early ends, 300 of the 1,000 steps planned: early stopping (its stop comes from the
    evaluation after the last step; the best model reloaded after it) and an IterableDataset run out: the run
    completed (all three read as interrupted)."""
    r = goodput(write_log(tmp_path, _hf_stopped_at(300, tail)))
    assert [(a.last_step, a.ended) for a in r.acc.attempts] == [(300, "completed")], r.acc.attempts


def test_hf_trainer_stopped_between_evaluations_short_of_plan_is_interrupted(tmp_path: Path) -> None:
    """A stop requested between evaluations (LLaMA-Factory's Web UI abort: step 350 logged after step 300's
    evaluation) is not the trainer's own: interrupted."""
    lines = _hf_stopped_at(300, [])
    lines += [
        _lf(800, "logging.py:157", "{'loss': 0.5000, 'learning_rate': 5.0000e-05, 'epoch': 3.50}"),
        _lf(830, "trainer.py:2600", _DONE),
    ]
    r = goodput(write_log(tmp_path, lines))
    assert [(a.last_step, a.ended) for a in r.acc.attempts] == [(350, "interrupted")], r.acc.attempts


@pytest.mark.parametrize(("excess_s", "booked_s"), [(8.0, 0.0), (40.0, 40.0)])
def test_time_after_a_saves_last_file_line_is_noise_only_for_seconds(
    tmp_path: Path, excess_s: float, booked_s: float
) -> None:
    """HF Trainer writes the optimizer, scheduler and trainer state after its last `saved in` line: the steps
    after a save running 8 s over their 500-s pace are their noise, 40 s over it (under a tenth of the
    stretch, read as noise before) is the save's unlogged rest."""
    lines = [_lf(0, "trainer.py:2313", "***** Running training *****")]
    lines.append(_lf(0, "trainer.py:2321", "  Total optimization steps = 1,000"))
    s = 0.0
    for n in range(50, 501, 50):
        s += 500 + (excess_s if n == 250 else 0)
        lines.append(
            _lf(s, "logging.py:157", f"{{'loss': 0.5000, 'learning_rate': 5.0000e-05, 'epoch': {n / 100:.2f}}}")
        )
        if n == 200:
            lines += _lf_save(s, n)
    r = goodput(write_log(tmp_path, lines))
    assert r.acc.steps_completed == 500, r.acc.attempts
    assert r.acc.buckets["checkpoint_save"] == pytest.approx(booked_s, abs=1.0), r.acc.buckets
