# ruff: noqa: E501  (log lines are kept whole, as the programs print them)
"""Review of the heldout15 classes (issue 40): a start-up line after a failure is a new launch only on evidence
of a new process; a Megatron save known by its timer ends where the next iteration's interval begins (an
evaluation printed before it is no save); the final flush of the pending async saves ends at its own end line,
is the same save's finalization, and the suggestion for saves already asynchronous is not "make them
asynchronous"; the dying process's teardown lines stay with its attempt; Lightning's `No training batches.`
is no finished loop."""

from __future__ import annotations

from pathlib import Path

from scope.analyzers.goodput import goodput

from tests.helpers import write_log

_BANNER = "W0116 {} {} torch/distributed/run.py:851] Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being overloaded, please further tune the variable for optimal performance in your application as needed. "
_TITAN = "[titan] 2026-01-16 {} - root - INFO - {}"


def _titan_steps(minute: str, first_s: int) -> list[str]:
    return [
        _TITAN.format(
            f"02:{minute}:{first_s + k:02d},000",
            f"step: {k}  loss:  9.0  grad_norm:  1.0  memory: 10.0GiB(20.0%)  tps: 70,000  tflops: 100.0  mfu: 10.0%",
        )
        for k in range(1, 11)
    ]


def test_a_traceback_the_start_up_survives_is_no_new_launch(tmp_path: Path) -> None:
    """torchrun's banner, an optional import's traceback the process survives, then the trainer's own start
    and its steps: one attempt, completed (no launcher line, no new PID, no signal says a new process)."""
    lines = [
        _BANNER.format("02:41:13.328000", 846088),
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3/site-packages/foo/__init__.py", line 3, in <module>',
        "ModuleNotFoundError: No module named 'apex'",
        _TITAN.format("02:41:27,329", "Starting job: qwen3"),
        _TITAN.format("02:41:43,288", "Training starts at step 1"),
        *_titan_steps("42", 0),
        _TITAN.format("02:42:20,000", "Training completed"),
    ]
    r = goodput(write_log(tmp_path, lines))
    assert [a.ended for a in r.acc.attempts] == ["completed"], r.acc.attempts


def test_ctrl_c_teardown_lines_stay_with_the_ended_launch(tmp_path: Path) -> None:
    """torchrun's SIGKILL 30 s after the SIGINT is the dying launch's line (same PID): the relaunch's
    attempt begins at its own banner (02:46:00), not at that line (02:42:00)."""
    agent = "W0116 {} 846000 torch/distributed/elastic/agent/server/api.py:704] {}"
    lines = [
        _BANNER.format("02:41:13.328000", 846088),
        _TITAN.format("02:41:27,329", "Starting job: qwen3"),
        "^C",
        agent.format("02:41:30.000000", "Received Signals.SIGINT death signal, shutting down workers"),
        agent.format("02:41:30.100000", "Sending process 845117 closing signal SIGINT"),
        agent.format(
            "02:42:00.100000",
            "Unable to shutdown process 845117 via Signals.SIGINT, forcefully exiting via Signals.SIGKILL",
        ),
        _BANNER.format("02:46:00.000000", 846090),
        _TITAN.format("02:46:10,000", "Starting job: qwen3"),
        _TITAN.format("02:46:20,000", "Training starts at step 1"),
        *_titan_steps("46", 30),
        _TITAN.format("02:47:00,000", "Training completed"),
    ]
    r = goodput(write_log(tmp_path, lines))
    assert [a.ended for a in r.acc.attempts] == ["interrupted", "completed"], r.acc.attempts
    first_line = min(m.line for m in r.acc.attempts[1].marks)
    assert first_line == 7, [(m.kind, m.line) for m in r.acc.attempts[1].marks]


_MEG_ITER = " [2024-07-15 {}] iteration {:>8}/    1000 | consumed samples: {:>12} | elapsed time per iteration (ms): 1000.0 | learning rate: 1.000000E-05 | global batch size:     8 | lm loss: 9.9E-01 | loss scale: 1.0 | grad norm: 1.0 | number of skipped iterations:   0 | number of nan iterations:   0 |"


