"""Logs whose launches only evaluate (the lightning-hydra-template's eval.py run again and again: `Starting
testing!` then its exit line, no training-start line, no step): no training is no zero goodput; the report says
what the log holds (N launches, evaluation only, their time), goodput unknown / not applicable."""

from __future__ import annotations

from pathlib import Path

from scope.analyzers.goodput import goodput

from scope.render.goodput import render_goodput, summary_line
from tests.helpers import write_log


def _hy(at: str, logger: str, msg: str, level: str = "INFO") -> str:
    return f"[{at}][{logger}][{level}] - {msg}"


def _eval_launch(day: str, hh: str, minutes: int, trains: bool = False) -> list[str]:
    at = f"{day} {hh}:10:"
    start = "Starting training!" if trains else "Starting testing!"
    return [
        _hy(at + "01,250", "src.utils.utils", "Enforcing tags! <cfg.extras.enforce_tags=True>"),
        _hy(at + "01,900", "__main__", "Instantiating datamodule <src.data.cifar.CIFAR10DataModule>"),
        _hy(at + "04,300", "__main__", "Instantiating model <src.models.vit.ViTLitModule>"),
        _hy(at + "05,800", "__main__", "Instantiating trainer <lightning.pytorch.trainer.Trainer>"),
        _hy(at + "07,000", "__main__", start),
        _hy(f"{day} {hh}:{10 + minutes}:44,120", "src.utils.utils", f"Output dir: /scratch/vit/logs/{day}_{hh}"),
    ]


def _three_evals() -> list[str]:
    return [
        *_eval_launch("2025-03-02", "08", 12),
        *_eval_launch("2025-03-02", "11", 9),
        *_eval_launch("2025-03-03", "16", 14),
    ]


def test_several_evaluation_only_launches_give_no_goodput(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path, _three_evals()))
    assert r.goodput_pct is None and r.goodput_pct_at_most is None, r.goodput_pct
    assert r.evaluation_only.startswith("3 launches, evaluation only"), r.evaluation_only
    assert r.acc.buckets["evaluation"] > 30 * 60 and r.acc.buckets["productive"] == 0.0
    res = r.result()
    text = render_goodput(res)
    assert "goodput 0.0%" not in text and "no training in this log: 3 launches, evaluation only" in text, text
    line = summary_line(res)
    assert "0.0%" not in line.split(" of ")[0] and "not applicable" in line, line
    assert res.to_dict()["evaluation_only"] and res.to_dict()["goodput_pct"] is None
    assert any("no training in this log" in c for c in res.cannot), res.cannot


def test_a_training_launch_among_them_keeps_its_goodput(tmp_path: Path) -> None:
    """One of the launches is train.py (`Starting training!`): training was asked for; not evaluation only."""
    lines = [*_eval_launch("2025-03-02", "08", 12), *_eval_launch("2025-03-02", "11", 20, trains=True)]
    r = goodput(write_log(tmp_path, lines))
    assert r.evaluation_only == ""
    assert "no training in this log" not in render_goodput(r.result())
