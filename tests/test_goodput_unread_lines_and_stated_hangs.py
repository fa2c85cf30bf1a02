# ruff: noqa: E501  (log lines are kept whole, as the programs print them)
"""Goodput classes a fresh set of real training logs exposed (issue 40), each on short excerpts of other public logs of the same
format (URLs beside them) or synthetic lines in that format: a step line no row read (OpenPCDet, MMF), a
collective hang the c10d watchdog states counted as the last step's work, fairseq's update counts printed
only in epoch summaries and validation records, and a stretch of a log cut out read as work."""

from __future__ import annotations

from pathlib import Path

import pytest
from scope.analyzers.goodput import goodput

from tests.helpers import assert_sane_goodput, write_log

# https://github.com/open-mmlab/OpenPCDet/issues/1156 (a run with --use_logger_to_record and gpustat lines)
PCDET_1156 = [
    "2022-10-23 03:52:21,040   INFO  epoch: 18/120, acc_iter=4879, cur_iter=0/271, batch_size=4, loss=4.61976957321167, lr=0.0011333773663071286",
    "2022-10-23 03:52:32,937   INFO  epoch: 18/120, acc_iter=4900, cur_iter=21/271, batch_size=4, loss=3.708709478378296, lr=0.0011397096714465093",
    "2022-10-23 03:52:59,735   INFO  epoch: 18/120, acc_iter=4950, cur_iter=71/271, batch_size=4, loss=5.418487548828125, lr=0.0011548391175393044",
    "2022-10-23 03:53:02,535   INFO  c2613.crane.hcc.unl.edu  Sun Oct 23 03:53:02 2022  515.65.01",
    "[0] Tesla V100-PCIE-16GB | 54°C,   0 % | 10164 / 16384 MB | sagrawal(9937M)",
    "",
    "2022-10-23 03:53:27,633   INFO  epoch: 18/120, acc_iter=5000, cur_iter=121/271, batch_size=4, loss=7.672196388244629, lr=0.001170040767381194",
    "2022-10-23 03:53:53,441   INFO  epoch: 18/120, acc_iter=5050, cur_iter=171/271, batch_size=4, loss=3.1671500205993652, lr=0.0011853124042863498",
    "2022-10-23 03:54:18,193   INFO  epoch: 18/120, acc_iter=5100, cur_iter=221/271, batch_size=4, loss=4.02829122543335, lr=0.0012006518013635158",
]


def _pcdet_steps(start_h: int, n: int, every_s: int = 45) -> list[str]:
    """OpenPCDet key=value step lines (synthetic, with the timers of OpenPCDet's train_utils), 50 iterations EVERY_S apart."""
    lines = []
    for i in range(n):
        t = start_h * 3600 + i * every_s
        stamp = f"2023-06-30 {t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d},100"
        lines.append(
            f"{stamp}   INFO  epoch: 3/20, acc_iter={1000 + 50 * i}, cur_iter={200 + 50 * i}/7724, batch_size=4, "
            "time_cost(epoch): 10:00/1:30:00, time_cost(all): 2:10:00/8:00:00, loss=1.5, d_time=0.02(0.02), "
            "f_time=0.88(0.88), b_time=0.90(0.90), norm=28.7, lr=0.002"
        )
    return lines


def test_openpcdet_step_lines_are_read(tmp_path: Path) -> None:
    """The key=value line (acc_iter the global iteration), gpustat's lines between: one attempt, iterations
    4879..5100, all of it training."""
    r = goodput(write_log(tmp_path, PCDET_1156))
    assert len(r.acc.attempts) == 1
    assert (r.acc.attempts[0].first_step, r.acc.attempts[0].last_step) == (4879, 5100)
    assert_sane_goodput(r)
    assert r.goodput_pct is not None and r.goodput_pct > 95.0


def test_openpcdet_latest_model_save_is_a_save(tmp_path: Path) -> None:
    lines = _pcdet_steps(2, 3)
    lines.insert(2, "2023-06-30 02:01:00,500   INFO  Save latest model to /out/ckpt/latest_model")
    r = goodput(write_log(tmp_path, lines))
    assert len(r.saves()) == 1
    assert r.acc.ideal_step_s == pytest.approx(0.9)


def test_untimed_watchdog_line_ends_its_stated_hang(tmp_path: Path) -> None:
    """torch < 2.2 prints the watchdog's line with no timestamp (the line as in
    https://github.com/salesforce/MUST/issues/7): the collective ran 1800 s after the last timed line, so
    the job ends there, and those 1800 s are hung, not the last step's work."""
    lines = [
        *_pcdet_steps(2, 4),
        "[E ProcessGroupNCCL.cpp:587] [Rank 12] Watchdog caught collective operation timeout: WorkNCCL(OpType=ALLGATHER, Timeout(ms)=1800000) ran for 1800172 milliseconds before timing out.",
    ]
    r = goodput(write_log(tmp_path, lines))
    assert r.wall_s == pytest.approx(135.0 + 1800.172, abs=0.5)
    assert r.acc.buckets["hung"] == pytest.approx(1800.172, abs=0.5)
    assert r.acc.buckets["productive"] == pytest.approx(135.0, abs=0.5)
    assert r.acc.attempts[0].ended == "failed"


