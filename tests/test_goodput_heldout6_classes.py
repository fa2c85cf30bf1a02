"""Goodput classes from the released heldout6 training logs, each on a short real excerpt under
tests/data/goodput/ (sources in its README)."""

from __future__ import annotations

from pathlib import Path

from scope.analyzers.goodput import goodput

from tests.helpers import write_log

DATA = Path(__file__).parent / "data" / "goodput"


def test_lightning_bar_reset_between_epochs_is_no_relaunch() -> None:
    """A validation and a checkpoint save after every epoch, the bar reset drawn with the old epoch's name at
    0/2 before the next epoch's: one attempt, the bar's batches counted once, nothing redone; the checkpoint
    lines' `global step N` one per 2-batch epoch: 4 optimizer steps over the 9 batches."""
    r = goodput(DATA / "lightning_epoch_bar_resets.log")
    assert len(r.acc.attempts) == 1 and r.acc.steps_redone == 0, r.acc.attempts
    assert r.acc.iterations_completed == 9 and r.acc.steps_completed == 4
    assert len(r.saves()) == 4


def test_lerobot_steps_rounded_to_thousands_are_placed_by_the_interval() -> None:
    """`step:400`, `600`, `800`, then `1K` three times, `2K` five times ...: each line 200 steps on, inside
    the window its rounded value allows; the save after step 5000 read."""
    r = goodput(DATA / "lerobot_rounded_steps.log")
    assert len(r.acc.attempts) == 1 and r.acc.steps_redone == 0, r.acc.attempts
    assert (r.acc.attempts[0].first_step, r.acc.attempts[0].last_step) == (400, 5600)
    assert [c.step for c in r.saves()] == [5000]


def test_lerobot_log_opening_with_rounded_steps_is_anchored_at_the_first_change(tmp_path: Path) -> None:
    """The excerpt from its second `1K` line (step 1200): `2K` begins at 1600, the lines before it count back."""
    lines = (DATA / "lerobot_rounded_steps.log").read_text().splitlines()[4:]
    r = goodput(write_log(tmp_path, lines))
    assert (r.acc.attempts[0].first_step, r.acc.attempts[0].last_step) == (1200, 5600)


def test_colossalai_step_records_without_numbers_are_counted_and_timed_by_rich() -> None:
    """One `max GPU_mem cost` record per step, no step number; rich prints a record's time only when it
    changed, so an unstamped record takes the one before's: steps 1..8, 1-2 s apart, 3 s at the epoch's
    turn (after the 7th step)."""
    r = goodput(DATA / "colossalai_dreambooth_uncounted_steps.log")
    assert len(r.acc.attempts) == 1 and r.acc.steps_completed == 8
    assert (r.acc.attempts[0].first_step, r.acc.attempts[0].last_step) == (1, 8)
    assert r.acc.ideal_step_s == 2.0 and r.goodput_pct is not None


def test_profiler_stamps_and_pipe_separated_epoch_lines() -> None:
    """The only times are torch.profiler's `STAGE:` lines; the progress is `Epoch N | Train Loss: ..` lines with
    no number of epochs; jieba's `Loading model from cache` is no checkpoint load: epochs 0..3, one attempt,
    the wall from the profiler's stamps, no load."""
    r = goodput(DATA / "profiler_stamps_epoch_pipes.log")
    assert len(r.acc.attempts) == 1
    assert (r.acc.attempts[0].first_step, r.acc.attempts[0].last_step) == (0, 3)
    assert r.wall_s == 748.0 and not [c for c in r.checkpoints if c.op == "load"]
    assert r.acc.buckets.get("checkpoint_load", 0.0) == 0.0


def test_fairseq_hydra_json_records_are_updates() -> None:
    """fairseq-hydra-train's `[..][train_inner][INFO] - {.. "num_updates": "200" ..}` and the epoch summary's
    `"train_num_updates": "479"`: updates up to 479, about 2 s each, the validation and the save timed."""
    r = goodput(DATA / "fairseq_hydra_json_updates.log")
    assert len(r.acc.attempts) == 1 and r.acc.attempts[0].last_step == 479
    assert r.acc.ideal_step_s is not None and abs(r.acc.ideal_step_s - 2.0) < 0.05
    assert r.acc.buckets["evaluation"] > 30 and len(r.saves()) == 1


def test_detectron2_fresh_launches_are_new_runs_not_redone_work() -> None:
    """Three launches appended to one log.txt, each from iteration 0; the second stopped at 493 with its
    last event line flushed in the second after `Total training time`: three attempts, nothing redone, the
    second ending at 493, the file's `[08/30 23:00:05]` stamps read as its clock."""
    r = goodput(DATA / "detectron2_fresh_launches.log")
    attempts = r.acc.attempts
    assert len(attempts) == 3 and r.acc.steps_redone == 0, attempts
    assert [a.last_step for a in attempts] == [1999, 493, 239]
    assert r.clock == "own" and len(r.saves()) == 1


def test_ppdet_download_bar_is_no_training_and_its_epoch_lines_are() -> None:
    """PaddleDetection's weight download bar (`0/139208 [.., 21.12KB/s]`) counts bytes, not steps; its
    `Epoch: [0] [200/660] .. batch_cost: 0.7` lines are the steps, `Total sample number` ends an evaluation:
    two launches from epoch 0, steps up to 600, a 31 s evaluation after the save."""
    r = goodput(DATA / "ppdet_download_bar_and_epochs.log")
    assert [a.last_step for a in r.acc.attempts] == [0, 600]
    assert r.acc.buckets["evaluation"] == 31.0 and len(r.saves()) == 1