def test_megatron_timer_save_after_an_evaluation_is_not_the_evaluation(tmp_path: Path) -> None:
    """Iteration 20, its evaluation (untimed lines), then the save known by its 30 s timer, then iteration
    30 at 10:01:20 whose 10 iterations took 10 s: the save ended at 10:01:10 and began at 10:00:40; the
    20 s before it are the evaluation's, not the save's."""
    lines = [
        _MEG_ITER.format("10:00:10", 10, 80),
        _MEG_ITER.format("10:00:20", 20, 160),
        "-" * 100,
        " validation loss at iteration 20 | lm loss value: 9.0E-01 | lm loss PPL: 2.4E+00 | ",
        "-" * 100,
        "(min, max) time across ranks (ms):",
        "    save-checkpoint ................................: (29995.00, 30000.00)",
        _MEG_ITER.format("10:01:20", 30, 240),
        _MEG_ITER.format("10:01:30", 40, 320),
    ]
    r = goodput(write_log(tmp_path, lines))
    assert abs(r.acc.buckets.get("checkpoint_save", 0.0) - 30.0) < 0.5, r.acc.buckets
    assert abs(r.acc.buckets.get("evaluation", 0.0) - 20.0) < 0.5, r.acc.buckets


_NEMO = "[NeMo I 2025-06-18 {} nemo_logging:393] "


def _nemo_run_with_final_flush() -> list[str]:
    return [
        _NEMO.format("10:00:00") + "Experiments will be logged at /r/x",
        *(
            f"Training epoch 0, iteration {i}/99 | lr: 3e-05 | global_batch_size: 4 | global_step: {i} | reduced_train_loss: 1.3 | train_step_timing in s: 1.0 | consumed_samples: {4 * (i + 1)}"
            for i in range(10)
        ),
        _NEMO.format("10:00:10") + "Using FullyParallelSaveStrategyWrapper(torch_dist, 1) dist-ckpt save strategy.",
        _NEMO.format("10:00:11")
        + "Global Checkpoint Save : Rank: 0 : Iteration: 10 : Start time: 1750240810.000s : Save duration: 1.000s",
        _NEMO.format("10:00:12") + "Scheduled async checkpoint save for /r/ckpt/step=10-last.ckpt",
        "`Trainer.fit` stopped: `max_steps=10` reached.",
        _NEMO.format("10:00:12") + "Pending async checkpoint saves. Finalizing them synchronously now",
        _NEMO.format("10:00:42") + "Successfully saved checkpoint from iteration      10 to /r/ckpt/step=10-last.ckpt",
        _NEMO.format("10:00:42") + "Async finalization time took 30.000 s",
    ]


def test_nemo_final_flush_ends_at_its_saved_line(tmp_path: Path) -> None:
    """The final flush ends at NeMo's `Successfully saved checkpoint` (30 s): the 10 min of other work after
    it (an export) are not the save's."""
    lines = [*_nemo_run_with_final_flush(), _NEMO.format("10:10:42") + "Exporting to HF format done"]
    r = goodput(write_log(tmp_path, lines))
    assert abs(r.acc.buckets.get("checkpoint_save", 0.0) - 32.0) < 1.0, r.acc.buckets


def test_megatron_final_flush_ends_at_its_saved_line(tmp_path: Path) -> None:
    """Megatron-LM's save (5 s timer), the flush of its async part until `successfully saved` (60 s), then
    10 min before `[after training is done]`: the save blocked 65 s, the 10 min are not the save's."""
    lines = [_MEG_ITER.format(f"10:00:{10 * k:02d}", 10 * k, 80 * k) for k in range(1, 5)] + [
        "saving checkpoint at iteration      40 to /r/ckpt in torch_dist format",
        "(min, max) time across ranks (ms):",
        "    save-checkpoint ................................: (4995.00, 5000.00)",
        " [2024-07-15 10:00:45] Unfinalized async checkpoint saves. Finalizing them synchronously now.",
        "  [2024-07-15 10:01:45.000000] successfully saved checkpoint from iteration      40 to /r/ckpt [ t 1/1, p 1/1 ]",
        "[after training is done] datetime: 2024-07-15 10:11:45 ",
    ]
    r = goodput(write_log(tmp_path, lines))
    assert abs(r.acc.buckets.get("checkpoint_save", 0.0) - 65.0) < 1.0, r.acc.buckets


