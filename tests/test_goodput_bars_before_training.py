# ruff: noqa: E501  (log lines are kept whole, as the programs print them)
"""final16gp: how the goodput pieces of this stop fit together, read as a user reads them. A bar finished before
the run's training-start line (a shard or file loop, undescribed) is no training step: a log without step lines
stays accounted as such (training_unseen, goodput unknown with its bound), not `goodput 0.7%, interrupted`; the
MTBF of the cadence counts the time the jobs held, not the time between two jobs; the steps_not_logged finding
quotes the program's words, not the line's timestamp."""

from __future__ import annotations

from pathlib import Path

import pytest
from scope.analyzers.goodput import goodput

from tests.helpers import assert_sane_goodput, write_log

_HF = "[INFO|trainer.py:{n}] 2025-02-03 {t} >> {msg}"


def _hf_no_logging(loading_bar: str) -> list[str]:
    """HF Trainer with logging_strategy="no" and the bar off: a loading bar before `Running training`, then
    only the loop's end line and summary 2.6 h later."""
    return [
        _HF.format(n=733, t="09:00:00,100", msg="loading configuration file /models/llama-7b/config.json"),
        loading_bar,
        _HF.format(n=2134, t="09:01:10,500", msg="***** Running training *****"),
        _HF.format(n=2135, t="09:01:10,500", msg="  Num examples = 36,718"),
        _HF.format(n=2138, t="09:01:10,500", msg="  Total optimization steps = 3,444"),
        _HF.format(n=2386, t="11:40:22,900", msg=""),
        "",
        "Training completed. Do not forget to share your model on huggingface.co/models =)",
        "",
        "{'train_runtime': 9552.31, 'train_samples_per_second': 11.53, 'train_steps_per_second': 0.361, 'train_loss': 2.0412, 'epoch': 3.0}",
    ]


@pytest.mark.parametrize(
    "bar",
    [
        "100%|██████████| 4/4 [00:12<00:00,  3.01s/it]",  # an undescribed loop over shard files
        "\r  0%|          | 0/3 [00:00<?, ?it/s]\r 33%|███▎      | 1/3 [00:20<00:40, 20.1s/it]\r 67%|██████▋   | 2/3 [00:41<00:20, 20.3s/it]\r100%|██████████| 3/3 [01:01<00:00, 20.4s/it]",
    ],
)
def test_an_undescribed_bar_finished_before_the_training_start_is_no_step(tmp_path: Path, bar: str) -> None:
    r = goodput(write_log(tmp_path, _hf_no_logging(bar)))
    assert_sane_goodput(r)
    assert r.acc.steps_completed is None and r.goodput_pct is None, (r.acc.steps_completed, r.goodput_pct)
    assert r.acc.buckets["training_unseen"] == pytest.approx(9552.4, abs=1.0)
    assert [a.ended for a in r.acc.attempts] == ["completed"]
    assert any(f.kind == "steps_not_logged" for f in r.findings)


def _hf_killed_then_relaunched() -> list[str]:
    """The lookalike that keeps its steps: the training bar (its frames, \\r kept) of a run killed at 120 of 600
    with no line of its own, then a relaunch's `Running training`: never finished, so the training's."""
    frames = "".join(
        f"\r{n * 100 // 600:3d}%|▍         | {n}/600 [{n * 3 // 60:02d}:{n * 3 % 60:02d}<30:00,  3.00s/it]"
        for n in range(0, 121, 10)
    )
    return [
        _HF.format(n=2134, t="09:00:00,000", msg="***** Running training *****"),
        _HF.format(n=2138, t="09:00:00,000", msg="  Total optimization steps = 600"),
        frames,
        _HF.format(n=2134, t="09:20:00,000", msg="***** Running training *****"),
        _HF.format(n=2138, t="09:20:00,000", msg="  Total optimization steps = 600"),
    ]


def test_a_training_bar_cut_short_before_a_relaunch_keeps_its_steps(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path, _hf_killed_then_relaunched()))
    assert r.acc.attempts[0].last_step == 120, [(a.first_step, a.last_step) for a in r.acc.attempts]


def test_the_mtbf_counts_the_jobs_time_not_the_time_between_jobs(tmp_path: Path) -> None:
    # (a crash, an exit, 10 h later a Ctrl-C'd fresh run)
    from tests.test_goodput_launches_without_steps import _relaunches

    r = goodput(write_log(tmp_path, _relaunches()))
    b = r.acc.buckets
    assert b["between_jobs"] > 10 * 3600
    failures = r.cadence.failures
    assert failures == 1
    assert r.cadence.mtbf_s == pytest.approx(r.acc.wall_s - b["between_jobs"]), r.cadence.mtbf_s


def test_the_finding_quotes_the_programs_words_not_the_timestamp(tmp_path: Path) -> None:
    r = goodput(
        write_log(tmp_path, _hf_no_logging("Loading checkpoint shards: 100%|██████████| 4/4 [00:12<00:00,  3.01s/it]"))
    )
    finding = next(f for f in r.findings if f.kind == "steps_not_logged")
    assert "(`***** Running training *****`, HF Trainer)" in finding.summary, finding.summary
    assert "2025-02-03" not in finding.summary
