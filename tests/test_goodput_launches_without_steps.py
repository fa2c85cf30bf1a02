"""A log with launches and times but no step line (issue 40: "a log that cannot be fully read is still accounted
for what it shows"): the lightning-hydra-template's job log, whose Lightning step metrics go to TensorBoard and
whose console bar never reaches the file, and HF Trainer with logging_strategy=no. Each launch is an attempt
(how it ended: a crash with its exception's line, Ctrl-C, an exit line with no failure = unknown), its start-up is
initialization, the time inside training is `training_unseen` (productivity unknown: a bound, never 0% and never
a made-up figure), the gaps are failure_to_restart / queued / between_jobs, and a finding says how to get step
lines. A log with neither launches nor steps is still refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scope.analyzers.goodput import found_anything, goodput

from scope.cli import main
from scope.goodput_result import GoodputResult
from scope.render.goodput import render_goodput
from tests.helpers import assert_sane_goodput, write_log


def _hy(t: str, logger: str, msg: str, level: str = "INFO", rank: int | None = None) -> str:
    """A line of Hydra's job log as the template writes it (RankedLogger's `[rank: N]` from v2.0)."""
    prefix = f"[rank: {rank}] " if rank is not None else ""
    return f"[2025-03-14 {t}][{logger}][{level}] - {prefix}{msg}"


def _launch(day_t: list[str], rank: int | None, extras: tuple[str, ...]) -> list[str]:
    """A launch's start-up: the extras lines, then train()'s instantiation lines, then `Starting training!`
    at the last of DAY_T (one time per line)."""
    lines = [_hy(day_t[0], "src.utils.utils", e, rank=rank) for e in extras]
    msgs = [
        ("__main__", "Instantiating datamodule <src.data.cifar_datamodule.CIFAR100DataModule>"),
        ("__main__", "Instantiating model <src.models.vit_module.ViTLitModule>"),
        ("__main__", "Instantiating callbacks..."),
        ("src.utils.instantiators", "Instantiating callback <lightning.pytorch.callbacks.ModelCheckpoint>"),
        ("__main__", "Instantiating loggers..."),
        ("__main__", "Instantiating trainer <lightning.pytorch.trainer.Trainer>"),
        ("__main__", "Logging hyperparameters!"),
        ("__main__", "Starting training!"),
    ]
    times = day_t[1:]
    return lines + [_hy(times[min(i, len(times) - 1)], lg, m, rank=rank) for i, (lg, m) in enumerate(msgs)]


_PRINT = "Printing config tree with Rich! <cfg.extras.print_config=True>"
_NOWARN = "Disabling python warnings! <cfg.extras.ignore_warnings=True>"


def _out(t: str, rank: int | None = None) -> str:
    return _hy(t, "src.utils.utils", "Output dir: /scratch/runs/vit-c100/2025-03-14_10-00-00", rank=rank)


def _relaunches() -> list[str]:
    """A: crashes in fit (CUDA OOM) 30 s in; B: 25 min in fit, ends with no failure line; C, 10 h later:
    Ctrl-C in training_step, then a teardown error while it unwinds."""
    a = _launch(
        ["10:00:00,000", "10:00:01,000", "10:00:01,200"] + ["10:00:09,700"] * 5 + ["10:00:10,000"],
        None,
        (_NOWARN, _PRINT),
    )
    a += [
        _hy("10:00:40,000", "src.utils.utils", "", level="ERROR"),
        "Traceback (most recent call last):",
        '  File "/home/u/vit/src/utils/utils.py", line 68, in wrap',
        "    metric_dict, object_dict = task_func(cfg=cfg)",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB. GPU 0 has a total capacity of "
        "79.10 GiB of which 1.2 GiB is free.",
        _out("10:00:40,300"),
    ]
    b = _launch(
        ["10:05:00,000", "10:05:01,000", "10:05:02,000"] + ["10:05:07,900"] * 5 + ["10:05:08,000"], 0, (_PRINT,)
    )
    b += [_out("10:30:08,000", 0)]
    c = _launch(
        ["20:40:08,000", "20:40:09,000", "20:40:10,000"] + ["20:40:14,900"] * 5 + ["20:40:15,000"], 0, (_PRINT,)
    )
    c += [
        _hy("20:50:15,000", "src.utils.utils", "", level="ERROR", rank=0),
        "Traceback (most recent call last):",
        '  File "/home/u/vit/src/models/vit_module.py", line 91, in training_step',
        "    loss = self.criterion(logits, y)",
        "KeyboardInterrupt",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        "RuntimeError: NCCL communicator was aborted on rank 0.",
        _out("20:50:15,400", 0),
    ]
    return a + b + c


def test_template_relaunches_without_step_lines_are_accounted_with_a_bound(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path, _relaunches()))
    assert found_anything(r)
    acc = r.acc
    assert [a.ended for a in acc.attempts] == ["failed", "unknown", "interrupted"], [
        (a.ended, a.end_evidence) for a in acc.attempts
    ]
    assert "OutOfMemoryError" in acc.attempts[0].end_evidence or "Traceback" in acc.attempts[0].end_evidence
    assert acc.attempts[1].exited and "Output dir" in acc.attempts[1].end_evidence
    assert "KeyboardInterrupt" in acc.attempts[2].end_evidence
    # steps: unknown, not 0; goodput: unknown, never 0%, with its bound
    assert acc.steps_completed is None and r.goodput_pct is None
    b = acc.buckets
    assert b["productive"] == 0.0
    assert b["initialization"] == pytest.approx(10.0 + 8.0 + 7.0, abs=0.01)
    assert 30.0 + 1500.0 + 600.0 <= b["training_unseen"] <= 30.3 + 1500.0 + 600.4 + 1e-6, b
    # after the crash the relaunch's wait is the failure's; 10 h after an exit line, before a launch from scratch:
    # time between two jobs (out of the goodput's denominator); never a save, never unexplained
    assert b["failure_to_restart"] == pytest.approx(259.7, abs=0.01)
    assert b["between_jobs"] == pytest.approx(10 * 3600 + 600.0, abs=0.01)
    assert b["checkpoint_save"] == 0.0 and b["unexplained"] == pytest.approx(0.0, abs=0.5)
    assert_sane_goodput(r)
    held = r.wall_s - b["between_jobs"]
    assert r.productive_at_most_s == pytest.approx(b["training_unseen"])
    assert r.goodput_pct_at_most == pytest.approx(100 * b["training_unseen"] / held)
    finding = next(f for f in r.findings if f.kind == "steps_not_logged")
    assert "Starting training!" in finding.summary and "3 attempt(s)" in finding.summary
    assert "log_every_n_steps" in finding.suggestion and "RankedLogger" in finding.suggestion
    text = render_goodput(r.result())
    assert "goodput unknown" in text and "at most" in text and "goodput 0.0%" not in text
    assert "Steps: unknown completed" in text


def test_a_queue_between_a_clean_exit_and_the_next_launch_is_queued(tmp_path: Path) -> None:
    """An exit line with no failure line, then a launch 20 min later: the process was over, the wait is queued
    (not unexplained, not a restart's cost); an exit then a launch on the same rank is two attempts."""
    first = _launch(
        ["08:00:00,000", "08:00:04,000", "08:00:05,000"] + ["08:00:11,000"] * 5 + ["08:00:12,000"], 1, (_PRINT,)
    )
    first += [_out("08:42:12,000", 1)]
    second = _launch(
        ["09:02:12,000", "09:02:13,000", "09:02:14,000"] + ["09:02:20,000"] * 5 + ["09:02:21,000"], 1, (_PRINT,)
    )
    second += [_out("09:12:21,000", 1)]
    r = goodput(write_log(tmp_path, first + second))
    assert [(a.ended, a.exited) for a in r.acc.attempts] == [("unknown", True), ("unknown", True)]
    b = r.acc.buckets
    assert b["queued"] == pytest.approx(1200.0) and b["failure_to_restart"] == 0.0 and b["unexplained"] == 0.0
    assert b["training_unseen"] == pytest.approx(2520.0 + 600.0)
    assert r.goodput_pct is None and r.goodput_pct_at_most == pytest.approx(100 * 3120.0 / r.wall_s)


def test_a_launch_that_never_reached_training_completed_zero_steps(tmp_path: Path) -> None:
    """No extras config (its warning is the launch's first line), a crash while the datamodule loads, before
    `Starting training!`: the log states 0 steps (goodput 0, all initialization), no bound, no finding."""
    lines = [
        _hy("07:00:00,000", "src.utils.utils", "Extras config not found! <cfg.extras=null>", level="WARNING"),
        _hy("07:00:00,100", "__main__", "Instantiating datamodule <src.data.protein_datamodule.PDBDataModule>"),
        _hy("07:00:21,600", "src.utils.utils", "", level="ERROR"),
        "Traceback (most recent call last):",
        "FileNotFoundError: [Errno 2] No such file or directory: '/data/pdb/train_clusters.csv'",
        _hy("07:00:21,700", "src.utils.utils", "Output dir: logs/train/runs/2025-03-14_07-00-00"),
    ]
    r = goodput(write_log(tmp_path, lines))
    assert found_anything(r) and r.acc.steps_completed == 0 and r.goodput_pct == 0.0
    assert [a.ended for a in r.acc.attempts] == ["failed"]
    assert r.acc.buckets["training_unseen"] == 0.0 and r.productive_at_most_s is None
    assert not [f for f in r.findings if f.kind == "steps_not_logged"]
    assert r.acc.buckets["initialization"] == pytest.approx(21.6, abs=0.11)


def test_a_log_cut_inside_training_keeps_its_time_in_training(tmp_path: Path) -> None:
    """No exit line: the log stops 20 min after `Starting training!` (a callback's line the last): the attempt
    is running, its time after the start line training_unseen, not unexplained."""
    lines = _launch(
        ["12:00:00,000", "12:00:02,000", "12:00:03,000"] + ["12:00:06,000"] * 5 + ["12:00:07,000"], 0, (_PRINT,)
    )
    lines += [_hy("12:20:07,000", "src.callbacks.ema", "EMA weights swapped in for validation", rank=0)]
    r = goodput(write_log(tmp_path, lines))
    assert found_anything(r) and [a.ended for a in r.acc.attempts] == ["running"]
    assert r.acc.buckets["training_unseen"] == pytest.approx(1200.0) and r.acc.buckets["unexplained"] == 0.0
    assert r.goodput_pct is None and r.goodput_pct_at_most == pytest.approx(100 * 1200.0 / 1207.0)


_HF = "03/14/2025 {t} - INFO - transformers.trainer - "


def test_hf_loop_with_logging_off_keeps_its_hour_in_training_with_its_remedy(tmp_path: Path) -> None:
    """HF Trainer, logging_strategy=no: the hour from `Running training` to `Training completed.` is training whose
    steps no line shows (training_unseen, the bound), and the remedy names HF's own settings."""
    lines = [
        "03/14/2025 09:00:00 - INFO - __main__ - Training/evaluation parameters TrainingArguments("
        "output_dir=ckpt, logging_strategy=IntervalStrategy.NO)",
        _HF.format(t="09:00:12") + "***** Running training *****",
        _HF.format(t="09:00:12") + "  Total optimization steps = 1,200",
        _HF.format(t="10:10:12") + "Training completed. Do not forget to share your model on huggingface.co/models =)",
        _HF.format(t="10:10:15") + "Saving model checkpoint to ckpt",
    ]
    r = goodput(write_log(tmp_path, lines))
    assert r.acc.steps_completed is None and r.goodput_pct is None
    assert r.acc.buckets["training_unseen"] == pytest.approx(4200.0)
    assert r.productive_at_most_s == pytest.approx(4200.0)
    finding = next(f for f in r.findings if f.kind == "steps_not_logged")
    assert "logging_steps" in finding.suggestion and "Running training" in finding.summary


def test_a_launch_without_a_step_line_beside_logged_steps_stays_initialization(tmp_path: Path) -> None:
    """Where the log shows step lines, a relaunch that reached the training start and crashed before its first
    step line never reached a step (initialization, as before), and the goodput is a number; a plain
    `Output dir: ...` another program prints at its start (not Hydra's layout) ends nothing."""
    # the template with Lightning's console bar kept in the log: steps shown, then a relaunch that crashed
    bar = "Epoch 0:  {p}%|██        | {n}/500 [{m:02d}:{s:02d}<08:00,  1.00it/s, v_num=3, train/loss=2.31]"
    lines = ["Output dir: ./out/run7"]
    lines += _launch(
        ["10:00:00,000", "10:00:01,000", "10:00:02,000"] + ["10:00:09,000"] * 5 + ["10:00:10,000"], 0, (_PRINT,)
    )
    lines += [bar.format(p=n // 5, n=n, m=n // 60, s=n % 60) for n in range(50, 301, 50)]
    lines += [_hy("10:05:10,000", "src.callbacks.timer", "epoch 0 checkpoint written", rank=0)]
    lines += _launch(
        ["10:07:00,000", "10:07:01,000", "10:07:02,000"] + ["10:07:09,000"] * 5 + ["10:07:10,000"], 0, (_PRINT,)
    )
    lines += [
        _hy("10:07:40,000", "src.utils.utils", "", level="ERROR", rank=0),
        "Traceback (most recent call last):",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        _out("10:07:40,200", 0),
    ]
    r = goodput(write_log(tmp_path, lines))
    assert r.acc.steps_completed is not None and r.acc.steps_completed > 0, r.acc.steps_completed
    assert r.acc.buckets["training_unseen"] == 0.0 and r.goodput_pct is not None and r.goodput_pct > 0
    assert r.productive_at_most_s is None and not [f for f in r.findings if f.kind == "steps_not_logged"]
    assert len(r.acc.attempts) == 2 and r.acc.attempts[-1].ended == "failed"
    assert not r.acc.attempts[0].exited


def test_cli_prints_the_bound_and_json_keeps_null_plus_bound(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = write_log(tmp_path / "run", _relaunches())
    out = tmp_path / "g.json"
    assert main(["goodput", str(log), "--json", str(out), "--no-diagnose"]) == 0
    d = json.loads(out.read_text())
    assert d["goodput_pct"] is None and d["steps_completed"] is None
    assert d["goodput_pct_at_most"] == pytest.approx(
        100 * d["productive_at_most_s"] / (d["wall_s"] - d["buckets"]["between_jobs"])
    )
    assert d["buckets"]["training_unseen"] == pytest.approx(d["productive_at_most_s"])
    assert [a["ended"] for a in d["attempts"]] == ["failed", "unknown", "interrupted"]
    assert d["attempts"][1]["exited"] and d["attempts"][1]["training_unseen_s"] == pytest.approx(1500.0)
    text = capsys.readouterr().out
    assert "goodput unknown: no step line" in text and "training_unseen" in text
    # a file written before these keys renders as before (no bound: the plain unknown line)
    old = {k: v for k, v in d.items() if k not in ("goodput_pct_at_most", "productive_at_most_s")}
    assert "goodput unknown (the step lines" in render_goodput(GoodputResult.from_dict(old))
    # a log with neither launches nor steps (times and a traceback only) is still refused
    bare = write_log(
        tmp_path / "bare",
        [
            "2025-03-14 10:00:00,000 INFO loading shards",
            "Traceback (most recent call last):",
            "ValueError: bad shard",
            "2025-03-14 10:00:05,000 INFO done",
        ],
    )
    assert main(["goodput", str(bare)]) == 3
    assert "no training progress found" in capsys.readouterr().err