def test_final_flush_is_the_same_save_and_no_async_advice(tmp_path: Path) -> None:
    """The flush finalizes the step-10 save: one save of 32 s, not two; the saves being asynchronous
    already, the advice is about the final flush, not to make them asynchronous."""
    r = goodput(write_log(tmp_path, _nemo_run_with_final_flush()))
    saves = r.saves()
    assert len(saves) == 1 and saves[0].blocking_s is not None and abs(saves[0].blocking_s - 32.0) < 1.0, saves
    stall = next(f for f in r.findings if f.kind == "checkpoint_stall")
    assert "make the save asynchronous" not in stall.suggestion and "final flush" in stall.suggestion, stall


def test_fit_stopped_with_no_training_batches_is_not_completed(tmp_path: Path) -> None:
    """Lightning's `No training batches.` (FitLoop.done when the dataloader, set up again for the next epoch
    with reload_dataloaders_every_n_epochs, has no batch) is no loop run to its end and no line scope reads as
    an end: the attempt is still `running` by its lines (5 of its 10 planned steps, 1..5), not completed."""
    lines = [
        _NEMO.format("10:00:00") + "Experiments will be logged at /r/x",
        *(
            f"Training epoch 0, iteration {i}/9 | lr: 3e-05 | global_batch_size: 4 | global_step: {i} | reduced_train_loss: 1.3 | train_step_timing in s: 0.5 | consumed_samples: {4 * (i + 1)}"
            for i in range(5)
        ),
        _NEMO.format("10:00:10") + "Async finalization time took 0.000 s",
        "`Trainer.fit` stopped: No training batches.",
    ]
    r = goodput(write_log(tmp_path, lines))
    assert [(a.ended, a.first_step, a.last_step) for a in r.acc.attempts] == [("running", 1, 5)], r.acc.attempts
    assert r.acc.steps_completed == 5, r.acc.steps_completed


def test_a_flush_of_several_pending_saves_runs_to_the_last_saved_line(tmp_path: Path) -> None:
    """NeMo finalizes each pending save with its own `Successfully saved checkpoint` line: the flush runs
    to the last of them (10:00:12 -> 10:05:42, 330 s), then 10 min of other work are not the save's."""
    lines = [
        *_nemo_run_with_final_flush()[:-2],
        _NEMO.format("10:05:12") + "Successfully saved checkpoint from iteration       5 to /r/ckpt/step=5-last.ckpt",
        _NEMO.format("10:05:42") + "Successfully saved checkpoint from iteration      10 to /r/ckpt/step=10-last.ckpt",
        _NEMO.format("10:05:42") + "Async finalization time took 330.000 s",
        _NEMO.format("10:15:42") + "Exporting to HF format done",
    ]
    r = goodput(write_log(tmp_path, lines))
    assert abs(r.acc.buckets.get("checkpoint_save", 0.0) - 332.0) < 1.0, r.acc.buckets
    assert len(r.saves()) == 1, r.saves()


# Second review (review59g2): an async save's background write finishing, relaunches after a start-up crash,
# a timer's save across a rollback or longer than its gap, a flush with no end line, teardown with no PID.


def _nemo_async_every_10(saved_after_steps: int) -> list[str]:
    """NeMo 2 saving asynchronously every 10 steps (1 s each, a progress line every 10): each save blocks 2 s
    (dist-ckpt line -> `Scheduled`); its background write finishes 5 s later, after `saved_after_steps` of the
    next steps' progress lines (0: right after `Scheduled`), while training goes on; the last save is
    finalized in the final flush (5 s)."""

    def progress(i: int) -> str:
        return f"Training epoch 0, iteration {i}/99 | lr: 3e-05 | global_batch_size: 4 | global_step: {i} | reduced_train_loss: 1.3 | train_step_timing in s: 1.0 | consumed_samples: {4 * (i + 1)}"

    lines = [_NEMO.format("10:00:00") + "Experiments will be logged at /r/x", progress(9)]
    for k, t in enumerate((10, 22, 34)):
        step = 10 * (k + 1)
        lines += [
            _NEMO.format(f"10:00:{t:02d}")
            + "Using FullyParallelSaveStrategyWrapper(torch_dist, 1) dist-ckpt save strategy.",
            _NEMO.format(f"10:00:{t + 1:02d}")
            + f"Global Checkpoint Save : Rank: 0 : Iteration: {step} : Start time: 0.000s : Save duration: 1.000s",
            _NEMO.format(f"10:00:{t + 2:02d}") + f"Scheduled async checkpoint save for /r/ckpt/step={step}-last.ckpt",
        ]
        if k == 2:
            break
        saved = [
            _NEMO.format(f"10:00:{t + 7:02d}")
            + f"Successfully saved checkpoint from iteration {step:>7} to /r/ckpt/step={step}-last.ckpt",
            _NEMO.format(f"10:00:{t + 7:02d}") + "Async finalization time took 0.010 s",
        ]
        after = [progress(step + 9)]
        lines += [*after[:saved_after_steps], *saved, *after[saved_after_steps:]]
    return [
        *lines,
        "`Trainer.fit` stopped: `max_steps=30` reached.",
        _NEMO.format("10:00:36") + "Pending async checkpoint saves. Finalizing them synchronously now",
        _NEMO.format("10:00:41") + "Successfully saved checkpoint from iteration      30 to /r/ckpt/step=30-last.ckpt",
        _NEMO.format("10:00:41") + "Async finalization time took 5.000 s",
    ]


