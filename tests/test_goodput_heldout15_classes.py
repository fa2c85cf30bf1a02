# ruff: noqa: E501  (log lines are kept whole, as the programs print them)
"""Goodput classes from the heldout15 training logs (issue 40), each on a few lines written here in the real
programs' formats: Lightning's global_step counts the steps before the one a NeMo 2 progress line reports;
Lightning's `Trainer.fit` stopped line after the last validation ends the run (completed); NeMo 2's async
saves block until `Scheduled async checkpoint save`, and the saves still pending when training ends are
waited for (NeMo's and Megatron-LM's `Finalizing them synchronously now`); a Megatron save known only by its
`save-checkpoint` timer; a launch that ended in its own start-up (a Ctrl-C, a config crash) before a
relaunch by hand is an attempt of its own."""

from __future__ import annotations

from pathlib import Path

from scope.analyzers.goodput import goodput

from tests.helpers import write_log

_NEMO = "[NeMo I 2025-06-18 {} nemo_logging:393] "


def _nemo_steps(first: int, last: int, step_s: float = 0.5) -> list[str]:
    """NeMo 2's progress printer (untimed) for global_step first..last of a 10-step run."""
    return [
        f"Training epoch 0, iteration {i}/9 | lr: 3e-05 | global_batch_size: 4 | global_step: {i} | reduced_train_loss: 1.3 | train_step_timing in s: {step_s} | consumed_samples: {4 * (i + 1)}"
        for i in range(first, last + 1)
    ]


def _nemo_validation(n: int = 3) -> list[str]:
    return [f"Validation: iteration {i}/{n}" for i in range(1, n + 1)]


def test_lightning_global_step_counts_from_zero(tmp_path: Path) -> None:
    """global_step 0..9 is ten steps (consumed_samples 4 per step says so): the first line ends step 1."""
    lines = [_NEMO.format("10:00:00") + "Experiments will be logged at /r/x", *_nemo_steps(0, 9)]
    r = goodput(write_log(tmp_path, lines))
    assert r.acc.steps_completed == 10, r.acc.attempts
    assert (r.acc.attempts[0].first_step, r.acc.attempts[0].last_step) == (1, 10)


def test_fit_stopped_after_the_last_validation_is_completed(tmp_path: Path) -> None:
    """Lightning validates after the last step, then prints `Trainer.fit` stopped: the run completed, its
    lines do not stop inside the evaluation."""
    lines = [
        _NEMO.format("10:00:00") + "Experiments will be logged at /r/x",
        *_nemo_steps(0, 9),
        _NEMO.format("10:00:10") + "Async finalization time took 0.001 s",
        *_nemo_validation(),
        "`Trainer.fit` stopped: `max_steps=10` reached.",
        _NEMO.format("10:00:20") + "Async finalization time took 0.000 s",
    ]
    r = goodput(write_log(tmp_path, lines))
    assert [a.ended for a in r.acc.attempts] == ["completed"], r.acc.attempts[0].end_evidence


def _nemo_async_save(t0: str, t_saved: str, t_scheduled: str, step: int, dur: str) -> list[str]:
    """One NeMo 2 async save: the strategy line, the synchronous part's line, then the callback handing the
    rest to the background."""
    return [
        _NEMO.format(t0) + "Using FullyParallelSaveStrategyWrapper(torch_dist, 1) dist-ckpt save strategy.",
        _NEMO.format(t_saved)
        + f"Global Checkpoint Save : Rank: 0 : Iteration: {step} : Start time: 1750240800.000s : Save duration: {dur}s",
        _NEMO.format(t_scheduled) + f"Scheduled async checkpoint save for /r/ckpt/step={step}-last.ckpt",
        _NEMO.format(t_scheduled) + "Async finalization time took 0.001 s",
    ]


def test_nemo2_async_save_blocks_until_scheduled(tmp_path: Path) -> None:
    """The save blocks training from its strategy line to `Scheduled async checkpoint save` (10:00:10 ->
    10:00:30), not only for the synchronous part's stated 5 s: one save of 20 s."""
    lines = [
        _NEMO.format("10:00:00") + "Experiments will be logged at /r/x",
        *_nemo_steps(0, 4),
        *_nemo_async_save("10:00:10", "10:00:15", "10:00:30", 4, "5.000"),
        _NEMO.format("10:00:31") + "Async finalization time took 0.000 s",
        *_nemo_steps(5, 9),
        _NEMO.format("10:00:40") + "Async finalization time took 0.000 s",
    ]
    r = goodput(write_log(tmp_path, lines))
    saves = [c for c in r.checkpoints if c.op == "save"]
    assert len(saves) == 1 and saves[0].blocking_s is not None, saves
    assert abs(saves[0].blocking_s - 20.0) < 0.5, saves
    assert abs(r.acc.buckets.get("checkpoint_save", 0.0) - 20.0) < 1.0, r.acc.buckets


def test_nemo_pending_async_saves_finalized_at_the_end_are_a_save(tmp_path: Path) -> None:
    """Training ends; the saves still being written are waited for (5 min) before the process exits: that
    wait is the save's, not unexplained."""
    lines = [
        _NEMO.format("10:00:00") + "Experiments will be logged at /r/x",
        *_nemo_steps(0, 9),
        *_nemo_async_save("10:00:10", "10:00:11", "10:00:12", 9, "1.000"),
        "`Trainer.fit` stopped: `max_steps=10` reached.",
        _NEMO.format("10:00:12") + "Pending async checkpoint saves. Finalizing them synchronously now",
        _NEMO.format("10:05:12") + "Successfully saved checkpoint from iteration       9 to /r/ckpt/step=9-last.ckpt",
        _NEMO.format("10:05:12") + "Async finalization time took 300.000 s",
    ]
    r = goodput(write_log(tmp_path, lines))
    assert r.acc.buckets.get("checkpoint_save", 0.0) > 300.0, r.acc.buckets
    assert r.acc.buckets.get("unexplained", 0.0) < 1.0, r.acc.buckets
    assert [a.ended for a in r.acc.attempts] == ["completed"]


