# ruff: noqa: E501  (log lines are kept whole, as the programs print them)
"""Goodput classes from the heldout14 training logs (issue 40), each on a few lines written here in the real
programs' formats: a detectron2 / LiBai launch that dies in its start-up (its default_setup banner, then
nothing but the data loader's set-up before the next launch's banner) is an attempt of its own; a per-epoch
step counter stays one run across a cut that leaves out whole epochs; PaddleDetection's semi-supervised
trainer's step lines (the run's iterations before the epoch counter) are read."""

from __future__ import annotations

from pathlib import Path

from scope.analyzers.goodput import goodput
from scope.analyzers.goodput.redone import kept_ranges
from scope.analyzers.goodput.report import GoodputReport

from tests.helpers import write_log


def _setup(t: str, logger: str = "detectron2", rank: int = 0) -> list[str]:
    """default_setup's banner and the data loader's set-up lines of one launch that goes no further."""
    return [
        f"[01/01 {t}] {logger} INFO: Rank of current process: {rank}. World size: 4",
        f"[01/01 {t}] {logger} INFO: Command line arguments: Namespace(config_file='cfg.yaml', resume=False)",
        f"[01/01 {t}] d2.data.common INFO: Serialized dataset takes 10.59 MiB",
    ]


def _run(hour: int, logger: str = "detectron2") -> list[str]:
    """A launch that trains from iteration 0: its banner, the loop's start, events lines every 20 iterations
    15 s apart."""
    events = [
        f"[01/01 {hour:02d}:{1 + i // 4:02d}:{15 * (i % 4):02d}] d2.utils.events INFO:  eta: 4:51:09  iter: {19 + 20 * i}  total_loss: 3.962  time: 0.7400  data_time: 0.0100  lr: 0.0001  max_mem: 5000M"
        for i in range(8)
    ]
    if logger == "libai":  # (LiBai's own events writer: `iteration: N/M`, libai/utils/events.py)
        events = [
            f"[01/01 {hour:02d}:{1 + i // 4:02d}:{15 * (i % 4):02d}] libai.utils.events INFO:  eta: 4:51:09  iteration: {19 + 20 * i}/1000  consumed_samples: {3200 * (i + 1)}  total_loss: 3.962  time: 0.7400 s/iter  data_time: 0.0100 s/iter total_throughput: 10.81 samples/s lr: 1.00e-04  "
            for i in range(8)
        ]
    return [
        *_setup(f"{hour:02d}:00:00", logger),
        f"[01/01 {hour:02d}:00:13] {'libai.engine.trainer' if logger == 'libai' else 'd2.engine.train_loop'} INFO: Starting training from iteration 0",
        *events,
    ]


def test_d2_launches_dead_in_start_up_are_attempts(tmp_path: Path) -> None:
    """Two launches that print their banner and die in the data loader's set-up (minutes apart, no error),
    then one that trains: three attempts, the first two without a step, and the silences between them are
    down time, not the third's initialization."""
    lines = [*_setup("01:24:12"), *_setup("01:27:15"), *_run(2)]
    r = goodput(write_log(tmp_path, lines))
    assert len(r.acc.attempts) == 3, r.acc.attempts
    assert [a.first_step for a in r.acc.attempts] == [None, None, 19], r.acc.attempts
    assert r.acc.buckets.get("initialization", 0.0) < 120.0, r.acc.buckets


def test_libai_banner_again_is_the_next_launch(tmp_path: Path) -> None:
    """LiBai's copy of default_setup prints the same banner under its own logger: one that dies in start-up
    before a relaunch is an attempt too."""
    lines = [*_setup("01:24:12", "libai"), *_run(2, "libai")]
    r = goodput(write_log(tmp_path, lines))
    assert len(r.acc.attempts) == 2, r.acc.attempts
    assert r.acc.attempts[1].last_step == 159, r.acc.attempts


def test_d2_banner_printed_twice_is_one_launch(tmp_path: Path) -> None:
    """detectron2 prints every record twice where its handler is added twice (detectron2#691) or its console
    is tee'd into log.txt (the colored `[.. detectron2]: ` form beside the file's): the banner twice in a
    row, nothing between, is one launch, not a launch dead at once."""
    run = _run(1)
    for twice in (run[0], "[01/01 01:00:00 detectron2]: Rank of current process: 0. World size: 4"):
        r = goodput(write_log(tmp_path, [run[0], twice, *run[1:]]))
        assert len(r.acc.attempts) == 1, r.acc.attempts
        assert not r.acc.failures, r.acc.failures