def test_nemo_background_write_finishing_mid_training_blocks_nothing(tmp_path: Path) -> None:
    """The `Successfully saved checkpoint` line mid-training, right after `Scheduled`, is the background write
    finishing (training went on): the saves at steps 10 and 20 blocked 2 s each (not 7), the last 2 s + the
    5 s flush; goodput 30 s of 41 s (73%), not 49%."""
    r = goodput(write_log(tmp_path, _nemo_async_every_10(saved_after_steps=0)))
    assert [round(c.blocking_s or 0.0) for c in r.saves()] == [2, 2, 7], r.saves()
    assert abs(r.acc.buckets.get("productive", 0.0) - 30.0) < 1.0, r.acc.buckets


def test_nemo_background_write_finishing_after_more_steps_is_no_second_save(tmp_path: Path) -> None:
    """The step-10 save's background write finishing after the next steps' line is no save of its own:
    3 saves, not 5."""
    r = goodput(write_log(tmp_path, _nemo_async_every_10(saved_after_steps=1)))
    assert [round(c.blocking_s or 0.0) for c in r.saves()] == [2, 2, 7], r.saves()


def test_megatron_background_write_after_its_timer_blocks_nothing(tmp_path: Path) -> None:
    """Megatron-LM with --async-save: the save-checkpoint timer (2 s, printed when save_checkpoint returns)
    comes before `successfully saved checkpoint` (8 s later, written by the finalize function while training
    went on): the save blocked 2 s, not 7.9, with its `saving checkpoint` line or without it (a timer's save)."""
    lines = [
        _MEG_ITER.format("10:00:10", 10, 80),
        _MEG_ITER.format("10:00:20", 20, 160),
        "[2024-07-15 10:00:20.100000] saving checkpoint at iteration      20 to /r/ckpt in torch_dist format",
        "(min, max) time across ranks (ms):",
        "    save-checkpoint ................................: (1995.00, 2000.00)",
        "  [2024-07-15 10:00:28.000000] successfully saved checkpoint from iteration      20 to /r/ckpt [ t 1/1, p 1/1 ]",
        _MEG_ITER.format("10:00:32", 30, 240),
        _MEG_ITER.format("10:00:42", 40, 320),
    ]
    for i, kept in enumerate([lines, [ln for ln in lines if "saving checkpoint" not in ln]]):
        folder = tmp_path / str(i)
        folder.mkdir()
        r = goodput(write_log(folder, kept))
        assert [round(c.blocking_s or 0.0) for c in r.saves()] == [2], (i, r.saves())
        assert abs(r.acc.buckets.get("checkpoint_save", 0.0) - 2.0) < 0.5, (i, r.acc.buckets)


def _crash_in_start_up_then(failure_line: str | None, relaunch_at: str) -> list[str]:
    lines = [
        _BANNER.format("02:41:13.328000", 846088),
        "Traceback (most recent call last):",
        '  File "/w/train.py", line 40, in <module>',
        "    import torchtitan.models.qwen3",
        "ModuleNotFoundError: No module named 'torchtitan.models.qwen3'",
    ]
    if failure_line is not None:
        lines.append(failure_line)
    return [
        *lines,
        _TITAN.format(f"02:{relaunch_at},000", "Starting job: qwen3"),
        _TITAN.format("02:46:20,000", "Training starts at step 1"),
        *_titan_steps("46", 30),
        _TITAN.format("02:47:00,000", "Training completed"),
    ]