_MEG_ITER = " [2024-07-15 {}] iteration {:>8}/    1000 | consumed samples: {:>12} | elapsed time per iteration (ms): 700.0 | learning rate: 1.000000E-05 | global batch size:     8 | lm loss: 9.9E-01 | loss scale: 1.0 | grad norm: 1.0 | number of skipped iterations:   0 | number of nan iterations:   0 |"


def test_megatron_unfinalized_async_saves_at_the_end_are_a_save(tmp_path: Path) -> None:
    """Megatron-LM's own wording of the same wait (async_utils.maybe_finalize_async_save(blocking=True)),
    ended by the finalized save's line."""
    lines = [_MEG_ITER.format(f"10:00:{7 * k:02d}", 10 * k, 80 * k) for k in range(1, 5)] + [
        " [2024-07-15 10:00:28] Unfinalized async checkpoint saves. Finalizing them synchronously now.",
        " [2024-07-15 10:01:28]   successfully saved checkpoint from iteration      40 to /r/ckpt [ t 1/1, p 1/1 ]",
    ]
    r = goodput(write_log(tmp_path, lines))
    assert abs(r.acc.buckets.get("checkpoint_save", 0.0) - 60.0) < 1.0, r.acc.buckets


def test_megatron_save_known_only_by_its_timer(tmp_path: Path) -> None:
    """No `saving checkpoint` line, only the timer after iteration 20's line: the save blocked 30 s of the
    37 s to iteration 30's line (10 iterations of 0.7 s), not productive time."""
    lines = [
        _MEG_ITER.format("10:00:07", 10, 80),
        _MEG_ITER.format("10:00:14", 20, 160),
        "(min, max) time across ranks (ms):",
        "    save-checkpoint ................................: (30000.00, 30000.02)",
        _MEG_ITER.format("10:00:51", 30, 240),
        _MEG_ITER.format("10:00:58", 40, 320),
    ]
    r = goodput(write_log(tmp_path, lines))
    assert abs(r.acc.buckets.get("checkpoint_save", 0.0) - 30.0) < 0.5, r.acc.buckets
    assert [c.op for c in r.checkpoints] == ["save"], r.checkpoints


def test_ctrl_c_in_start_up_then_a_relaunch_is_an_attempt(tmp_path: Path) -> None:
    """A launch stopped by Ctrl-C while it set up (no step), then torchrun started again by hand minutes
    later: two attempts, the first interrupted, and the minutes between are no one's start-up."""
    lines = [
        _NEMO.format("10:00:00") + "Experiments will be logged at /r/x",
        _NEMO.format("10:00:01") + "Rank 0 has embedding rank: 0",
        "^C",
        "W0618 10:04:30.000000 1112889 torch/distributed/run.py:792] ",
        "W0618 10:04:30.000000 1112889 torch/distributed/run.py:792] *****************************************",
        "W0618 10:04:30.000000 1112889 torch/distributed/run.py:792] Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being overloaded, please further tune the variable for optimal performance in your application as needed. ",
        _NEMO.format("10:05:00") + "Experiments will be logged at /r/x",
        *_nemo_steps(0, 9),
        *_nemo_validation(),
        "`Trainer.fit` stopped: `max_steps=10` reached.",
        _NEMO.format("10:05:20") + "Async finalization time took 0.000 s",
    ]
    r = goodput(write_log(tmp_path, lines))
    assert [a.ended for a in r.acc.attempts] == ["interrupted", "completed"], r.acc.attempts
    assert r.acc.buckets.get("initialization", 0.0) < 60.0, r.acc.buckets


def test_config_crash_then_a_relaunch_by_hand_is_an_attempt(tmp_path: Path) -> None:
    """Every rank dies parsing its config (no step), torchrun reports it; the user relaunches 3 min later:
    two attempts, the first failed, the minutes between are its failure's cost."""
    titan = "[titan] 2026-01-16 {} - root - INFO - {}"
    lines = [
        "W0116 02:37:57.368000 845000 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 845117 closing signal SIGTERM",
        "E0116 02:37:57.582000 845000 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) local_rank: 2 (pid: 845118) of binary: /usr/bin/python",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "W0116 02:41:13.328000 846088 torch/distributed/run.py:851] Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being overloaded, please further tune the variable for optimal performance in your application as needed. ",
        titan.format("02:41:27,329", "Starting job: qwen3"),
        titan.format("02:41:43,288", "Training starts at step 1"),
        *(
            titan.format(
                f"02:42:{10 + k:02d},000",
                f"step: {k}  loss:  9.0  grad_norm:  1.0  memory: 10.0GiB(20.0%)  tps: 70,000  tflops: 100.0  mfu: 10.0%",
            )
            for k in range(1, 11)
        ),
    ]
    r = goodput(write_log(tmp_path, lines))
    assert len(r.acc.attempts) == 2 and r.acc.attempts[0].ended == "failed", r.acc.attempts
    assert abs(r.acc.buckets.get("failure_to_restart", 0.0) - 195.7) < 1.0, r.acc.buckets
