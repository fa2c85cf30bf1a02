# ruff: noqa: E501  (log lines are kept whole, as the programs print them)
"""Goodput classes of fresh training logs, on lines written here in the real programs' formats: a
modded-nanoGPT-style trainer whose only clock is its cumulative `train_time` (stopped for validation and
saves) has no wall clock: the wall is a lower bound, the goodput unknown with an upper bound, its
validations and saves counted with unknown durations, and timestamped warnings before it make no wall span;
nanotron's iteration line with human-formatted numbers (`1.25K` ms), its `[Start training]` line, its
WARNING-level save, and its `Resuming training from stage` line at a fresh start (no relaunch)."""

from __future__ import annotations

from pathlib import Path

from scope.analyzers.goodput import goodput

from tests.helpers import write_log


def _speedrun(
    last: int, val_every: int = 50, save_every: int = 100, step_ms: int = 310, warn: bool = True
) -> list[str]:
    """A speedrun-style log: train_time grows by step_ms a step and repeats on the validation line."""
    out = []
    if warn:
        out += [
            "W1103 09:02:11.120000 4411 site-packages/torch/_dynamo/convert_frame.py:1125] WON'T CONVERT step /home/u/gpt/train.py line 88",
            "W1103 09:02:29.870000 4411 site-packages/torch/_dynamo/convert_frame.py:1125] torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:",
        ]
    out += ["warmup done", f"step:0/{last * 2} val_loss:10.8300 train_time:0ms step_avg:0.02ms"]
    t = 0
    for s in range(1, last + 1):
        t += step_ms * (3 if s == 1 else 1)
        out.append(f"step:{s}/{last * 2} train_time:{t}ms step_avg:{t / s:.2f}ms")
        if s % val_every == 0:
            out.append(f"step:{s}/{last * 2} val_loss:3.9{s % 10}00 train_time:{t}ms step_avg:{t / s:.2f}ms")
        if s % save_every == 0:
            out.append(f"Saved checkpoint to logs/run42/state_step{s:06d}.pt")
    return out


def test_training_clock_is_no_wall_clock(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path, _speedrun(300)))
    t_total = (300 + 2) * 0.310
    assert r.wall_is_lower_bound
    assert r.goodput_pct is None
    assert r.goodput_pct_at_most is not None and r.goodput_pct_at_most <= 100.0
    # the wall is the training clock's span: no 18 s of dynamo warnings before it
    assert abs(r.wall_s - t_total) < 0.5, r.wall_s
    assert r.acc.buckets["initialization"] == 0.0
    assert r.acc.buckets["checkpoint_save"] == 0.0 and r.acc.buckets["evaluation"] == 0.0
    assert [c.step for c in r.saves()] == [100, 200, 300]
    assert all(c.blocking_s is None for c in r.saves())
    evals, saves = r.untimed_outside_clock()
    assert (evals, saves) == (7, 3)
    assert any("at least" in c and "7 validation(s)" in c for c in r.cannot)
    a = r.acc.attempts
    assert len(a) == 1 and (a[0].first_step, a[0].last_step) == (1, 300)
    assert a[0].ended in ("running", "unknown")
    assert r.result().to_dict()["wall_is_lower_bound"] is True


def test_training_clock_step_after_save_is_not_save_time(tmp_path: Path) -> None:
    """A slower step after a save line is the step's own (the clock stopped for the save): no save time."""
    lines, t = ["step:0/200 val_loss:10.8300 train_time:0ms step_avg:0.02ms"], 0
    for s in range(1, 121):
        t += 1500 if s == 41 else 300
        lines.append(f"step:{s}/200 train_loss:3.1{s % 10} train_time:{t}ms step_avg:{t / s:.2f}ms")
        if s == 40:
            lines.append("Saved checkpoint to out/state_step000040.pt")
    r = goodput(write_log(tmp_path, lines))
    assert r.wall_is_lower_bound
    assert r.acc.buckets["checkpoint_save"] == 0.0, r.acc.buckets
    assert [c.step for c in r.saves()] == [40]