def test_relaunch_after_a_start_up_crash_is_a_new_attempt(tmp_path: Path) -> None:
    """A start-up crash, then the trainer started again by hand 5 min later (after srun's exit line, bash's
    `Killed`, or nothing but the silence): 2 attempts, 1 restart; the first failed."""
    for i, failure_line in enumerate(
        [
            None,
            "srun: error: nid001: task 0: Exited with exit code 1",
            "/bin/bash: line 1:  846088 Killed                  torchrun --nproc_per_node 8 train.py",
        ]
    ):
        folder = tmp_path / str(i)
        folder.mkdir()
        r = goodput(write_log(folder, _crash_in_start_up_then(failure_line, "46:10")))
        assert [a.ended for a in r.acc.attempts] == ["failed", "completed"], (failure_line, r.acc.attempts)


def test_failure_to_restart_never_booked_without_a_restart(tmp_path: Path) -> None:
    """A traceback the start-up survives (14 s to the trainer's own start): one attempt, so no second of
    failure_to_restart; the 14 s are the start-up's."""
    lines = _crash_in_start_up_then(None, "41:27")
    lines[-13] = _TITAN.format("02:41:43,000", "Training starts at step 1")
    r = goodput(write_log(tmp_path, [ln.replace("02:46:", "02:42:") for ln in lines]))
    assert len(r.acc.attempts) == 1, r.acc.attempts
    assert r.acc.buckets.get("failure_to_restart", 0.0) == 0.0, r.acc.buckets


def test_megatron_timer_save_across_a_rollback_stays_before_the_relaunch(tmp_path: Path) -> None:
    """Iteration 150, a 30 s save known by its timer, then a relaunch resumed at iteration 110 (a rollback)
    5 min later: the save ran after iteration 150 (10:00:30 -> 10:01:00), not past the relaunch's line."""
    lines = [
        _MEG_ITER.format("10:00:10", 130, 80),
        _MEG_ITER.format("10:00:20", 140, 160),
        _MEG_ITER.format("10:00:30", 150, 240),
        "(min, max) time across ranks (ms):",
        "    save-checkpoint ................................: (29995.00, 30000.00)",
        _MEG_ITER.format("10:05:00", 110, 880),
        _MEG_ITER.format("10:05:10", 120, 960),
        _MEG_ITER.format("10:05:20", 130, 1040),
    ]
    r = goodput(write_log(tmp_path, lines))
    saves = [iv for iv in r.acc.intervals if iv.bucket == "checkpoint_save"]
    assert saves and all(iv.end <= r.acc.attempts[0].end + 1e-6 for iv in saves if iv.end), saves
    assert abs(r.acc.buckets.get("checkpoint_save", 0.0) - 30.0) < 0.5, r.acc.buckets


def test_megatron_timer_longer_than_its_gap_is_cut_at_the_next_line(tmp_path: Path) -> None:
    """A 60 s save timer with 20 s to the next iteration line: the save blocked at most those 20 s, and the
    wall time ends at the log's last line (10:00:50), not 30 s past it."""
    lines = [
        _MEG_ITER.format("10:00:10", 10, 80),
        _MEG_ITER.format("10:00:20", 20, 160),
        "(min, max) time across ranks (ms):",
        "    save-checkpoint ................................: (59995.00, 60000.00)",
        _MEG_ITER.format("10:00:40", 30, 240),
        _MEG_ITER.format("10:00:50", 40, 320),
    ]
    r = goodput(write_log(tmp_path, lines))
    assert abs(r.acc.wall_s - 40.0) < 0.5, r.acc.wall_s
    assert [round(c.blocking_s or 0.0) for c in r.saves()] == [20], r.saves()
    assert abs(r.acc.buckets.get("checkpoint_save", 0.0) - 20.0) < 0.5, r.acc.buckets
    assert any("save timer" in w and "60.0 s" in w for w in r.warnings), r.warnings  # (and it says so)


def _nemo_flush_with_no_end() -> list[str]:
    """The step-10 save handed to the background, the final flush begun, and no line ending it: the next line
    is the export's, 10.5 min later."""
    return [*_nemo_run_with_final_flush()[:-2], _NEMO.format("10:10:42") + "Exporting to HF format done"]