def test_untimed_watchdog_line_after_other_timed_lines_is_placed_from_the_last_step(tmp_path: Path) -> None:
    """Another logger goes on printing (timed, no step) for 25 min while rank 12 waits in its ALLGATHER: the
    collective began after the last step line, so the line ends 1800 s after that step, not after the last
    timed line (which would make a 3,300 s hang of a 1,800 s timeout)."""
    lines = [*_pcdet_steps(2, 4)]
    for m in range(1, 26):
        t = 2 * 3600 + 135 + m * 60
        lines.append(
            f"2023-06-30 {t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d},100   INFO  building index shard {m}/40"
        )
    lines.append(
        "[E ProcessGroupNCCL.cpp:587] [Rank 12] Watchdog caught collective operation timeout: WorkNCCL(OpType=ALLGATHER, Timeout(ms)=1800000) ran for 1800172 milliseconds before timing out."
    )
    r = goodput(write_log(tmp_path, lines))
    assert r.wall_s == pytest.approx(
        135.0 + 1800.172, abs=0.5
    )  # (3,435 s before: placed 1,800 s after the shard lines)
    assert r.acc.buckets["hung"] == pytest.approx(1800.172, abs=0.5)
    assert r.acc.attempts[0].ended == "failed"


def test_timed_watchdog_line_makes_its_span_hung(tmp_path: Path) -> None:
    """torch >= 2.2's glog-stamped line (as in https://github.com/modelscope/ms-swift/issues/5409) after a
    log with one step line (no step time to find a hang by: OpenPCDet's line without its timers) and a
    periodic message: the 600 s the collective
    ran are hung; the time before it, with the messages, stays with the steps (nothing says otherwise)."""
    lines = [
        PCDET_1156[0].replace("2022-10-23 03:52:21,040", "2022-10-23 00:00:00,000"),
        *[f"2022-10-23 00:0{m}:00,000   INFO  heartbeat: 6 ranks alive" for m in range(1, 6)],
        "[rank2]:[E1023 00:15:01.000000000 ProcessGroupNCCL.cpp:629] [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=137429, OpType=_ALLGATHER_BASE, NumelIn=71552, NumelOut=572416, Timeout(ms)=600000) ran for 600004 milliseconds before timing out.",
    ]
    r = goodput(write_log(tmp_path, lines))
    assert r.acc.buckets["hung"] == pytest.approx(600.004, abs=0.01)
    assert r.acc.buckets["productive"] == pytest.approx(r.wall_s - 600.004, abs=0.01)
    assert r.goodput_pct is not None and 30.0 < r.goodput_pct < 35.0
    assert r.acc.attempts[0].ended == "failed"


def test_watchdog_span_never_swallows_a_later_step(tmp_path: Path) -> None:
    """A step line printed after the collective was (by the stated span) enqueued: the hang begins at that
    step, the steps before it stay productive."""
    lines = [
        *_pcdet_steps(0, 4),
        "[rank0]:[E630 00:02:30.000000000 ProcessGroupNCCL.cpp:629] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=60000) ran for 100000 milliseconds before timing out.",
    ]
    r = goodput(write_log(tmp_path, lines))
    assert r.acc.buckets["hung"] == pytest.approx(14.9, abs=0.01)
    assert r.acc.buckets["productive"] == pytest.approx(135.0, abs=0.01)


# fairseq --log-format json with a log interval past the epoch: only the validation record and the epoch
# summary name the updates (keys as in the FSDP example output of
# https://github.com/facebookresearch/fairseq/blob/main/examples/fully_sharded_data_parallel/README.md)
FAIRSEQ_EPOCHS = [
    "2021-03-08 18:00:00 | INFO | fairseq.tasks.language_modeling | dataset loaded",
    *[
        line
        for e in range(1, 5)
        for line in (
            f'2021-03-08 18:{e * 2 - 1:02d}:00 | INFO | valid | {{"epoch": {e}, "valid_loss": "16.624", "valid_ppl": "101000", "valid_num_updates": "{e * 50}"}}',
            f"2021-03-08 18:{e * 2 - 1:02d}:20 | INFO | fairseq.checkpoint_utils | saved checkpoint ckpt/checkpoint{e}.pt (epoch {e} @ {e * 50} updates, score 16.6) (writing took 19.5 seconds)",
            f'2021-03-08 18:{e * 2 - 1:02d}:21 | INFO | train | {{"epoch": {e}, "train_loss": "18.114", "train_ppl": "283776", "train_num_updates": "{e * 50}", "train_lr": "0", "train_train_wall": "39"}}',
        )
    ],
]