def test_d2_banners_seconds_apart_with_nothing_between_are_a_crash_loop(tmp_path: Path) -> None:
    """A launch that dies in default_setup before its environment dump, relaunched at once: its banner again
    4 s later, and again, then a launch that trains. Not one line written twice (its copies are written at
    once): three attempts."""
    run = _run(1)
    banner = run[0]
    lines = [banner.replace("01:00:00", "00:59:52"), banner.replace("01:00:00", "00:59:56"), *run]
    r = goodput(write_log(tmp_path, lines))
    assert len(r.acc.attempts) == 3, r.acc.attempts
    assert [a.first_step for a in r.acc.attempts] == [None, None, 19], r.acc.attempts


def test_d2_banner_of_another_rank_is_the_same_launch(tmp_path: Path) -> None:
    """Each rank prints its own banner once (rank 1's in log.txt.rank1): rank files cat into one log are one
    launch, not one per rank."""
    lines = [*_setup("01:59:58", rank=1), *_run(2)]
    r = goodput(write_log(tmp_path, lines))
    assert len(r.acc.attempts) == 1, r.acc.attempts


def _epoch_lines(epoch: int, steps: range, start_s: int) -> list[str]:
    """A loop's progress line every 100 steps of an epoch, its counter restarting each epoch (`Epoch: [e],
    step: [s]`, Oscar-Paddle's retrieval fine-tuning), 64 s apart from second START_S of 01/02/2022 00:00."""
    lines = []
    for i, step in enumerate(steps):
        s = start_s + 64 * i
        lines.append(
            f"01/02/2022 {s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d} - INFO - Epoch: [{epoch}], step: [{step}], lr: 0.000010, batch_loss: 0.0433, avg_loss: 0.1151"
        )
    return lines


def test_per_epoch_counter_across_a_cut_is_one_run(tmp_path: Path) -> None:
    """A log cut from epoch 2's start to epoch 4's end (`[... cut ...]`): across the cut the per-epoch counter
    goes up (step 300 of epoch 2, then step 400 of epoch 4), which says nothing of the counter; where the next
    epoch's first line follows the one before's last, it restarts: one run of 5 epochs of 500, not a relaunch
    at every epoch."""
    lines = [
        *_epoch_lines(1, range(100, 600, 100), 0),
        *_epoch_lines(2, range(100, 400, 100), 400),
        "[... cut ...]",
        *_epoch_lines(4, range(400, 600, 100), 3000),
        *_epoch_lines(5, range(100, 600, 100), 3200),
    ]
    r = goodput(write_log(tmp_path, lines))
    assert len(r.acc.attempts) == 1, r.acc.attempts
    assert r.acc.attempts[0].last_step == 2500, r.acc.attempts


def test_per_epoch_counter_across_a_cut_early_in_the_log_is_one_run(tmp_path: Path) -> None:
    """A log cut early, from epoch 1's step 200 to epoch 2's step 400: the counter goes past every count seen
    so far across that turn, but drops at each turn after it (epoch 3's and 4's step 100): a per-epoch
    counter, one run, nothing redone."""
    lines = [
        *_epoch_lines(1, range(100, 300, 100), 0),
        "[... cut ...]",
        *_epoch_lines(2, range(400, 600, 100), 512),
        *_epoch_lines(3, range(100, 600, 100), 640),
        *_epoch_lines(4, range(100, 600, 100), 960),
    ]
    r = goodput(write_log(tmp_path, lines))
    assert len(r.acc.attempts) == 1, r.acc.attempts
    assert r.acc.steps_redone == 0, r.acc.steps_redone


def test_per_epoch_counter_across_a_cut_into_the_next_epoch_is_one_run(tmp_path: Path) -> None:
    """A log cut from epoch 2's step 300 to epoch 3's step 400: the counter goes up across the epochs' turn,
    but not past the counts seen before (500 in epoch 1): one run of 5 epochs of 500, no relaunch, nothing
    redone, no hang."""
    lines = [
        *_epoch_lines(1, range(100, 600, 100), 0),
        *_epoch_lines(2, range(100, 400, 100), 400),
        "[... cut ...]",
        *_epoch_lines(3, range(400, 600, 100), 1500),
        *_epoch_lines(4, range(100, 600, 100), 1700),
        *_epoch_lines(5, range(100, 600, 100), 2100),
    ]
    r = goodput(write_log(tmp_path, lines))
    assert len(r.acc.attempts) == 1, r.acc.attempts
    assert r.acc.attempts[0].last_step == 2500, r.acc.attempts
    assert r.acc.steps_redone == 0 and r.acc.buckets.get("hung", 0.0) == 0.0, r.acc.buckets


