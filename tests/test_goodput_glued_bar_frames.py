# ruff: noqa: E501  (log lines are kept whole, as the programs print them)
"""Goodput of tqdm progress bars as real logs keep them (gp16a): frames glued on one line where the log lost
tqdm's carriage returns (HF Trainer / accelerate, a trainer's own described bar), two processes' bars
interleaved frame by frame, bar frames right after a stamped warning line, a bar's whole-second clock as the
step time, and the final frame (n == total), the train summary and the closing redraw as the run's end (not a
new attempt); the lookalikes that must read as before: a relaunch's bar drawn again from 0 (after a
traceback, or long after with no line between), two ranks' checkpoint-shard loading bars (no steps)."""

from __future__ import annotations

from pathlib import Path

import pytest
from scope.analyzers.goodput import goodput

from tests.helpers import assert_sane_goodput, write_log

_DDP_WARN = "[rank{r}]:[W0311 21:40:{s:02d}.{f:06d}312 reducer.cpp:1431] Warning: find_unused_parameters=True was specified in DDP constructor, but did not find any unused parameters in the forward pass. (function operator())"
_EXIT_WARN = "[rank0]:[W0311 {h:02d}:{m:02d}:{s:02d}.551208734 ProcessGroupNCCL.cpp:1524] Warning: WARNING: destroy_process_group() was not called before program exit, which can leak resources. For more info, please see https://pytorch.org/docs/stable/distributed.html#shutdown (function operator())"


# both ranks load the model: their shard bars interleaved frame by frame (no training steps)
_SHARDS = "".join(
    f"Loading checkpoint shards: {p:3d}%|███▎      | {n}/4 [00:0{n}<00:0{4 - n},  1.2{r}s/it]"
    for n, p in ((0, 0), (1, 25), (2, 50), (3, 75), (4, 100))
    for r in (0, 1)
)


def _clock(s: int) -> str:
    h, rest = divmod(s, 3600)
    m, sec = divmod(rest, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m:02d}:{sec:02d}"


def _frame(n: int, total: int, step_s: float, desc: str = "", late_s: float = 0.0) -> str:
    """tqdm's frame of a bar at count n (std.py format_meter), its elapsed clock in whole seconds."""
    if n == 0:
        return f"{desc}  0%|          | 0/{total} [00:00<?, ?it/s]"
    el = int(n * step_s + late_s)
    left = int((total - n) * step_s)
    return f"{desc}{n * 100 // total:3d}%|▍         | {n}/{total} [{_clock(el)}<{_clock(left)},  {step_s:.2f}s/it]"


