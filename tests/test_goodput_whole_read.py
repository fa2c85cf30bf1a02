"""A whole read of the evaluation-only / reused-bar / training-clock passes as one: what separate reviews could
not see. A training run whose log starts at a mid-run evaluation (its `***** Running training *****` banner cut
off) keeps its training bar; an evaluation-only launch is not said to stop `in start-up, before a first step`."""

from __future__ import annotations

from pathlib import Path

from scope.analyzers.goodput import goodput

from scope.render.goodput import render_goodput
from tests.helpers import write_log


def _hf(at: str, msg: str, line: int = 3835) -> str:
    return f"[INFO|trainer.py:{line}] 2024-07-02 {at} >> {msg}"


def _eval_banner(at: str, examples: int, batch: int) -> list[str]:
    return [
        _hf(at, "***** Running Evaluation *****"),
        _hf(at, f"  Num examples = {examples}", 3837),
        _hf(at, f"  Batch size = {batch}", 3840),
    ]


def test_a_cut_off_training_run_keeps_its_bar_after_an_evaluation(tmp_path: Path) -> None:
    """The log starts at a mid-run evaluation whose metrics name no eval_loss (a model with no loss on the
    evaluation set, or a named evaluation set: `eval_mnli_accuracy`): the training bar that goes on after it
    (another total) is the training's, not the evaluation's; the run's 500 steps stay."""
    lines = [
        *_eval_banner("10:02:11,301", 1043, 16),
        "100%|██████████| 66/66 [00:19<00:00,  3.40it/s]",
        "{'eval_mnli_accuracy': 0.812, 'eval_runtime': 19.4, 'eval_samples_per_second': 53.7, 'epoch': 1.0}",
        *[f" {p}%|█████     | {p * 12}/1200 [{p // 6:02d}:00<05:00,  1.32it/s]" for p in range(50, 101, 10)],
        "{'train_runtime': 912.3, 'train_samples_per_second': 21.0, 'train_steps_per_second': 1.315, 'epoch': 2.0}",
    ]
    r = goodput(write_log(tmp_path, lines))
    assert r.evaluation_only == "", r.evaluation_only
    assert r.acc.steps_completed is not None and r.acc.steps_completed >= 500, r.acc.steps_completed


def test_an_evaluation_bar_of_one_total_is_still_the_evaluation(tmp_path: Path) -> None:
    """The lookalike that must keep its reading: an evaluation-only launch's bar (one total) is no step."""
    lines = [
        "07/02/2024 08:11:02 - WARNING - __main__ - Process rank: 0, device: cuda:0, n_gpu: 1",
        *_eval_banner("08:11:20,004", 408, 8),
        " 41%|████      | 21/51 [00:08<00:12,  2.44it/s]",
        "100%|██████████| 51/51 [00:21<00:00,  2.41it/s]",
        "***** eval metrics *****",
        "  eval_accuracy           =     0.8456",
    ]
    r = goodput(write_log(tmp_path, lines))
    assert r.acc.steps_completed is None and r.evaluation_only.startswith("1 launch, evaluation only")


def test_an_evaluation_only_launch_is_not_said_to_stop_in_start_up(tmp_path: Path) -> None:
    """`no training in this log: ... evaluation only` beside `the log stops in start-up, before a first step`
    contradicts itself: the launch evaluated and has no training step to stop before."""
    lines = [
        "07/02/2024 08:11:02 - WARNING - __main__ - Process rank: 0, device: cuda:0, n_gpu: 1",
        *_eval_banner("08:11:20,004", 872, 32),
        "100%|██████████| 28/28 [00:11<00:00,  2.51it/s]",
        "***** eval metrics *****",
        "  eval_loss               =     0.3921",
    ]
    r = goodput(write_log(tmp_path, lines))
    text = render_goodput(r.result())
    assert "no training in this log" in text, text
    assert "stops in start-up" not in text, text
    assert "evaluation" in r.acc.attempts[0].end_evidence, r.acc.attempts[0].end_evidence