def test_fairseq_epoch_summaries_and_first_validation_count_the_updates(tmp_path: Path) -> None:
    """Updates 50..200 from the `train_num_updates` of the summaries and the first `valid_num_updates` (no
    step line before it: the first epoch's training, not initialization); each save's writing time blocked."""
    r = goodput(write_log(tmp_path, FAIRSEQ_EPOCHS))
    a = r.acc.attempts
    assert len(a) == 1 and (a[0].first_step, a[0].last_step) == (50, 200)
    assert r.acc.buckets["initialization"] == 0.0
    assert r.acc.buckets["checkpoint_save"] == pytest.approx(4 * 19.5, abs=2.0)
    assert_sane_goodput(r)


def _mmf_lines(updates: list[int], times: list[int]) -> list[str]:
    """MMF LogisticsCallback lines (synthetic, summarize_report's format) at UPDATES, TIMES seconds on."""
    return [
        f"2022-02-01T09:{t // 60:02d}:{t % 60:02d} | mmf.trainers.callbacks.logistics: progress: {u}/88000, "
        f"train/vqa2/triple_logit_bce: 6.2341, train/total_loss: 6.2341, max mem: 9120.0, experiment: run, epoch: 1, "
        f"num_updates: {u}, iterations: {u}, max_updates: 88000, lr: 0.00005, ups: 1.67, time: 01m 00s 000ms"
        for u, t in zip(updates, times, strict=True)
    ]


def test_cut_stretch_beyond_its_steps_is_unexplained(tmp_path: Path) -> None:
    """Lines every 100 updates at 60 s; 300 -> 1100 in one stretch (lines cut out) took 680 s, 200 s beyond
    its 800 updates: those 200 s are unexplained, not work; a last line cut after its first meter still
    counts its update."""
    lines = _mmf_lines([100, 200, 300, 1100, 1200, 1300], [60, 120, 180, 860, 920, 980])
    lines.append(
        "2022-02-01T09:17:20 | mmf.trainers.callbacks.logistics: progress: 1400/88000, train/vqa2/triple_logit_bce: 6.2"
    )
    r = goodput(write_log(tmp_path, lines))
    assert r.acc.attempts[0].last_step == 1400
    assert r.acc.buckets["unexplained"] == pytest.approx(200.0, abs=1.0)
    assert_sane_goodput(r)


def test_steady_cut_stretch_stays_productive(tmp_path: Path) -> None:
    """The same cut at the steady pace (800 updates in 480 s): nothing hidden, all of it work."""
    lines = _mmf_lines([100, 200, 300, 1100, 1200, 1300], [60, 120, 180, 660, 720, 780])
    r = goodput(write_log(tmp_path, lines))
    assert r.acc.buckets["unexplained"] == 0.0
    assert r.acc.buckets["productive"] == pytest.approx(r.wall_s, abs=1.0)


def test_nanogpt_evaluation_at_the_resumed_step_places_no_steps(tmp_path: Path) -> None:
    """nanoGPT (init_from='resume') evaluates at the iteration it resumed from before its first step
    (https://github.com/karpathy/nanoGPT/blob/master/train.py: `step {iter_num}: train loss .., val loss ..`
    at iter_num % eval_interval == 0, then `iter {iter_num}: loss ..`): step 5000 ran in an earlier launch,
    so the evaluation is no step of this one (only fairseq's and MMF's validations, which follow training,
    say steps ran); lines stamped by a wrapper."""
    lines = ["2024-01-01 10:00:00 Resuming training from out", "2024-01-01 10:00:00 number of parameters: 123.65M"]
    lines += [
        "2024-01-01 10:02:00 step 5000: train loss 3.1000, val loss 3.2000",
        "2024-01-01 10:02:00 saving checkpoint to out",
    ]
    for i in range(1, 61):
        s = 150 + i
        lines.append(
            f"2024-01-01 10:{s // 60:02d}:{s % 60:02d} iter {5000 + i}: loss 3.0000, time 1000.00ms, mfu 30.00%"
        )
    r = goodput(write_log(tmp_path, lines))
    (a,) = r.acc.attempts
    assert (a.first_step, a.last_step, r.acc.steps_completed) == (5001, 5060, 60)  # (5000 and 61 before)
    assert r.acc.buckets["productive"] == pytest.approx(60.0, abs=0.5)  # (91 s before: the eval counted as steps)