def test_whole_run_counter_naming_its_epoch_is_not_per_epoch(tmp_path: Path) -> None:
    """A counter of the whole run that names its epoch (`Epoch: [2], step: [600]` after `Epoch: [1], step:
    [500]`) grows past every count before it at each epoch's turn: read as it is, not made cumulative."""
    lines = [*_epoch_lines(1, range(100, 600, 100), 0), *_epoch_lines(2, range(600, 1100, 100), 400)]
    r = goodput(write_log(tmp_path, lines))
    assert [(a.first_step, a.last_step) for a in r.acc.attempts] == [(100, 1000)], r.acc.attempts


def test_ppdet_semi_supervised_step_lines_are_read(tmp_path: Path) -> None:
    """PaddleDetection's semi-supervised trainer prints the run's finished iterations before the usual epoch
    and in-epoch counter (`  51/65340 iters Epoch: [0] [   50/363]`): its steps are read (none were), each
    the epoch's offset plus the counter."""
    lines = [
        f"[03/14 18:{6 + i * 2:02d}:17] ppdet.engine INFO: {1 + 50 * i:>5d}/65340 iters Epoch: [0] [{50 * i:>5d}/363] learning_rate: 0.000100 loss: 30.098400 eta: 6 days, 23:09:53 batch_cost: 2.7102 data_cost: 0.0100 ips: 1.4760 images/s"
        for i in range(7)
    ] + [
        "[03/14 18:22:17] ppdet.engine INFO:   364/65340 iters Epoch: [1] [    0/363] learning_rate: 0.000100 loss: 29.000000 eta: 6 days, 23:00:00 batch_cost: 2.7102 data_cost: 0.0100 ips: 1.4760 images/s"
    ]
    r = goodput(write_log(tmp_path, lines))
    assert [(a.first_step, a.last_step) for a in r.acc.attempts] == [(0, 363)], r.acc.attempts


_PPDET = "[07/01 {t}] ppdet.engine INFO: Epoch: [{e}] [{i:>3d}/268] learning_rate: 0.000100 loss: 5.206787 eta: 1:00:00 batch_cost: 1.5500 data_cost: 0.0100 ips: 5.1 images/s"
_NOTE = "W0701 {t}.000000  {pid} gpu_resources.cc:61] Please NOTE: device: 0, GPU Compute Capability: 8.0, Driver API Version: 11.2, Runtime API Version: 11.2"


