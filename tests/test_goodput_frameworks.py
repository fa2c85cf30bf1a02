# ruff: noqa: E501  (example lines are kept whole, as the programs print them)
"""Goodput on fragments of frameworks' console logs, each line written in the shape the program prints it
(the facts and figures of real posted logs: the URL of each is in tests/data/goodput/README.md): HF
Trainer's logs dict and closing summary, nanoGPT's iteration / evaluation / save lines, a log cut mid-run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scope.analyzers.goodput import goodput

from scope.cli import main
from tests.helpers import inventory, write_log


def _run_dir(tmp_path: Path, lines: list[str], name: str = "train.log") -> Path:
    return write_log(tmp_path / "run", lines, name).parent


def _hf_qlora_example() -> list[str]:
    """ipex-llm's QLoRA example output: a logs dict every 20 of 200 steps with the epoch but no step, then
    train()'s summary, the bar's last line and TrainOutput (train_runtime 116.1914 s, 1.721 steps/s)."""
    lines = [
        f"{{'loss': {3.19 - 0.06 * i:.4f}, 'learning_rate': {2e-05 * (1 - i / 10):.3g}, 'epoch': {0.015 * (i + 1):.2f}}}"
        for i in range(10)
    ]
    return [
        *lines,
        "{'train_runtime': 116.1914, 'train_samples_per_second': 6.885, 'train_steps_per_second': 1.721, "
        "'train_loss': 2.8197, 'epoch': 0.15}",
        "100%|" + "█" * 40 + "| 200/200 [01:56<00:00,  1.72it/s]",
        "TrainOutput(global_step=200, training_loss=2.8197, metrics={'train_runtime': 116.1914, "
        "'train_samples_per_second': 6.885, 'train_steps_per_second': 1.721, 'train_loss': 2.8197, 'epoch': 0.15})",
    ]


def test_hf_logs_dict_without_steps_is_numbered_from_the_epoch_and_timed_by_train_runtime(tmp_path: Path) -> None:
    r = goodput(inventory(_run_dir(tmp_path, _hf_qlora_example())))
    assert r.acc.steps_completed == 200 and len(r.acc.attempts) == 1
    assert r.acc.attempts[0].ended == "completed"
    assert r.wall_s == pytest.approx(116.19, rel=0.01)  # the loop's own runtime (the bar says 01:56)
    assert r.acc.ideal_step_s == pytest.approx(116.1914 / 200, rel=0.01)
    assert any("train_runtime" in w and "mean" in w for w in r.warnings)  # a mean, and the report says so
    steps = [m.step for a in r.acc.attempts for m in a.marks if m.row == "hf_log_line"]
    assert steps == list(range(20, 201, 20))  # the epoch is rounded (0.02 for step 20 of 1333/epoch)


def test_hf_logs_dict_with_a_step_key_and_no_bar(tmp_path: Path) -> None:
    lines = [
        f"{{'loss': 0.38, 'grad_norm': 0.15, 'learning_rate': 1e-07, 'epoch': {s / 10000:.2f}, 'step': {s}}}"
        for s in range(100, 10001, 100)
    ]
    lines.append(
        "{'train_runtime': 8754.1218, 'train_samples_per_second': 36.554, 'train_steps_per_second': 1.142, "
        "'train_loss': 2.1597, 'epoch': 1.0, 'step': 10000}"
    )
    r = goodput(inventory(_run_dir(tmp_path, lines)))
    assert r.acc.steps_completed == 10000
    assert r.wall_s == pytest.approx(8754.1, rel=0.01)
    assert r.wall_s <= 8754.2  # never more than the runtime the log states


def test_hf_bar_gives_steps_and_clock_and_the_dicts_beside_it_are_not_steps(tmp_path: Path) -> None:
    """A bar line every 10 of 1000 steps with the logs dict after each (train_runtime 231 s)."""
    lines = ["  0%|          | 0/1000 [00:00<?, ?it/s]"]
    for s in range(10, 1001, 10):
        el = round(s * 0.2313)
        lines.append(f"{s // 10:3d}%|▏         | {s}/1000 [{el // 60:02d}:{el % 60:02d}<03:34,  4.32it/s]")
        lines.append(f"{{'loss': 0.77, 'grad_norm': 5.42, 'learning_rate': 0.000981, 'epoch': {s / 10:.1f}}}")
    lines.append(
        "{'train_runtime': 231.3038, 'train_samples_per_second': 8.647, 'train_steps_per_second': 4.323, "
        "'train_loss': 0.7349, 'epoch': 100.0}"
    )
    r = goodput(inventory(_run_dir(tmp_path, lines)))
    assert r.acc.steps_completed == 1000
    assert r.wall_s == pytest.approx(231, abs=2)
    assert not [m for a in r.acc.attempts for m in a.marks if m.row == "hf_log_line"]


def test_hf_logs_dict_alone_is_read_not_refused(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    lines = [f"{{'loss': {2.5 - 0.1 * i:.2f}, 'learning_rate': 2e-05, 'epoch': {0.1 * (i + 1):.1f}}}" for i in range(5)]
    run = _run_dir(tmp_path, lines)
    rc = main(["goodput", str(run)])
    out, err = capsys.readouterr()
    assert rc != 3, err
    assert "logging intervals" in out + err  # what it counted, since the log prints no step
    assert "1970" not in out


def _nanogpt_eval_and_save() -> list[str]:
    """nanoGPT with a timestamp on each line (karpathy/nanoGPT#215): iterations every 10 at ~1.1 s each;
    the evaluation at step 3000 ends 36 s after iter 2990, the save line follows untimed, and iter 3000's
    own time (35.4 s) holds the evaluation, the save and the step."""
    lines = []
    for i, it in enumerate(range(2920, 3000, 10)):
        t = 39 + 11 * i
        lines.append(
            f"2023-03-22 09:{30 + t // 60:02d}:{t % 60:02d} iter {it}: loss 3.9883, time 1099.34ms, mfu 15.34%"
        )
    lines += [
        "2023-03-22 09:32:32 step 3000: train loss 4.0390, val loss 4.0427",
        "saving checkpoint to out",
        "2023-03-22 09:32:41 iter 3000: loss 4.2490, time 35392.33ms, mfu 13.85%",
    ]
    for i, it in enumerate(range(3010, 3080, 10)):
        t = 52 + 10 * i
        lines.append(f"2023-03-22 09:{32 + t // 60:02d}:{t % 60:02d} iter {it}: loss nan, time 1017.59ms, mfu 14.58%")
    return lines


def test_nanogpt_evaluation_and_save_are_split_out_of_the_long_iteration(tmp_path: Path) -> None:
    r = goodput(inventory(_run_dir(tmp_path, _nanogpt_eval_and_save())))
    b = r.acc.buckets
    assert r.acc.steps_completed == 150 and len(r.acc.attempts) == 1
    # by hand: 09:31:56 -> 09:32:32 is 9 steps (~10 s) then the evaluation (~26 s); 09:32:32 -> 09:32:41
    # is the save (~8 s) and one step
    assert b["evaluation"] == pytest.approx(26, abs=3)
    assert b["checkpoint_save"] == pytest.approx(8, abs=2)
    assert r.wall_s == pytest.approx(192, abs=1)


def test_a_log_cut_mid_run_counts_only_the_steps_it_shows(tmp_path: Path) -> None:
    """A timestamped line before the first step line (a GC note) is not the job's start: steps 500 -> 550
    are 50 steps, never 550 (which at 1.4 s a step would be ten times the log's 72 s)."""
    lines = [
        "[rank0]:[titan] 2025-01-01 10:00:00,000 - root - INFO - [GC] Performing periodical GC collection. 0.05 seconds."
    ]
    for i, s in enumerate(range(500, 560, 10)):
        lines.append(
            f"[rank0]:[titan] 2025-01-01 10:00:{2 + 14 * i:02d},000 - root - INFO - step: {s}  loss:  6.1  "
            "memory: 49.66GiB(52.28%)  tps: 5,856  tflops: 339.16  mfu: 34.29%"
        )
    r = goodput(inventory(_run_dir(tmp_path, lines)))
    assert r.acc.steps_completed == 50
    assert r.acc.steps_completed * (r.acc.ideal_step_s or 0) <= r.wall_s * 1.05


@pytest.mark.parametrize("command", ["goodput", "analyze"])
def test_a_folder_with_only_an_hf_log_gets_an_answer(tmp_path: Path, command: str, capsys) -> None:  # type: ignore[no-untyped-def]
    run = _run_dir(tmp_path, _hf_qlora_example())
    out_json = tmp_path / "out.json"
    rc = main([command, str(run), "--json", str(out_json)])
    assert rc in (0, 4), capsys.readouterr()
    text = json.dumps(json.loads(out_json.read_text()))
    assert "200" in text and "1970" not in text
    capsys.readouterr()
    assert main([command, str(run)]) in (0, 4)
    out = capsys.readouterr().out
    assert "Nothing analyzed" not in out and "1970" not in out  # the log was read: its goodput is the answer


def test_nanogpt_without_timestamps_splits_out_iter_0_and_the_long_iteration(tmp_path: Path) -> None:
    """No clock at all (karpathy/nanoGPT#178's shape: iter 0 took 9.37 s, then ~0.894 s a step, a line
    every 10) with an evaluation and a save before iter 250, whose own time (35.4 s) holds them. By hand:
    9.37 + 289 x 0.894 + 34.5 = 302 s; iter 0 beyond one step is warm-up; 10 steps before iter 250 ran
    at the pace of the lines around them, not at 35 s each."""
    lines = ["iter 0: loss 4.2648, time 9371.81ms, mfu -100.00%"]
    lines += [f"iter {i}: loss 3.2202, time 893.76ms, mfu 16.68%" for i in range(10, 250, 10)]
    lines += ["step 250: train loss 1.5440, val loss 1.7220", "saving checkpoint to out-shakespeare-char"]
    lines += ["iter 250: loss 1.5, time 35392.33ms, mfu 15.00%"]
    lines += [f"iter {i}: loss 1.5, time 894.00ms, mfu 16.60%" for i in range(260, 300, 10)]
    r = goodput(inventory(_run_dir(tmp_path, lines)))
    b = r.acc.buckets
    assert r.wall_s == pytest.approx(302, rel=0.05)
    assert b["warmup"] == pytest.approx(9.37 - 0.89, abs=1.0)
    # the evaluation and the save have no time of their own here: together they are the 34.5 s
    assert b["checkpoint_save"] + b.get("evaluation", 0.0) == pytest.approx(34.5, abs=1.5)
    assert r.acc.steps_completed == 290


def test_rich_logging_with_the_step_on_a_continuation_line_is_timed(tmp_path: Path) -> None:
    """colossalai's rich handler (hpcaitech/FastFold#138): `[01/15/23 18:11:55] INFO ... main`, then the
    step on a line with no time of its own (`Training, Epoch: 0, Step: 1, Global_Step: 1, Loss: ...`),
    12 s a step. Six steps from 18:11:55 to 18:12:55: 60 s, never a 1970 date."""
    lines = []
    for s in range(1, 7):
        lines.append(
            f"[01/15/23 18:{11 + (55 + 12 * (s - 1)) // 60:02d}:{(55 + 12 * (s - 1)) % 60:02d}] INFO     colossalai - colossalai - INFO: train.py:230 main"
        )
        lines.append(
            f"                    INFO     colossalai - colossalai - INFO: Training, Epoch: 0, Step: {s}, Global_Step: {s}, Loss: distogram=4.159 fape=1.682"
        )
        lines.append("                             lddt=3.912 masked_msa=3.135 unscaled_loss=10.176 loss=162.822")
    r = goodput(inventory(_run_dir(tmp_path, lines)))
    assert r.acc.steps_completed == 6
    assert r.wall_s == pytest.approx(60, abs=1)
    assert r.acc.ideal_step_s == pytest.approx(12, rel=0.05)
    assert r.acc.attempts[0].start is not None and r.acc.attempts[0].start > 1.6e9  # 2023, not 1970


def test_a_loops_own_bar_from_zero_is_read_with_its_rate(tmp_path: Path) -> None:
    """`Training:  45%|...| 90/200 [01:02<01:15,  1.45it/s, loss=2.31]` every 10 steps, no timestamps: 200
    steps at 1.45 it/s is 138 s from the bar's 0 (its first line, step 10, already 7 s in)."""
    lines = []
    for s in range(10, 201, 10):
        el = round(s / 1.45)
        lines.append(
            f"Training:  {s // 2:2d}%|████▌     | {s}/200 [{el // 60:02d}:{el % 60:02d}<01:15,  1.45it/s, loss=2.31]"
        )
    r = goodput(inventory(_run_dir(tmp_path, lines)))
    assert r.acc.steps_completed == 200
    assert r.wall_s == pytest.approx(138, abs=1)
    assert r.acc.ideal_step_s == pytest.approx(1 / 1.45, rel=0.05)


def test_a_bar_resumed_at_a_later_step_is_not_read_from_zero(tmp_path: Path) -> None:
    """A bar whose first line is at step 500 one second in (it jumped there on a resume) did not run
    those 500 steps: the log shows 100 steps, not 600."""
    lines = [
        f"Training:  {s // 10:2d}%|███       | {s}/1000 [{(s - 499) // 60:02d}:{(s - 499) % 60:02d}<05:00,  1.00it/s]"
        for s in range(500, 601, 10)
    ]
    r = goodput(inventory(_run_dir(tmp_path, lines)))
    assert r.acc.steps_completed == 100
    assert r.wall_s <= 101


def test_hf_example_script_log_keeps_its_wall_clock_and_numbers_steps_from_the_saves(tmp_path: Path) -> None:
    """transformers' example-script logging (`06/16/2023 13:12:23 - INFO - ...`) around untimed logs dicts
    without steps: the steps come from the save at `checkpoint-500` after the epoch-0.5 dict, the times
    from the wall clock alone (the summary's runtime is never laid from a relative 0 beside it)."""
    lines = [
        "06/16/2023 13:12:23 - INFO - transformers.trainer - ***** Running training *****",
        *[f"{{'loss': {2.5 - 0.1 * i:.2f}, 'learning_rate': 2e-05, 'epoch': {0.1 * i:.1f}}}" for i in range(1, 6)],
        "06/16/2023 13:20:23 - INFO - transformers.trainer - Saving model checkpoint to out/checkpoint-500",
        "06/16/2023 13:20:35 - INFO - transformers.configuration_utils - Configuration saved in out/checkpoint-500/config.json",
        *[f"{{'loss': {2.5 - 0.1 * i:.2f}, 'learning_rate': 2e-05, 'epoch': {0.1 * i:.1f}}}" for i in range(6, 11)],
        "06/16/2023 13:28:40 - INFO - transformers.trainer - Saving model checkpoint to out/checkpoint-1000",
        "06/16/2023 13:28:52 - INFO - transformers.configuration_utils - Configuration saved in out/checkpoint-1000/config.json",
        "{'train_runtime': 989.1, 'train_samples_per_second': 8.09, 'train_steps_per_second': 1.011, 'train_loss': 2.0, 'epoch': 1.0}",
    ]
    r = goodput(inventory(_run_dir(tmp_path, lines)))
    assert r.acc.steps_completed == 1000
    assert r.wall_s == pytest.approx(989, abs=1)  # 13:12:23 -> 13:28:52, as train_runtime says
    assert r.acc.attempts[0].start == pytest.approx(1686921143)  # 2023-06-16 13:12:23 UTC, never 1970
    assert len([c for c in r.saves()]) == 2


def test_lightning_first_step_at_three_times_the_pace_is_warm_up(tmp_path: Path) -> None:
    """Lightning 1.0's bar (Lightning-AI/pytorch-lightning#4225): each step drawn twice (the loss updated),
    step 1 at [00:08] (8.77s/it), then a step every ~3 s to step 6 at [00:23]. By hand: 23 s, 6 steps,
    the first step's ~5 s beyond the 3 s pace is warm-up, not productive."""
    lines = ["Training: 0it [00:00, ?it/s]", "Epoch 0:   0%|          | 0/18 [00:00<?, ?it/s] "]
    lines += ["Epoch 0:   6%|▌         | 1/18 [00:08<02:29,  8.77s/it]"]
    lines += ["Epoch 0:   6%|▌         | 1/18 [00:08<02:29,  8.77s/it, loss=10.473, v_num=193315]"]
    for s, el, rate in ((2, 11, 5.82), (3, 14, 4.87), (4, 17, 4.47), (5, 20, 4.14), (6, 23, 3.93)):
        for loss in ("10.224", "10.047"):
            lines.append(
                f"Epoch 0:  {s * 100 // 18:2d}%|██▏       | {s}/18 [00:{el:02d}<01:02,  {rate}s/it, loss={loss}, v_num=193315]"
            )
    r = goodput(inventory(_run_dir(tmp_path, lines)))
    assert r.acc.steps_completed == 6 and r.wall_s == pytest.approx(23, abs=0.5)
    assert r.acc.buckets["warmup"] == pytest.approx(5, abs=1)
    assert r.acc.buckets["productive"] == pytest.approx(18, abs=1)
