# ruff: noqa: E501  (log lines are kept whole, as the programs print them)
"""Review of the training-clock and nanotron rows, on lines written here in the real programs' formats:

- a line's own timestamp is its prefix: a time quoted inside the message (nanotron's `[Start training]
  datetime: ...`, a resumed checkpoint's date) is not the line's time, whatever clock format each is in;
- modded-nanoGPT's train_time printed in seconds (`train_time:5.418s`, the track-3 scripts'
  `{approx_training_time:.3f}s`) is the same cumulative training clock as the ms one;
- nanotron's training-start line in all its wordings: `[Start training] datetime: ... |` (to March 2025),
  `[Start training] mbs: ... |` (d4fdd466) and, since 0967c5d0, a `Start training` separator then a line
  `mbs: ... | start_iteration_step: N | consumed_tokens_total: M`."""

from __future__ import annotations

import calendar
from pathlib import Path

import pytest
from scope.analyzers.goodput import goodput
from scope.analyzers.goodput.line_marks import parse_clock, scan_line

from tests.helpers import write_log

_PREFIX_AT = calendar.timegm((2024, 5, 14, 10, 21, 9))


@pytest.mark.parametrize(
    "line",
    [
        # nanotron (2024): us_date prefix, the datetime the message prints (here a clock 4 s behind)
        "05/14/2024 10:21:09 [INFO|DP=0|PP=0|TP=0]: [Start training] datetime: 2024-05-14 10:21:05.038211 | mbs: 2 | grad_accum: 1 | global_batch_size: 2 | sequence_length: 256 | train_steps: 12 | start_iteration_step: 0 | consumed_train_samples: 0",
        # MMEngine's `%Y/%m/%d` prefix, a message quoting an older checkpoint's time
        "2024/05/14 10:21:09 - mmengine - INFO - Load checkpoint from work_dirs/r50/iter_4000.pth (saved 2024-05-13 23:58:10)",
        # glog prefix (torch's C++ / elastic lines), an ISO time inside
        "I0514 10:21:09.000000 4411 torch/distributed/elastic/agent/server/api.py:525] [default] Rendezvous complete at 2024-05-14T08:00:00Z",
        # c10's C++ prefix (torch 2.x: unpadded month, a file:line after the time), an ISO time late in the line
        "[rank0]:[W514 10:21:09.225160784 ProcessGroupNCCL.cpp:4115] [PG ID 0 PG GUID 0 Rank 0] using GPU 0 as device; the store was created 2024-05-14T08:00:00Z",
        # rich's `[%x %X]` prefix
        "[05/14/24 10:21:09] INFO     resumed run started 2024-05-12 07:00:00 from step 500",
        # detectron2's `[%m/%d %H:%M:%S` prefix
        "[05/14 10:21:09 d2.checkpoint]: Loading from ./output/model_0004999.pth written 2024-05-13 21:00:00 ...",
    ],
)
def test_a_lines_prefix_timestamp_is_its_time(line: str) -> None:
    """The timestamp that opens the line (the logger's) is the line's time, not one its message quotes."""
    stamp = parse_clock(line, 2024)
    assert stamp is not None
    assert stamp[1] <= 1, stamp
    assert abs(stamp[0] - _PREFIX_AT) < 1.0, stamp[0] - _PREFIX_AT


def test_iso_prefix_still_wins_over_later_stamps() -> None:
    """The lookalike: an ISO prefix with another format's time later in the line stays the line's time."""
    stamp = parse_clock("2024-05-14 10:21:09,120 - INFO - restored state of 05/13/2024 22:00:00", 1970)
    assert stamp is not None and stamp[1] == 0
    assert abs(stamp[0] - (_PREFIX_AT + 0.12)) < 1e-6


def _hf(sec: int, msg: str) -> str:
    return f"05/14/2024 10:{21 + sec // 60:02d}:{sec % 60:02d} - INFO - __main__ - {msg}"


def test_quoted_old_time_makes_no_wall_span(tmp_path: Path) -> None:
    """A line quoting a day-old time keeps its own: the wall is the prefixes' span, not a day."""
    lines = [_hf(0, "Training/evaluation parameters ...")]
    lines.append(_hf(2, "Resuming from checkpoint-500 of run 7 (written 2024-05-13 09:40:00)"))
    lines += [
        _hf(
            10 + i,
            f"iteration: {500 + i} / 600 | consumed_tokens: 1.02M | elapsed_time_per_iteration_ms: 1.02K | lm_loss: 3.1",
        )
        for i in range(1, 60)
    ]
    r = goodput(write_log(tmp_path, lines))
    assert r.wall_s is not None and r.wall_s < 120.0, r.wall_s