def _ppdet_epochs(epochs: range, start_s: int) -> list[str]:
    """ppdet's step lines at iterations 0, 100, 200 of each epoch of 268, 155 s apart (1.55 s/iteration),
    each epoch 415 s, from second START_S of the day."""
    lines = []
    for k, e in enumerate(epochs):
        for j, i in enumerate((0, 100, 200)):
            s = start_s + 415 * k + 155 * j
            lines.append(_PPDET.format(t=f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}", e=e, i=i))
    return lines


def _clock(s: int) -> str:
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def test_relaunches_killed_at_their_first_step_then_a_resume_past_redo_nothing(tmp_path: Path) -> None:
    """A run of 4 epochs; two relaunches from the pretrained weights, each killed by SIGTERM at its first
    step; then a resume at epoch 4 from the run's last checkpoint: the first run's steps were not redone
    (the resume went on past them), and they count as kept."""
    lines = [_NOTE.format(t="01:00:00", pid=100), *_ppdet_epochs(range(4), 3610)]
    for k, pid in enumerate((200, 300)):
        s = 9000 + 300 * k
        lines += [
            _NOTE.format(t=_clock(s), pid=pid),
            _PPDET.format(t=_clock(s + 10), e=0, i=0),
            _sigterm(pid),
        ]
    lines += [_NOTE.format(t="02:40:00", pid=400), *_ppdet_epochs(range(4, 6), 9610)]
    r = goodput(write_log(tmp_path, lines))
    assert len(r.acc.attempts) == 4, r.acc.attempts
    assert r.acc.steps_redone <= 2, r.acc.attempts  # (only the relaunches' own first steps)
    assert r.acc.buckets.get("redone", 0.0) < 60.0, r.acc.buckets
    assert r.acc.steps_completed == 5 * 268 + 200, r.acc.steps_completed


def _sigterm(pid: int) -> str:
    return f"[SignalInfo: *** SIGTERM (@0x3e8) received by PID {pid} (TID 0x7f) from PID {pid - 40} ***]"


def test_relaunch_between_that_trained_is_redone_work(tmp_path: Path) -> None:
    """A run of 4 epochs; a relaunch from scratch that trains 2 epochs, killed; then a resume at epoch 4 from
    the first run's checkpoint: the first run's steps are kept, the relaunch's 2 epochs were redone for
    nothing, and the count completed never exceeds the run's last step."""
    lines = [_NOTE.format(t="01:00:00", pid=100), *_ppdet_epochs(range(4), 3610)]
    lines += [_NOTE.format(t=_clock(9000), pid=200), *_ppdet_epochs(range(2), 9010), _sigterm(200)]
    lines += [_NOTE.format(t=_clock(10000), pid=300), *_ppdet_epochs(range(4, 6), 10010)]
    r = goodput(write_log(tmp_path, lines))
    assert r.acc.steps_completed == 5 * 268 + 200, r.acc.steps_completed
    assert r.acc.steps_redone == 268 + 200, r.acc.steps_redone
    assert 600.0 < r.acc.buckets.get("redone", 0.0) < 900.0, r.acc.buckets


def test_relaunch_killed_at_its_first_step_is_counted_once(tmp_path: Path) -> None:
    """A relaunch killed at its first logged step (epoch 2's), then a resume past the run's last step: the
    steps between the step it resumed from and its first line are not counted twice (the count completed is
    at most the run's last step)."""
    lines = [_NOTE.format(t="01:00:00", pid=100), *_ppdet_epochs(range(4), 3610), _sigterm(100)]
    lines += [_NOTE.format(t=_clock(9000), pid=200), _PPDET.format(t=_clock(9010), e=2, i=0), _sigterm(200)]
    lines += [_NOTE.format(t=_clock(10000), pid=300), *_ppdet_epochs(range(4, 6), 10010)]
    r = goodput(write_log(tmp_path, lines))
    assert r.acc.steps_completed == 5 * 268 + 200, r.acc.steps_completed
    assert _kept_before_the_cap(r) == 5 * 268 + 200  # (the count itself, not the run's span that bounds it)


def _kept_before_the_cap(r: GoodputReport) -> int:
    """The steps kept_ranges keeps, summed: the count before kept_steps bounds it by the run's span."""
    return sum(hi - lo for lo, hi, _ in kept_ranges(r.acc.attempts).values())


def test_relaunch_from_its_own_checkpoint_then_an_older_resume_redoes_what_each_ran(tmp_path: Path) -> None:
    """A trains epochs 0-3; B resumes its checkpoint at epoch 4 and trains 4-5; C resumes an older one, epoch
    2, and trains 2-7. Redone: A's steps past epoch 2 (535..1004) and B's own (1071..1540), 938 steps, never
    more than B ran put on B; the redone time is both attempts' (A's included), and nothing counted twice."""
    lines = [_NOTE.format(t="01:00:00", pid=100), *_ppdet_epochs(range(4), 3610), _sigterm(100)]
    lines += [_NOTE.format(t=_clock(6000), pid=200), *_ppdet_epochs(range(4, 6), 6010), _sigterm(200)]
    lines += [_NOTE.format(t=_clock(8000), pid=300), *_ppdet_epochs(range(2, 8), 8010)]
    r = goodput(write_log(tmp_path, lines))
    assert r.acc.steps_redone == (1004 - 535) + (1540 - 1071), r.acc.steps_redone
    assert r.acc.steps_completed == _kept_before_the_cap(r) == 7 * 268 + 200, r.acc.steps_completed
    # (A's 3 epochs 1..3 lines past epoch 2 and B's 2 epochs: about 23 min of step time, not B's 12 alone)
    assert 1300.0 < r.acc.buckets.get("redone", 0.0) < 1700.0, r.acc.buckets


_TITAN = "[rank0]:[titan] 2025-03-01 {t},000 - root - INFO - "


def _titan_launch(start_s: int, steps: range, load: int | None) -> list[str]:
    """A torchtitan launch: its start, the checkpoint it loads (step-N) if any, a step line every 10 steps
    20 s apart, then a CUDA error."""
    lines = [_TITAN.format(t=_clock(start_s)) + "Starting job: Llama 3 debug training"]
    if load is not None:
        lines.append(
            _TITAN.format(t=_clock(start_s + 30)) + f"Loading the checkpoint from ./outputs/checkpoint/step-{load}."
        )
        lines.append(_TITAN.format(t=_clock(start_s + 45)) + "Finished loading the checkpoint in 15.00 seconds.")
    lines.append(
        _TITAN.format(t=_clock(start_s + 50))
        + f"Training starts at step {steps[0]}, with local batch size 8, global batch size 32, sequence length 2048, total steps 3000 (warmup 2)"
    )
    lines += [
        _TITAN.format(t=_clock(start_s + 60 + 2 * (s - steps[0])))
        + f"step: {s}  loss:  6.1007  memory:  1.35GiB(1.71%)  tps: 1,640  tflops: 0.12  mfu: 0.01%"
        for s in steps
        if s == steps[0] or s % 10 == 0
    ]
    return lines


def test_rollback_below_an_attempt_a_launch_had_resumed_past_discards_its_steps(tmp_path: Path) -> None:
    """A runs 1..400 and crashes; B loads step-400 and runs 401..1200, crashes; C loads step-100 and runs to
    300. The later rollback wins: A's steps past 100 and all of B's were redone (1,100); 300 kept."""
    lines = [*_titan_launch(36000, range(1, 401), None), _TITAN.format(t=_clock(36900)) + "RuntimeError: CUDA error"]
    lines += [*_titan_launch(37000, range(401, 1201), 400), _TITAN.format(t=_clock(38700)) + "RuntimeError: CUDA error"]
    lines += _titan_launch(39000, range(101, 301), 100)
    r = goodput(write_log(tmp_path, lines))
    assert len(r.acc.attempts) == 3, r.acc.attempts
    assert r.acc.steps_completed == _kept_before_the_cap(r) == 300, r.acc.steps_completed
    assert r.acc.steps_redone == 1100 and not r.acc.redone_is_bound, r.acc.steps_redone


def test_ppdet_callbacks_logger_name_is_read(tmp_path: Path) -> None:
    """PaddleDetection's LogPrinter logs as `ppdet.engine.callbacks` on develop since #9080: its step lines
    and the evaluation's first batch are read as under `ppdet.engine`."""
    lines = [x.replace("ppdet.engine INFO", "ppdet.engine.callbacks INFO") for x in _ppdet_epochs(range(2), 3600)]
    lines += [
        "[07/01 01:14:00] ppdet.engine.callbacks INFO: Eval iter: 0",
        "[07/01 01:25:40] ppdet.engine INFO: Total sample number: 5000, average FPS: 11.9",
        *[x.replace("ppdet.engine INFO", "ppdet.engine.callbacks INFO") for x in _ppdet_epochs(range(2, 4), 5150)],
    ]
    r = goodput(write_log(tmp_path, lines))
    assert [(a.first_step, a.last_step) for a in r.acc.attempts] == [(0, 3 * 268 + 200)], r.acc.attempts
    assert 600.0 < r.acc.buckets.get("evaluation", 0.0) < 800.0, r.acc.buckets


def test_evaluation_line_ending_a_cut_is_not_all_evaluation(tmp_path: Path) -> None:
    """Epochs 2 to 9 cut from the log: the next lines are an evaluation's result and the best-model save,
    then epoch 10's first step. The steps up to epoch 10 ran in the cut (at 1.55 s each, productive); only
    the rest, the cut's evaluations and saves unknown, is left unexplained, not booked as one evaluation."""
    lines = [
        *_ppdet_epochs(range(2), 3600),
        "[... cut ...]",
        "[07/01 04:10:00] ppdet.engine INFO: Total sample number: 484, average FPS: 20.0",
        "[07/01 04:10:09] ppdet.utils.checkpoint INFO: Save checkpoint: output/best_model",
        *_ppdet_epochs(range(10, 12), 15010),
    ]
    r = goodput(write_log(tmp_path, lines))
    assert len(r.acc.attempts) == 1, r.acc.attempts
    assert r.acc.buckets.get("evaluation", 0.0) < 600.0, r.acc.buckets
    assert r.acc.buckets["productive"] > 8 * 268 * 1.5, r.acc.buckets


def test_ppdet_evaluation_between_two_saves_is_evaluation(tmp_path: Path) -> None:
    """The semi-supervised trainer evaluates the teacher, saves, then evaluates the student (its `Eval iter:
    0` after the save) and saves again, with no result line of its own: the 700 s between the saves are the
    student's evaluation, not a save."""
    lines = [
        *_ppdet_epochs(range(2), 3600),
        "[07/01 01:14:00] ppdet.engine INFO: Eval iter: 0",
        "[07/01 01:25:40] ppdet.engine INFO: Total sample number: 5000, average FPS: 11.9",
        "[07/01 01:25:41] ppdet.utils.checkpoint INFO: Save checkpoint: output/dino_ssod",
        "[07/01 01:25:42] ppdet.engine INFO: Eval iter: 0",
        "[07/01 01:37:22] ppdet.utils.checkpoint INFO: Save checkpoint: output/dino_ssod",
        *_ppdet_epochs(range(2, 4), 5853),
    ]
    r = goodput(write_log(tmp_path, lines))
    assert r.acc.buckets.get("checkpoint_save", 0.0) < 60.0, r.acc.buckets
    assert r.acc.buckets["evaluation"] > 1300.0, r.acc.buckets


def test_structural_save_line_is_a_save(tmp_path: Path) -> None:
    """A loop read by its structure (`Epoch: [e], step: [s]`) that saves after each epoch's evaluation
    (`Saving trained model to DIR/checkpoint-e`, VinVL-/Oscar-Paddle): each is a save at its epoch's end."""
    lines = [*_epoch_lines(1, range(100, 600, 100), 0)]
    lines += [
        "01/02/2022 00:04:20 - INFO - ** ** Epoch [1] done! Training loss: 0.00801 ** **",
        "01/02/2022 00:05:39 - INFO - ** * ** Eval at Epoch [1]! Eval Reults:  ** * **",
        "01/02/2022 00:05:41 - INFO - ** * ** Saving trained model to ./exp/finetune_retrieval/checkpoint-1. ** * **",
        "01/02/2022 00:05:41 - INFO - =====> Start epoch 2:",
        *_epoch_lines(2, range(100, 600, 100), 400),
    ]
    r = goodput(write_log(tmp_path, lines))
    assert [s.step for s in r.saves()] == [500], r.saves()


def test_structural_save_negated_or_planned_is_no_save(tmp_path: Path) -> None:
    """A line that says a save does not happen (`not saving the model to s3: no credentials`, `Skipping
    save`) or will happen later (`Will save the model to ./exp at the end of each epoch`) is no save: the
    silence after it is not a save's, and a plan printed first does not move the wall span's start."""
    for said in (
        "not saving the model to s3: no credentials",
        "Skipping save: not saving the model to s3",
        "we do not save model to /x",
        "Will save the model to ./exp at the end of each epoch",
        "Saving model to s3 skipped: no credentials",
        "Saving checkpoint to s3 disabled",
    ):
        lines = [
            *_epoch_lines(1, range(100, 600, 100), 0),
            f"01/02/2022 00:04:17 - INFO - {said}",
            *_epoch_lines(1, range(600, 1100, 100), 900),
        ]
        r = goodput(write_log(tmp_path, lines))
        assert r.saves() == [], (said, r.saves())
        assert r.acc.buckets.get("checkpoint_save", 0.0) == 0.0, (said, r.acc.buckets)


def test_structural_save_after_a_negated_clause_is_a_save(tmp_path: Path) -> None:
    """A negation in an earlier clause of the line says nothing of the save phrase's own (`No improvement
    for 2 epochs; saving checkpoint to ...`, `val loss did not improve. Saving checkpoint to`): a save, and
    the 116 s before the next step line, less a step's 64 s, are its."""
    for said in (
        "No improvement for 2 epochs; saving checkpoint to ./exp/checkpoint-1",
        "Not the best model, saving checkpoint to last.pth",
        "Epoch 2: val loss did not improve. Saving checkpoint to last.ckpt",
        "To be safe, saving model to ./exp/x",
    ):
        lines = [
            *_epoch_lines(1, range(100, 600, 100), 0),
            f"01/02/2022 00:04:17 - INFO - {said}",
            *_epoch_lines(1, range(600, 1100, 100), 373),
        ]
        r = goodput(write_log(tmp_path, lines))
        assert [s.step for s in r.saves()] == [500], (said, r.saves())
        assert r.acc.buckets.get("checkpoint_save", 0.0) > 40.0, (said, r.acc.buckets)  # (116 s less a step)


def test_structural_save_line_alone_makes_no_checkpoint_stall(tmp_path: Path) -> None:
    """A save line read by its wording (`Saving the model to s3://...`), no end line, then 10 minutes with no
    line: the silence is a hang as it would be without the line, not a checkpoint stall the line alone makes."""
    lines = [
        *_epoch_lines(1, range(100, 600, 100), 0),
        "01/02/2022 00:04:20 - INFO - Saving the model to s3://bucket/ckpt",
        *_epoch_lines(1, range(600, 1100, 100), 900),
    ]
    r = goodput(write_log(tmp_path, lines))
    assert r.acc.buckets.get("checkpoint_save", 0.0) < 60.0, r.acc.buckets
    assert r.acc.buckets.get("hung", 0.0) > 400.0, r.acc.buckets


def test_structural_save_line_first_starts_the_wall_span(tmp_path: Path) -> None:
    """A save line before the first step line (the log's first line) is the start-up's: the wall span
    starts at it all the same."""
    lines = [
        "01/02/2022 00:00:00 - INFO - Saving the model to ./exp",
        "01/02/2022 00:00:05 - INFO - Loading data from ./data",
        *_epoch_lines(1, range(100, 600, 100), 1205),
    ]
    r = goodput(write_log(tmp_path, lines))
    assert r.acc.wall_s == 1205 + 4 * 64, r.acc.wall_s


def _mmcv_epoch(epoch: int, start_s: int) -> list[str]:
    """mmcv's train lines every 50 of 930 iterations, 15 s apart, then its save line and the validation's
    finished bar (no timestamp: `elapsed: 70s`) and result line, from second START_S of 2021-12-21 00:00."""

    def at(s: int) -> str:
        return f"2021-12-21 {s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d},000"

    lines = [
        f"{at(start_s + 15 * k)} - mmdet - INFO - Epoch [{epoch}][{50 * (k + 1)}/930]\tlr: 2.000e-02, eta: 0:41:46, time: 0.300, data_time: 0.052, memory: 3050, loss_rpn_cls: 0.0272"
        for k in range(18)
    ]
    end = start_s + 15 * 17 + 9
    return [
        *lines,
        f"{at(end)} - mmdet - INFO - Saving checkpoint at {epoch} epochs",
        "[>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>] 764/764, 10.9 task/s, elapsed: 70s, ETA:     0s",
        f"{at(end + 72)} - mmdet - INFO - Epoch(val) [{epoch}][764]\tbbox_mAP: 0.0110, bbox_mAP_50: 0.0170, segm_mAP: 0.0110",
    ]


def test_cut_after_an_evaluation_result_is_not_all_evaluation(tmp_path: Path) -> None:
    """An mmcv log cut from epoch 1's validation result to epoch 2's finished validation bar: the bar (no
    timestamp of its own) began its 70 s before epoch 2's result, not at epoch 1's result; epoch 2's
    training, in the cut, is not evaluation."""
    one, two, three = _mmcv_epoch(1, 3600), _mmcv_epoch(2, 3600 + 351), _mmcv_epoch(3, 3600 + 702)
    lines = [*one, "[... cut ...]", *two[-2:], *three]
    r = goodput(write_log(tmp_path, lines))
    assert len(r.acc.attempts) == 1, r.acc.attempts
    assert r.acc.buckets.get("evaluation", 0.0) < 3 * 75.0, r.acc.buckets


def test_mmcv_save_time_in_the_buckets_is_not_denied_by_the_cadence(tmp_path: Path) -> None:
    """mmcv's save line 2 s before its validation bar began: the timeline gives the save those 2 s; the
    Young/Daly note says where they come from and that no save's own lines time it, not "no blocking
    checkpoint save was measured" beside a checkpoint_save bucket."""
    lines = [*_mmcv_epoch(1, 3600), *_mmcv_epoch(2, 3600 + 351), *_mmcv_epoch(3, 3600 + 702)]
    r = goodput(write_log(tmp_path, lines))
    assert r.acc.buckets.get("checkpoint_save", 0.0) > 0.0, r.acc.buckets
    note = r.cadence.note or ""
    assert "no blocking checkpoint save was measured" not in note and "checkpoint_save" in note, note
