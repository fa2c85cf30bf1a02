"""Review of goodput's steps-unseen accounting (commit 707e851): the bound `at most N%` divides by the wall time
less the time between jobs, as the goodput does, and the text says so; a bound is given only where the time
inside training is placed (a training-start line), never `at most 0%` for a loop whose end line says steps ran;
the dashboard shows the bound; a template run that never trains (its eval.py: `Starting testing!` only, then
its exit line) is no training job that died before its first step (no 0% goodput)."""

from __future__ import annotations

from pathlib import Path

import pytest
from scope.analyzers.goodput import found_anything, goodput
from scope.app.pages.goodput import _summary_facts

from scope.cli import main
from scope.render.goodput import render_goodput, summary_line
from tests.helpers import assert_sane_goodput, write_log


def _hy(day_t: str, logger: str, msg: str, level: str = "INFO") -> str:
    """A line of Hydra's job log as the template writes it before v2.0 (no RankedLogger rank prefix)."""
    return f"[{day_t}][{logger}][{level}] - {msg}"


def _train_run(day: str, t0: str, t_fit: str, t_out: str) -> list[str]:
    """One launch of the template's train.py: extras, instantiation, `Starting training!`, its exit line."""
    at = f"{day} {t0}"
    return [
        _hy(at, "src.utils.utils", "Enforcing tags! <cfg.extras.enforce_tags=True>"),
        _hy(at, "src.train", "Instantiating datamodule <src.data.text_datamodule.WikiTextDataModule>"),
        _hy(at, "src.train", "Instantiating model <src.models.gpt_module.GPTLitModule>"),
        _hy(at, "src.train", "Instantiating trainer <pytorch_lightning.Trainer>"),
        _hy(f"{day} {t_fit}", "src.train", "Starting training!"),
        _hy(f"{day} {t_out}", "src.utils.utils", "Output dir: /mnt/exp/gpt-small/runs/" + day.replace(" ", "_")),
    ]


def _two_runs_a_day_apart() -> list[str]:
    """A 40 min run that exits cleanly, then 14 h later a fresh 25 min run: the 14 h are between jobs."""
    return _train_run("2024-11-20", "21:00:00,000", "21:00:30,000", "21:40:30,000") + _train_run(
        "2024-11-21", "11:40:30,000", "11:41:00,000", "12:06:00,000"
    )


def test_the_bound_divides_by_the_wall_less_between_jobs_and_says_so(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path, _two_runs_a_day_apart()))
    assert_sane_goodput(r)
    b = r.acc.buckets
    assert b["between_jobs"] == pytest.approx(14 * 3600.0)
    assert b["training_unseen"] == pytest.approx(2400.0 + 1500.0)
    held = r.wall_s - b["between_jobs"]
    assert r.goodput_pct_at_most == pytest.approx(100 * 3900.0 / held)  # (as goodput_pct: between_jobs left out)
    assert r.goodput_pct_at_most is not None and r.goodput_pct_at_most <= 100.0
    result = r.result()
    line = next(x for x in render_goodput(result).splitlines() if "goodput unknown" in x)
    assert "between jobs" in line and "14.00 h" in line, line
    assert "between jobs" in summary_line(result)  # (`scope analyze`: never `at most N% of` the whole wall)
    finding = next(f for f in r.findings if f.kind == "steps_not_logged")
    assert "between jobs" in finding.summary, finding.summary


