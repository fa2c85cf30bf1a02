# ruff: noqa: E501  (log lines are kept whole, in the formats' own shape)
"""Goodput accounting the review of stop 51 found wrong, each case built in the real format's own lines: a
relaunch from scratch and an early crash's resume in a JSON-lines trainer log are attempts (not a lagging
second writer); a rank's SIGTERM line before the launcher's failed-rank line is the failure's, not a stop;
litgpt's optimizer steps after a rollback and its validation line; a step-time field is no optimizer step."""

from __future__ import annotations

from pathlib import Path

import pytest
from scope.analyzers.goodput import goodput

from scope.render.goodput import render_goodput
from tests.helpers import assert_sane_goodput, write_log


def _jsonl(step: int, total: int, elapsed_s: int) -> str:
    """LLaMA-Factory's trainer_log.jsonl record (the fields as tests/test_goodput_training_classes.py's)."""
    h, rest = divmod(elapsed_s, 3600)
    clock = f"{h}:{rest // 60:02d}:{rest % 60:02d}"
    return (
        f'{{"current_steps": {step}, "total_steps": {total}, "loss": 0.5, "lr": 1e-05, "epoch": 0.1, '
        f'"percentage": 1.0, "elapsed_time": "{clock}", "remaining_time": "0:10:00"}}'
    )


def test_a_relaunch_from_scratch_logging_each_step_at_the_same_clock_is_an_attempt(tmp_path: Path) -> None:
    # steps every 200 s to 500 (2.78 h), then a relaunch from step 0 to 600: each of its steps is logged at
    # about the clock the first launch logged it, but its counter is far behind the launch's top step
    first = [_jsonl(s, 600, s * 20) for s in range(10, 501, 10)]
    second = [_jsonl(s, 600, s * 20 + 3) for s in range(10, 601, 10)]
    r = goodput(write_log(tmp_path, first + second, name="trainer_log.jsonl"))
    assert_sane_goodput(r)
    assert [(a.first_step, a.last_step) for a in r.acc.attempts] == [(10, 500), (10, 600)]
    assert r.acc.steps_redone >= 490 and r.wall_s == pytest.approx(500 * 20 + 600 * 20 + 3, abs=1.0)


def test_an_early_crash_resumed_a_few_records_back_is_an_attempt(tmp_path: Path) -> None:
    # a launch that reached step 50 at 100 s, then a resume from step 20 whose clock restarts at 0: within a
    # minute of the first launch's clock for its first steps, but two log intervals behind its top step
    first = [_jsonl(s, 100, s * 2) for s in range(10, 51, 10)]
    second = [_jsonl(s, 100, (s - 20) * 2 - 15) for s in range(30, 101, 10)]
    r = goodput(write_log(tmp_path, first + second, name="trainer_log.jsonl"))
    assert_sane_goodput(r)
    assert len(r.acc.attempts) == 2 and r.acc.attempts[1].first_step == 30
    assert r.wall_s == pytest.approx(100 + 145, abs=1.0)  # each launch's own clock, laid end to end


TITAN = "[rank0]:[titan] 2025-03-01 10:00:{s:02d},000 - root - INFO - step: {n:2d}  loss:  8.1234  memory:  1.20GiB(1.52%)  tps: 1,638  tflops: 0.12  mfu: 0.01%"
# torchrun stops the survivors of a failed rank with SIGTERM, then logs the failed rank (tests/data/goodput/
# torchtitan_restart.log's lines); Lightning's handler prints the survivor's SIGTERM in between
PEER_KILLED = [
    "W0301 10:01:14.000000 4021 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 4025 closing signal SIGTERM",
    "[rank: 0] Received SIGTERM: 15",
    "E0301 10:01:15.000000 4021 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: -9) local_rank: 3 (pid: 4028) of binary: /usr/bin/python3",
]


def test_a_ranks_sigterm_before_the_launchers_failed_rank_line_is_a_failure(tmp_path: Path) -> None:
    steps = [TITAN.format(s=10 + 5 * n, n=n) for n in range(1, 9)]
    r = goodput(write_log(tmp_path, steps + PEER_KILLED))
    (attempt,) = r.acc.attempts
    assert attempt.ended == "failed" and "exitcode: -9" in attempt.end_evidence
    assert len(r.acc.failures) == 1