def test_a_flush_with_no_end_line_is_the_same_save_and_bounded(tmp_path: Path) -> None:
    """A flush no line ends is the step-10 save's finalization (one save, not two), and the 10.5 min to the
    next line are the save's for at most the hang allowance (5 min), the rest unexplained."""
    r = goodput(write_log(tmp_path, _nemo_flush_with_no_end()))
    assert len(r.saves()) == 1, r.saves()
    assert r.acc.buckets.get("checkpoint_save", 0.0) <= 2.0 + 300.0 + 1e-6, r.acc.buckets
    assert r.acc.buckets.get("unexplained", 0.0) >= 300.0, r.acc.buckets
    assert any("final flush" in w and "no end line" in w for w in r.warnings), r.warnings  # (and it says so)


def test_no_final_flush_measured_no_flush_seconds_in_the_advice(tmp_path: Path) -> None:
    """Async saves with no final flush, or a flush with no end line: the advice says the saves are already
    asynchronous, and gives no seconds of final flush (never "0.0 s of this is the final flush")."""
    nemo = _nemo_async_every_10(saved_after_steps=0)
    cut = next(i for i, line in enumerate(nemo) if "Trainer.fit" in line)
    for i, lines in enumerate([nemo[:cut], _nemo_flush_with_no_end()]):
        folder = tmp_path / str(i)
        folder.mkdir()
        stall = next(f for f in goodput(write_log(folder, lines)).findings if f.kind == "checkpoint_stall")
        assert "already asynchronous" in stall.suggestion and "of this is the final flush" not in stall.suggestion, (
            stall
        )


def test_teardown_with_no_pid_after_a_failure_stays_with_the_failed_launch(tmp_path: Path) -> None:
    """The watchdog's timeout, then the dying process's `Destroying the purge thread.` 30 s later (no PID), then
    the relaunch's `Starting job` 2 s after: the relaunch's attempt begins at its own start-up line (line 15),
    and the 30 s of teardown are the failure's (failure_to_restart), not unexplained."""
    lines = [
        _TITAN.format("02:41:27,329", "Starting job: qwen3"),
        _TITAN.format("02:41:43,288", "Training starts at step 1"),
        *_titan_steps("42", -1),
        "[rank0]:[E116 02:42:11.000000000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=120, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600000 milliseconds before timing out.",
        _TITAN.format("02:42:41,000", "Destroying the purge thread."),
        _TITAN.format("02:42:43,000", "Starting job: qwen3"),
        _TITAN.format("02:42:53,000", "Training starts at step 1"),
        *_titan_steps("43", 2),
        _TITAN.format("02:43:20,000", "Training completed"),
    ]
    r = goodput(write_log(tmp_path, lines))
    assert [a.ended for a in r.acc.attempts] == ["failed", "completed"], r.acc.attempts
    assert min(m.line for m in r.acc.attempts[1].marks) == 15, [(m.kind, m.line) for m in r.acc.attempts[1].marks]
    teardown = [
        iv for iv in r.acc.intervals if iv.start >= r.acc.attempts[0].end - 30.5 and iv.end <= r.acc.attempts[0].end
    ]
    assert teardown and all(iv.bucket == "failure_to_restart" for iv in teardown), teardown


def test_a_rank_prefixed_glog_teardown_line_keeps_its_pid(tmp_path: Path) -> None:
    """torchrun's rank prefix before glog's (`[rank0]:W0116 ... 846088 ...]`): the line is still the dying
    launch's (its PID), so the relaunch's attempt begins at its own banner (line 6), not at that line."""
    lines = [
        _BANNER.format("02:41:13.328000", 846088),
        _TITAN.format("02:41:27,329", "Starting job: qwen3"),
        "^C",
        "W0116 02:41:30.000000 846088 torch/distributed/elastic/agent/server/api.py:704] Received Signals.SIGINT death signal, shutting down workers",
        "[rank0]:W0116 02:42:00.100000 846088 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 845117 closing signal SIGKILL",
        _BANNER.format("02:46:00.000000", 846090),
        _TITAN.format("02:46:10,000", "Starting job: qwen3"),
        _TITAN.format("02:46:20,000", "Training starts at step 1"),
        *_titan_steps("46", 30),
        _TITAN.format("02:47:00,000", "Training completed"),
    ]
    r = goodput(write_log(tmp_path, lines))
    assert [a.ended for a in r.acc.attempts] == ["interrupted", "completed"], r.acc.attempts
    assert min(m.line for m in r.acc.attempts[1].marks) == 6, [(m.kind, m.line) for m in r.acc.attempts[1].marks]