def test_a_known_goodput_beside_between_jobs_says_its_denominator_in_the_summary_line(tmp_path: Path) -> None:
    """`scope analyze`'s line: `Goodput N% of W` read as a share of W is wrong where between_jobs left W."""
    bar = "Epoch 0:  {p}%|###       | {n}/400 [{m:02d}:{s:02d}<05:00,  1.33it/s, v_num=1, train/loss=3.1]"
    steps = [bar.format(p=n // 4, n=n, m=int(n * 0.75) // 60, s=int(n * 0.75) % 60) for n in range(40, 401, 40)]
    lines = _train_run("2024-11-20", "21:00:00,000", "21:00:30,000", "21:05:30,000")
    lines = lines[:-1] + steps + lines[-1:]
    lines += _train_run("2024-11-21", "09:10:00,000", "09:10:20,000", "09:15:20,000")
    lines = lines[:-1] + steps + lines[-1:]
    r = goodput(write_log(tmp_path, lines))
    assert r.goodput_pct is not None and r.acc.buckets["between_jobs"] > 8 * 3600, r.acc.buckets
    assert "between jobs" in summary_line(r.result())


def test_a_loop_end_line_without_its_start_line_gives_no_bound(tmp_path: Path) -> None:
    """HF Trainer with logging off, the log's head cut (no `***** Running training *****`): its `train_runtime`
    summary says steps ran somewhere before it; no line places them, so no `at most 0%`."""
    hf = "11/20/2024 {t} - INFO - transformers.trainer - "
    lines = [
        "11/20/2024 06:12:40 - INFO - datasets.arrow_dataset - Loading cached processed dataset at /data/cache",
        hf.format(t="08:55:02") + "Training completed. Do not forget to share your model on huggingface.co/models =)",
        "{'train_runtime': 9741.2, 'train_samples_per_second': 41.07, 'train_steps_per_second': 0.642, "
        "'train_loss': 1.9031, 'epoch': 3.0}",
        hf.format(t="08:55:09") + "Saving model checkpoint to out/final",
    ]
    r = goodput(write_log(tmp_path, lines))
    assert r.goodput_pct is None and r.steps_unseen
    assert r.productive_at_most_s is None and r.goodput_pct_at_most is None
    text = render_goodput(r.result())
    assert "at most 0.0%" not in text and "at most 0.00 s" not in text, text
    assert "at most 0.0 s" not in " ".join(r.result().cannot)


def test_the_dashboard_shows_the_bound_where_goodput_is_unknown(tmp_path: Path) -> None:
    facts = dict(_summary_facts(goodput(write_log(tmp_path, _two_runs_a_day_apart())).result()))
    shown = str(facts.get("goodput"))
    assert "unknown" in shown and "at most" in shown and "between jobs" in shown, facts


def test_an_evaluation_only_run_of_the_template_is_no_training_job(tmp_path: Path) -> None:
    """The template's eval.py (or train.py with train=False): `Starting testing!`, no training start, then its
    exit line with no failure: no training ran or was asked for; never `goodput 0.0%`. A train.py launch that
    crashed before `Starting training!` still completed 0 steps (kept)."""
    at = "2024-11-20 14:02:{s}"
    lines = [
        _hy(at.format(s="00,000"), "src.utils.utils", "Printing config tree with Rich! <cfg.extras.print_config=True>"),
        _hy(at.format(s="00,400"), "__main__", "Instantiating datamodule <src.data.imagenet.ImageNetDataModule>"),
        _hy(at.format(s="03,000"), "__main__", "Instantiating model <src.models.resnet.ResNetLitModule>"),
        _hy(at.format(s="03,100"), "__main__", "Instantiating loggers..."),
        _hy(at.format(s="04,000"), "__main__", "Instantiating trainer <lightning.pytorch.trainer.Trainer>"),
        _hy(at.format(s="05,000"), "__main__", "Starting testing!"),
        _hy("2024-11-20 14:31:05,000", "src.utils.utils", "Output dir: /mnt/exp/resnet50/eval/2024-11-20_14-02-00"),
    ]
    log = write_log(tmp_path / "eval", lines)
    r = goodput(log)
    assert r.acc.steps_completed is None and not found_anything(r), (r.goodput_pct, r.acc.steps_completed)
    assert main(["goodput", str(log), "--no-diagnose"]) == 3  # refused: no training progress found
    crashed = [
        *lines[:3],
        _hy(at.format(s="09,000"), "src.utils.utils", "", level="ERROR"),
        "Traceback (most recent call last):",
        "RuntimeError: Error(s) in loading state_dict for ResNet: size mismatch for fc.weight",
        _hy(at.format(s="09,100"), "src.utils.utils", "Output dir: /mnt/exp/resnet50/eval/2024-11-20_14-02-00"),
    ]
    kept = goodput(write_log(tmp_path / "crash", crashed))
    assert found_anything(kept) and kept.acc.steps_completed == 0 and kept.goodput_pct == 0.0