def _hf_run(total: int, step_s: float, every: int = 10, desc: str = "", start_s: int = 7) -> list[str]:
    """An HF Trainer run under `accelerate launch` (2 processes, the main one's bar), as a log that lost tqdm's
    `\\r`: each line the frames since the logs dict before, then the dict; the final frame (n == total) glued to
    the script's own print, the train summary, the closing redraw, the c10d exit warning."""
    lines = [
        "The following values were not passed to `accelerate launch` and had defaults used instead:",
        "\t`--num_machines` was set to a value of `1`",
        _SHARDS,
        "Starting training...",
        "Starting training...",
        _frame(0, total, step_s, desc) + _DDP_WARN.format(r=1, s=start_s, f=41877),
        _DDP_WARN.format(r=0, s=start_s, f=52031),
    ]
    frames: list[str] = []
    for n in range(1, total + 1):
        frames.append(_frame(n, total, step_s, desc))
        if n % every == 0 and n < total:
            loss = 2.1 - n / total
            lines.append(
                "".join(frames)
                + "                                                    "
                + f"{{'loss': {loss:.4f}, 'grad_norm': 0.31, 'learning_rate': 4.2e-05, 'epoch': {n / total * 2:.2f}}}"
            )
            frames = [_frame(n, total, step_s, desc)]
    runtime = total * step_s + 1.2
    lines += [
        "".join(frames) + "Done. Adapter written to ./out/lora-final",
        "                                                    "
        + f"{{'train_runtime': {runtime:.4f}, 'train_samples_per_second': 12.84, 'train_steps_per_second': {1 / step_s:.3f}, 'train_loss': 1.61, 'epoch': 2.0}}",
        _frame(total, total, step_s, desc, late_s=1) + _frame(total, total, step_s, desc, late_s=1),
        "Done. Adapter written to ./out/lora-final",
    ]
    end = 21 * 3600 + 40 * 60 + start_s + int(total * step_s) + 2
    lines.append(_EXIT_WARN.format(h=end // 3600, m=end // 60 % 60, s=end % 60))
    return lines


def test_glued_bar_frames_ending_at_their_total_are_one_completed_attempt_of_every_step(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path, _hf_run(total=233, step_s=1.37, every=10)))
    assert_sane_goodput(r)
    assert len(r.acc.attempts) == 1, [(a.first_step, a.last_step, a.ended) for a in r.acc.attempts]
    a = r.acc.attempts[0]
    assert a.first_step == 0 and a.last_step == 233 and r.acc.steps_completed == 233 and a.ended == "completed"
    assert r.acc.buckets.get("queued", 0.0) == 0.0 and r.acc.buckets["productive"] == pytest.approx(233 * 1.37, abs=2)


def test_a_trainers_described_bar_glued_reads_every_frame(tmp_path: Path) -> None:
    lines = _hf_run(total=150, step_s=2.3, every=25, desc="Training: ")
    r = goodput(write_log(tmp_path, lines))
    assert_sane_goodput(r)
    assert [(a.first_step, a.last_step, a.ended) for a in r.acc.attempts] == [(1, 150, "completed")]
    steps = {m.step for m in r.acc.attempts[0].marks if m.kind == "step"}
    assert set(range(1, 151)) <= steps  # every frame, not only each line's first
    assert r.acc.ideal_step_s == pytest.approx(2.3, abs=0.2)


def test_bar_frames_after_a_stamped_warning_keep_their_own_clock(tmp_path: Path) -> None:
    # the frames of steps 1..10 follow the rank's DDP warning line: not all at that line's second (no
    # 15-s first step read as warm-up), and whole-second frames give the real ~1.7 s step, not 2 s
    r = goodput(write_log(tmp_path, _hf_run(total=300, step_s=1.72, every=10)))
    assert_sane_goodput(r)
    assert r.acc.buckets.get("warmup", 0.0) < 2.0, r.acc.buckets
    assert r.acc.ideal_step_s == pytest.approx(1.72, abs=0.1)


def test_whole_second_bar_frames_one_a_line_give_the_step_time_not_its_rounding(tmp_path: Path) -> None:
    # a log that kept tqdm's `\r` (read as line breaks): each frame a line of its own, 0.63 s steps
    text = "\r".join(_frame(n, 400, 0.63) for n in range(401)) + "\n"
    path = tmp_path / "train.log"
    path.write_text("Starting training...\n" + text)
    r = goodput(path)
    assert r.acc.steps_completed == 400
    assert r.acc.ideal_step_s == pytest.approx(0.63, abs=0.08)


def _two_writers(total: int, step_s: float, lag: int) -> str:
    """Both processes draw the bar (tqdm on every rank), the second `lag` counts behind, `\\r`-separated."""
    frames = [_frame(0, total, step_s), _frame(0, total, step_s)]
    for n in range(1, total + 1):
        frames += [_frame(n, total, step_s), _frame(max(0, n - lag), total, step_s)]
    frames.append(_frame(total, total, step_s))
    return "\r".join(frames)


@pytest.mark.parametrize("lag", [1, 2])
@pytest.mark.parametrize("sep", ["\r", ""])
def test_two_processes_bars_interleaved_are_one_attempt(tmp_path: Path, lag: int, sep: str) -> None:
    body = _two_writers(120, 1.9, lag).replace("\r", sep)
    path = tmp_path / "train.log"
    path.write_text(
        "Starting training...\n"
        + body
        + "\n"
        + "{'train_runtime': 229.7, 'train_samples_per_second': 4.2, 'train_steps_per_second': 0.522, 'train_loss': 0.9, 'epoch': 1.0}\n"
    )
    r = goodput(path)
    assert [(a.first_step, a.last_step) for a in r.acc.attempts] == [(0, 120)]
    assert r.acc.steps_completed == 120 and r.acc.attempts[0].ended == "completed"


# ---- lookalikes that must read as before ---------------------------------------------------------------


def test_a_bar_drawn_again_from_zero_after_a_traceback_is_a_relaunch(tmp_path: Path) -> None:
    first = [_frame(n, 90, 1.5) for n in range(0, 41)]
    again = [_frame(n, 90, 1.5) for n in range(0, 91)]
    lines = [
        "".join(first[:20]),
        "".join(first[20:]),
        "Traceback (most recent call last):",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
        "".join(again[:45]),
        "".join(again[45:]),
    ]
    r = goodput(write_log(tmp_path, lines))
    assert [(a.first_step, a.last_step) for a in r.acc.attempts] == [(0, 40), (0, 90)]


def test_a_bar_drawn_again_from_zero_late_with_no_line_between_is_still_a_relaunch(tmp_path: Path) -> None:
    first = [_frame(n, 90, 1.5) for n in range(0, 41)]
    again = [_frame(n, 90, 1.5) for n in range(0, 91)]
    r = goodput(write_log(tmp_path, ["".join(first), "".join(again)]))
    assert [(a.first_step, a.last_step) for a in r.acc.attempts] == [(0, 40), (0, 90)]