def test_a_ranks_sigterm_the_launcher_was_sent_too_stays_a_stop(tmp_path: Path) -> None:
    # a scheduler's cancel reaches torchrun as well: its own SIGTERM line says the stop came from outside
    steps = [TITAN.format(s=10 + 5 * n, n=n) for n in range(1, 9)]
    stop = [
        "[rank: 0] Received SIGTERM: 15",
        "W0301 10:01:15.000000 4021 torch/distributed/elastic/agent/server/api.py:704] Received Signals.SIGTERM death signal, shutting down workers",
        "E0301 10:01:16.000000 4021 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: -15) local_rank: 0 (pid: 4025) of binary: /usr/bin/python3",
    ]
    (attempt,) = goodput(write_log(tmp_path, steps + stop)).acc.attempts
    assert attempt.ended == "stopped"


def _litgpt(it: int, opt: int, done: bool = False) -> str:
    # litgpt finetune's progress line (Lightning-AI/litgpt#1224's form), accumulation 4
    tail = " (step)" if done else ""
    return f"Epoch 1 | iter {it} step {opt} | loss train: 1.000, val: n/a | iter time: 100.00 ms{tail}"


def test_litgpt_optimizer_steps_after_a_rollback_are_counted_once_in_their_unit(tmp_path: Path) -> None:
    # iterations 1..40 (optimizer steps 1..10), a crash, then a relaunch from iteration 21 (step 6) to 60
    first = [_litgpt(i, (i + 3) // 4, i % 4 == 0) for i in range(1, 41)]
    crash = ["Traceback (most recent call last):", "RuntimeError: CUDA error: an illegal memory access was encountered"]
    second = [_litgpt(i, (i + 3) // 4, i % 4 == 0) for i in range(21, 61)]
    r = goodput(write_log(tmp_path, first + crash + second))
    assert len(r.acc.attempts) == 2
    assert (r.acc.steps_completed, r.acc.iterations_completed, r.acc.steps_redone) == (15, 60, 20)
    text = render_goodput(r.result())
    assert "15 completed (optimizer steps, over 60 iterations), at least 20 iterations redone" in " ".join(text.split())
    assert "iterations 1..40" in text and "steps 1..40" not in text


LITGPT_VAL = [
    "iter 4760 | step 595: loss 0.2745, iter time: 131.68 ms",
    "iter 4770 | step 596: loss 0.2813, iter time: 60.50 ms",
    "iter 4780 | step 597: loss 0.2746, iter time: 69.50 ms",
    "iter 4790 | step 598: loss 0.2609, iter time: 153.14 ms (optimizer.step)",
    # litgpt's validation line (Lightning-AI/litgpt#1042): an evaluation after iteration 4800, not a step
    "iter 4800: val loss 1.7258, val time: 3778.02 ms",
    "iter 4810 | step 601: loss 0.2745, iter time: 131.68 ms",
    "iter 4820 | step 602: loss 0.2813, iter time: 60.50 ms",
    "iter 4830 | step 603: loss 0.2746, iter time: 69.50 ms",
    "iter 4840 | step 605: loss 0.2609, iter time: 153.14 ms (optimizer.step)",
    "iter 4850 | step 606: loss 0.3222, iter time: 61.86 ms",
]


def test_litgpts_validation_line_is_an_evaluation_not_a_step(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path, LITGPT_VAL))
    assert_sane_goodput(r)
    assert r.acc.steps_completed == 11 and r.acc.iterations_completed == 90
    assert r.acc.buckets["evaluation"] == pytest.approx(3.778, abs=1e-3)
    assert 4800 not in [s for s, _ in r.acc.step_times]
    assert r.wall_s < 15.0  # not the validation's 3.8 s times the 10 iterations between lines


def test_a_step_time_field_is_no_optimizer_step(tmp_path: Path) -> None:
    lines = [f"iter {i} | step 0.{400 + i % 90}s | loss 2.01" for i in range(101, 121)]
    r = goodput(write_log(tmp_path, lines))
    assert r.acc.steps_completed == 20 and r.acc.iterations_completed is None


def test_one_iteration_per_optimizer_step_mid_run_counts_the_first_line(tmp_path: Path) -> None:
    lines = [f"iter {i} step {i} | loss 2.0 | iter time: 100.00 ms" for i in range(101, 121)]
    r = goodput(write_log(tmp_path, lines))
    assert (r.acc.steps_completed, r.acc.iterations_completed) == (20, 20)


MEGATRON = "[2024-04-20 08:{m:02d}:{s:02d}] iteration {n:>8}/     100 | consumed samples: {c:>12} | elapsed time per iteration (ms): 10000.0 | learning rate: 1.000000E-04 | global batch size:   512 | lm loss: 7.1E+00 |"


@pytest.mark.parametrize(
    "ending",
    [
        # a job hanging until its time limit (tests/test_goodput_stops_and_counters.py's SLURM line, zetta_utils#671)
        "slurmstepd: error: *** JOB 494583 ON node1 CANCELLED AT 2024-04-20T10:05:00 DUE TO TIME LIMIT ***",
        # the same silence ended by the collective's watchdog
        "[rank0]:[E420 10:05:00.000000000 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=31, OpType=ALLREDUCE) ran for 7200000 milliseconds before timing out.",
    ],
)
def test_hours_of_silence_before_the_attempt_ends_are_hung(tmp_path: Path, ending: str) -> None:
    steps = [MEGATRON.format(m=(10 * n) // 60, s=(10 * n) % 60, n=n, c=512 * n) for n in range(1, 31)]
    r = goodput(write_log(tmp_path, [*steps, ending]))
    assert_sane_goodput(r)
    assert r.acc.buckets["hung"] == pytest.approx(2 * 3600, abs=1.0)
    assert r.acc.buckets["unexplained"] < 60.0 and r.acc.buckets["productive"] < 600.0


def test_the_stored_summary_says_which_unit_its_counts_and_step_time_are_in(tmp_path: Path) -> None:
    from scope.analyzers.goodput import summary_table

    row = summary_table(goodput(write_log(tmp_path, LITGPT_VAL))).iloc[0]
    assert (row["steps_completed"], row["iterations_completed"]) == (11, 90)
    assert row["ideal_step_s"] == pytest.approx(0.0695, abs=1e-3)  # one iteration's time, as the column says
    plain = summary_table(
        goodput(write_log(tmp_path / "plain", [f"iter {i} | loss 2.0 | iter time: 100.00 ms" for i in range(1, 21)]))
    )
    assert plain["iterations_completed"].isna().all() and not plain["steps_completed_is_lower_bound"].iloc[0]


def test_the_dashboard_words_optimizer_steps_with_a_bound_set_and_redone_iterations(tmp_path: Path) -> None:
    from dataclasses import replace

    from scope.app.pages.goodput import _summary_facts

    first = [_litgpt(i, (i + 3) // 4, i % 4 == 0) for i in range(1, 41)]
    second = [_litgpt(i, (i + 3) // 4, i % 4 == 0) for i in range(21, 61)]
    result = goodput(write_log(tmp_path, [*first, "Traceback (most recent call last):", *second])).result()
    facts = dict(_summary_facts(replace(result, steps_completed_is_lower_bound=True)))  # (was int("at least ..."))
    assert facts["steps completed"] == "15 optimizer steps, over 60 iterations"
    assert str(facts["steps redone"]).startswith("at least 20 iterations")


def test_no_figure_of_a_recorded_log_is_larger_than_its_own_span() -> None:
    """Each log of tests/data/goodput (the shared training logs' check, on the project's own recordings)."""
    from tests.test_goodput_stops_and_counters import _figures_beyond

    logs = sorted((Path(__file__).parent / "data" / "goodput").glob("*.log"))
    assert len(logs) >= 10
    for log in logs:
        r = goodput(log)
        if r.timed:
            assert_sane_goodput(r)
            assert not _figures_beyond(r, r.acc.wall_s + 1e-6), (log.name, _figures_beyond(r, r.acc.wall_s))


def test_every_structural_word_row_reads_its_own_example() -> None:
    from scope.analyzers.goodput.formats.structural_words import STRUCTURAL_WORDS, words
    from scope.analyzers.goodput.structural import structural_optimizer_step

    for row in STRUCTURAL_WORDS:
        assert row.source and words(row.kind).search(row.example), (row.kind, row.example)
    assert structural_optimizer_step(STRUCTURAL_WORDS[4].example) == 220
    assert structural_optimizer_step("iter 101 | step 0.413s | loss 2.01") is None