def _speedrun_s(last: int, step_s: float = 0.148) -> list[str]:
    """A track-3-style log: train_time printed in seconds, its step_avg in ms."""
    out, t = ["step:0/4875 val_loss:10.82584 train_time:0.000s step_avg:0.21ms"], 0.0
    for s in range(1, last + 1):
        t += step_s * (30 if s == 1 else 1)
        out.append(f"step:{s}/4875 train_time:{t:.3f}s step_avg:{1000 * t / s:.2f}ms")
        if s % 125 == 0:
            out.append(f"step:{s}/4875 val_loss:4.{s % 97:05d} train_time:{t:.3f}s step_avg:{1000 * t / s:.2f}ms")
    return out


def test_modded_nanogpt_train_time_in_seconds_is_a_training_clock(tmp_path: Path) -> None:
    """`train_time:5.418s` is the cumulative clock too: no known goodput, the wall a lower bound."""
    r = goodput(write_log(tmp_path, _speedrun_s(500)))
    steps = [m for a in r.acc.attempts for m in a.marks if m.kind == "step"]
    assert steps and all(m.row == "modded_nanogpt_step" for m in steps)
    assert r.wall_is_lower_bound
    assert r.goodput_pct is None
    assert r.untimed_outside_clock()[0] == 5  # the step-0 validation and four more
    assert r.wall_s is not None and abs(r.wall_s - 0.148 * (500 + 29)) < 0.5, r.wall_s


def test_seconds_variant_reads_its_unit() -> None:
    marks, _ = scan_line("step:3/4875 train_time:5.711s step_avg:1903.72ms", 1, "x.log")
    assert [(m.row, m.step, m.step_s) for m in marks] == [("modded_nanogpt_step", 3, 5.711)]


def _nt(sec: int, msg: str, ranks: str = "|DP=0|PP=0|TP=0") -> str:
    # nanotron since March 2025: `%m/%d %H:%M:%S [LEVEL...]: msg` (its ANSI colours stripped by the reader too)
    return f"\x1b[2;3m06/03 11:40:{sec:02d} [INFO{ranks}]\x1b[0m: {msg}"


def _nt_iter(i: int, ms: str) -> str:
    return f"iteration: {i} / 12 | consumed_tokens: {i * 2}K | time_per_iteration_ms: {ms} | tokens_per_sec: 3.1K | tokens_per_sec_per_gpu: 3.1K | global_batch_size: 512 | lm_loss: 6.{i} | lr: 0.0003 | model_tflops_per_gpu: 1.2 | eta: 0:00:01"


@pytest.mark.parametrize(
    "start",
    [
        # 0967c5d0 on: a separator-framed `Start training`, then the numbers on a line of their own
        [
            "=" * 50,
            "\x1b[1mStart training\x1b[0m",
            "=" * 50,
            "mbs: 2 | grad_accum: 1 | cp: 1 | sequence_length: 256 | global_batch_size: 2 | train_steps: 12 | start_iteration_step: 0 | consumed_tokens_total: 0",
        ],
        # d4fdd466: the datetime left out of the one line
        [
            "[Start training] mbs: 2 | grad_accum: 1 | sequence_length: 256 | global_batch_size: 2 | train_steps: 12 | start_iteration_step: 0 | consumed_train_samples: 0"
        ],
    ],
)
def test_nanotron_2025_start_training(tmp_path: Path, start: list[str]) -> None:
    """The training's start is read in nanotron's later wordings: the 5 s first iteration is warm-up, not
    initialization."""
    lines = [_nt(0, "Config:"), _nt(1, "No checkpoint path provided.")]
    lines += [_nt(9, s) for s in start]
    lines += [_nt(14, _nt_iter(1, "5.02K"))] + [_nt(14, _nt_iter(i, "10.3")) for i in range(2, 7)]
    lines += [_nt(15, _nt_iter(i, "9.8")) for i in range(7, 13)]
    r = goodput(write_log(tmp_path, lines))
    assert [m.row for a in r.acc.attempts for m in a.marks if m.kind == "train_begin"] == ["nanotron_start_training"]
    assert abs(r.acc.buckets["initialization"] - 9.0) < 0.5, r.acc.buckets
    assert r.acc.buckets["warmup"] > 4.0, r.acc.buckets


def test_mbs_line_of_other_programs_is_no_start() -> None:
    """The lookalike: a config echo naming mbs without nanotron's start_iteration_step is no training start."""
    marks, _ = scan_line("06/03 11:40:09 [INFO]: mbs: 2 | grad_accum: 1 | sequence_length: 256", 1, "x.log")
    assert not [m for m in marks if m.kind == "train_begin"]
