"""HF Trainer runs that only evaluate or predict (do_eval / do_predict alone): the bare bar drawn after
`***** Running Evaluation *****` / `***** Running Prediction *****`, with no `***** Running training *****` in
its launch, is the evaluation's time, not training steps; the log is evaluation only (goodput not applicable).
A run that trains and then evaluates keeps its reading."""

from __future__ import annotations

from pathlib import Path

from scope.analyzers.goodput import goodput

from scope.render.goodput import render_goodput
from tests.helpers import write_log


def _hf(at: str, msg: str, line: int = 3835) -> str:
    return f"[INFO|trainer.py:{line}] 2025-01-21 {at} >> {msg}"


def _eval_pass(at: str, examples: int, batch: int, secs: int, banner: str = "Evaluation") -> list[str]:
    total = -(-examples // batch)
    mid = total // 3
    return [
        _hf(at, f"***** Running {banner} *****"),
        _hf(at, f"  Num examples = {examples}", 3837),
        _hf(at, f"  Batch size = {batch}", 3840),
        f" 33%|███▎      | {mid}/{total} [00:{secs // 3:02d}<00:{secs - secs // 3:02d},  1.87it/s]",
        f"100%|██████████| {total}/{total} [00:{secs:02d}<00:00,  1.91it/s]",
        "***** eval metrics *****" if banner == "Evaluation" else "***** predict metrics *****",
        "  eval_loss               =     0.5184",
        f"  eval_samples            =       {examples}",
    ]


def test_an_evaluation_only_run_is_not_read_as_steps(tmp_path: Path) -> None:
    lines = [
        "01/21/2025 14:02:40 - WARNING - __main__ - Process rank: 0, device: cuda:0, n_gpu: 1",
        *_eval_pass("14:03:05,118", 872, 32, 48),
        *_eval_pass("14:05:12,640", 1043, 16, 37, banner="Prediction"),
    ]
    r = goodput(write_log(tmp_path, lines))
    assert r.acc.steps_completed is None, r.acc.steps_completed
    assert r.goodput_pct is None and r.acc.buckets.get("productive", 0.0) == 0.0, r.goodput_pct
    assert r.evaluation_only.startswith("1 launch, evaluation only"), r.evaluation_only
    assert "no training in this log" in render_goodput(r.result())


def test_training_then_evaluation_keeps_its_steps(tmp_path: Path) -> None:
    """The lookalike: the same evaluation after `***** Running training *****` and its bar: steps stay."""
    lines = [
        _hf("09:10:00,001", "***** Running training *****", 2128),
        _hf("09:10:00,002", "  Num examples = 6,400", 2129),
        _hf("09:10:00,003", "  Total optimization steps = 400", 2134),
        "  0%|          | 0/400 [00:00<?, ?it/s]",
        " 25%|██▌       | 100/400 [01:10<03:30,  1.42it/s]",
        " 50%|█████     | 200/400 [02:20<02:20,  1.42it/s]",
        " 75%|███████▌  | 300/400 [03:30<01:10,  1.42it/s]",
        "100%|██████████| 400/400 [04:40<00:00,  1.42it/s]",
        "{'train_runtime': 280.4, 'train_samples_per_second': 22.8, 'train_steps_per_second': 1.427, 'epoch': 1.0}",
        *_eval_pass("09:14:41,500", 872, 32, 48),
    ]
    r = goodput(write_log(tmp_path, lines))
    assert r.evaluation_only == ""
    assert r.acc.steps_completed == 400, r.acc.steps_completed
    assert r.goodput_pct is not None and r.goodput_pct > 50, r.goodput_pct