def test_timestamped_trainer_lines_keep_their_wall(tmp_path: Path) -> None:
    """The lookalike: a step line with a timestamp of its own is timed by it, its wall no bound."""
    lines = [f"2024-05-01 10:00:{s:02d} step:{s}/40 train_time:{s * 900}ms step_avg:900.00ms" for s in range(1, 40)]
    r = goodput(write_log(tmp_path, lines))
    assert not r.wall_is_lower_bound
    assert r.goodput_pct is not None


def _nanotron(sec: str, msg: str, level: str = "INFO") -> str:
    return f"05/14/2024 10:21:{sec} [{level}|DP=0|PP=0|TP=0]: {msg}"


def _nano_iter(i: int, ms: str) -> str:
    return f"iteration: {i} / 12 | consumed_tokens: {i * 2}K | elapsed_time_per_iteration_ms: {ms} | tokens_per_sec: 3.1K | tokens_per_sec_per_gpu: 3.1K | global_batch_size: 8 | lm_loss: 6.{i} | lr: 0.0003"


def test_nanotron_human_numbers_start_and_save(tmp_path: Path) -> None:
    lines = [
        _nanotron("00", "Config:"),
        _nanotron("01", "No checkpoint path provided."),
        _nanotron(
            "05",
            "[Start training] datetime: 2024-05-14 10:21:05.038211 | mbs: 4 | grad_accum: 2 | global_batch_size: 8 | sequence_length: 256 | train_steps: 12 | start_iteration_step: 0 | consumed_train_samples: 0",
        ),
        _nanotron(
            "05", "Resuming training from stage Main, it has trained for 0 samples and has 12 remaining train steps"
        ),
        _nanotron("13", _nano_iter(1, "7.9K")),
        *[_nanotron("13", _nano_iter(i, "21.5")) for i in range(2, 7)],
        _nanotron("14", _nano_iter(7, "23.1")),
        _nanotron("14", "Saving checkpoint at ckpts/7", "WARNING"),
        *[_nanotron("15", _nano_iter(i, "20.8")) for i in range(8, 13)],
    ]
    r = goodput(write_log(tmp_path, lines))
    steps = {m.step: m.step_s for a in r.acc.attempts for m in a.marks if m.kind == "step"}
    assert abs((steps[1] or 0) - 7.9) < 1e-6  # 7.9K ms, not 7.9 ms
    assert len(r.acc.attempts) == 1 and r.acc.attempts[0].ended == "completed"
    assert [c.step for c in r.saves()] == [7]
    assert r.acc.buckets["initialization"] > 0.0, r.acc.buckets
    assert r.acc.buckets["warmup"] > 7.0  # the first step's 7.9 s


def test_human_suffix_only_where_the_row_takes_it(tmp_path: Path) -> None:
    """The lookalike: a nanoGPT `time 4.71ms` is milliseconds; a K after a number elsewhere is no multiplier."""
    lines = [f"iter {i}: loss 2.{i}, time 4.71ms, mfu 10.00%" for i in range(0, 30)]
    r = goodput(write_log(tmp_path, lines))
    times = [m.step_s for a in r.acc.attempts for m in a.marks if m.kind == "step" and m.step_s]
    assert times and max(times) < 0.01


def test_mmcv_epoch_save_is_no_nanotron_save() -> None:
    """The lookalike: mmcv's `Saving checkpoint at 3 epochs` is mmcv's save, not nanotron's at step 3."""
    from scope.analyzers.goodput.line_marks import scan_line

    marks, _ = scan_line("2022-01-04 10:11:12,345 - mmdet - INFO - Saving checkpoint at 3 epochs", 1, "x.log")
    assert "nanotron_save" not in {m.row for m in marks}
