"""Two classes of appended training logs (issue 40): a launch whose closing summary comes before its planned
end was stopped, not completed (detectron2 prints `Total training time` in a `finally:`); a relaunch from
scratch with another configuration (another planned length, another number of steps per epoch) is a new
run, not a rollback of the launch before it (a relaunch of the same configuration after a failure still
redoes every step: test_goodput_relaunch_ends.py). The lines follow the FORMAT of two real logs (sources
below); the sequences around them are built here."""

from __future__ import annotations

from pathlib import Path

import pytest
from scope.analyzers.goodput import goodput

from scope.render.goodput import render_goodput
from tests.helpers import assert_sane_goodput, write_log

# detectron2 0.6 DefaultTrainer's log.txt, every launch appended to it:
# https://github.com/BUAAZhangHaonan/mgm_mask2former/blob/747ef0209b5d17003208d61fce185fcd0bf267d4/output/log.txt
# (lines 1557, 2256, 2972, 2995-2999: the launch with `MAX_ITER: 10000` stopped at iteration 493)
_D2_EVENTS = (
    "[08/30 23:23:{}] d2.utils.events INFO:  eta: {}  iter: {}  total_loss: {} ..  time: {}  last_time: {}  "
    "data_time: {}  last_data_time: {}   lr: {}  max_mem: 15547M"
)
D2_REAL = [
    "[08/30 23:19:57] detectron2 INFO: Rank of current process: 0. World size: 1",
    "  MAX_ITER: 10000",
    "[08/30 23:20:18] d2.engine.train_loop INFO: Starting training from iteration 0",
    # (each events line shortened at its losses: `..`)
    _D2_EVENTS.format("40", "1:09:16", 459, 62.97, 0.4355, 0.4367, 0.0036, 0.0032, "4.5954e-06"),
    _D2_EVENTS.format("48", "1:09:09", 479, 62.86, 0.4356, 0.4376, 0.0035, 0.0035, "4.7952e-06"),
    "[08/30 23:23:54] d2.engine.hooks INFO: Overall training speed: 491 iterations in 0:03:34 (0.4359 s / it)",
    "[08/30 23:23:54] d2.engine.hooks INFO: Total training time: 0:03:34 (0:00:00 on hooks)",
    _D2_EVENTS.format("54", "1:09:03", 493, 62.23, 0.4356, 0.4369, 0.0034, 0.0034, "4.9251e-06"),
]


def _d2_launch(start_min: int, max_iter: int, last_iter: int, *, summary: bool = True) -> list[str]:
    """One detectron2 launch in the real log's line formats: its setup line, its config dump's MAX_ITER, an
    events line every 20 iterations (0.45 s each), the final save at MAX_ITER and the hooks' summary."""

    def stamp(s: float) -> str:
        s = int(start_min * 60 + s)
        return f"[08/30 {s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}]"

    out = [
        f"{stamp(0)} detectron2 INFO: Rank of current process: 0. World size: 1",
        "SOLVER:",
        f"  MAX_ITER: {max_iter}",
    ]
    out.append(f"{stamp(20)} d2.engine.train_loop INFO: Starting training from iteration 0")
    t = 20.0
    for it in [*range(19, last_iter + 1, 20), *([last_iter] if last_iter % 20 != 19 else [])]:
        t = 20.0 + (it + 1) * 0.45
        if it == max_iter - 1:
            out.append(f"{stamp(t)} fvcore.common.checkpoint INFO: Saving checkpoint to ./output/model_final.pth")
        eta = int((max_iter - it - 1) * 0.45)
        out.append(
            f"{stamp(t)} d2.utils.events INFO:  eta: {eta // 3600}:{eta // 60 % 60:02d}:{eta % 60:02d}  iter: {it}"
            f"  total_loss: 19.4  time: 0.4500  data_time: 0.0034  lr: 1e-05  max_mem: 15547M"
        )
    if summary:
        out.append(f"{stamp(t)} d2.engine.hooks INFO: Overall training speed: {last_iter - 1} iterations in 0:03:34")
        out.append(f"{stamp(t)} d2.engine.hooks INFO: Total training time: 0:03:34 (0:00:00 on hooks)")
    return out


def test_detectron2_summary_before_max_iter_is_an_interrupted_launch(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path / "real", D2_REAL, name="log.txt"))
    (a,) = r.acc.attempts
    assert (a.last_step, a.ended, a.planned_steps) == (493, "interrupted", 10000), a.end_evidence
    assert "MAX_ITER: 10000" in a.end_evidence and "Total training time" in a.end_evidence
    # the same summary follows a planned early exit (Megatron's --exit-interval): no cause is named
    assert "left before its planned end with no failure line" in a.end_evidence and "Ctrl-C" not in a.end_evidence

    # the same summary at MAX_ITER - 1 (iterations count from 0) ends a completed launch
    done = goodput(write_log(tmp_path / "done", _d2_launch(0, 400, 399), name="log.txt"))
    assert [(x.last_step, x.ended, x.planned_steps) for x in done.acc.attempts] == [(399, "completed", None)]


def test_detectron2_appended_launches_stopped_one_is_left_by_the_next_run(tmp_path: Path) -> None:
    # a 2,000-iteration run, then one of 10,000 stopped at 493, then one of 4,000 to its end (the real log's
    # three launches, shortened)
    lines = _d2_launch(0, 400, 399) + _d2_launch(10, 2000, 493) + _d2_launch(20, 800, 799)
    r = goodput(write_log(tmp_path, lines, name="log.txt"))
    assert_sane_goodput(r)
    assert [(x.last_step, x.ended) for x in r.acc.attempts] == [
        (399, "completed"),
        (493, "interrupted"),
        (799, "completed"),
    ]
    assert r.acc.attempts[1].planned_steps == 2000
    assert [x.new_run.split("; ")[-1] for x in r.acc.attempts] == [
        "",
        "planned length 400 steps -> 2,000 steps",
        "planned length 2,000 steps -> 800 steps",
    ]
    # each launch runs from iteration 0 with its own plan: new runs; the stopped one's steps are left behind
    assert r.acc.steps_redone == 0 and r.acc.buckets["redone"] == 0
    assert r.acc.steps_discarded == 493  # (from iteration 0 to its last events line)
    assert r.to_dict()["failures"] == 0

    # with no config dump (no plan stated) the events line's own `eta:` (0:11:17 left at iteration 493) says
    # the same: the summary closed a loop left early; at MAX_ITER - 1 (eta 0:00:00) it ends a completed one
    bare = [ln for ln in _d2_launch(10, 2000, 493) if "MAX_ITER" not in ln]
    (cut,) = goodput(write_log(tmp_path / "bare", bare, name="log.txt")).acc.attempts
    assert cut.ended == "interrupted" and "estimated 0.2 h left" in cut.end_evidence, cut.end_evidence
    full = [ln for ln in _d2_launch(10, 400, 399) if "MAX_ITER" not in ln]
    assert [x.ended for x in goodput(write_log(tmp_path / "full", full, name="log.txt")).acc.attempts] == ["completed"]


# PaddleDetection's workerlog.0 (rank 0 under paddle.distributed.launch), every launch appended to it:
# https://github.com/intflow/PaddleDetection_oad/blob/e2b4c2494f4a15ec441ce621fab9ac068492de15/log/workerlog.0
# (lines 434, 440, 442 and 426-428: a launch's start, its weights, a step line, the launcher's SIGTERM)
_PP_START = (
    "[2023-05-12 {}] [    INFO] topology.py:215 - HybridParallelInfo: rank_id: 0, mp_degree: 1, sharding_degree: 1, "
    "pp_degree: 1, dp_degree: 2, mp_group: [0],  sharding_group: [0], pp_group: [0], dp_group: [0, 1], "
    "check/clip group: [0]"
)
_PP_WEIGHTS = (
    "[05/12 {}] ppdet.utils.checkpoint INFO: Finish loading model weights: "
    "/root/.cache/paddle/weights/ResNet50_vd_ssld_v2_pretrained.pdparams"
)
_PP_STEP = (
    "[05/12 {}] ppdet.engine INFO: Epoch: [{}] [{:>4d}/{}] learning_rate: 0.000010 loss_class: 0.297911 "
    "eta: 12:44:48 batch_cost: 0.6881 data_cost: 0.0004 ips: 11.6262 images/s"
)
_PP_SIGTERM = [
    "FatalError: `Termination signal` is detected by the operating system.",
    '  [TimeInfo: *** Aborted at 1683856931 (unix time) try "date -d @1683856931" if you are using GNU date ***]',
    "  [SignalInfo: *** SIGTERM (@0x12db9) received by PID 77338 (TID 0x7f4c6fc6b740) from PID 77241 ***]",
]


def _pp_launch(hour: int, per_epoch: int, last: int) -> list[str]:
    """A launch from epoch 0 with `per_epoch` steps an epoch, a step line every 200 (0.75 s each) up to `last`
    (steps counted across epochs), then the launcher's SIGTERM."""
    out = [_PP_START.format(f"{hour:02d}:00:00,000"), _PP_WEIGHTS.format(f"{hour:02d}:00:05")]
    for step in range(0, last + 1, 200):
        s = 10 + int(step * 0.75)
        out.append(
            _PP_STEP.format(f"{hour:02d}:{s // 60:02d}:{s % 60:02d}", step // per_epoch, step % per_epoch, per_epoch)
        )
    return out + _PP_SIGTERM


def test_ppdet_relaunch_with_another_epoch_length_is_a_new_run_the_same_one_a_rollback(tmp_path: Path) -> None:
    # 1,320 steps an epoch to 1,000; relaunched from scratch at 660 an epoch (another batch or data set) to
    # 1,200; relaunched from scratch at 660 again, nothing loaded, to 600
    lines = _pp_launch(10, 1320, 1000) + _pp_launch(11, 660, 1200) + _pp_launch(12, 660, 600)
    r = goodput(write_log(tmp_path, lines, name="workerlog.0"))
    assert_sane_goodput(r)
    a = r.acc.attempts
    assert [(x.first_step, x.last_step) for x in a] == [(0, 1000), (0, 1200), (0, 600)]
    # launch 2 is a new run: launch 1's 1,000 steps are left behind, not redone; launch 3 runs launch 2's
    # configuration again from step 0 after its SIGTERM: every one of its 1,200 steps is redone
    assert r.acc.steps_redone == 1200
    assert r.acc.steps_discarded == 1000
    assert "steps per epoch 1,320 -> 660" in a[1].new_run and a[2].new_run == ""
    assert "a new run: from step 0 with nothing resumed; steps per epoch 1,320 -> 660" in render_goodput(r.result())
    assert r.acc.buckets["redone"] > 0
    # the finding counts the one rollback, not the new run before it
    (lost,) = [f for f in r.findings if f.kind == "rollback_loss"]
    assert lost.metrics["rollbacks"] == 1 and "after 1 rollback:" in lost.summary


def test_ppdet_relaunch_on_more_ranks_is_a_rollback_not_a_new_run(tmp_path: Path) -> None:
    # the same launch relaunched from scratch on 4 data-parallel ranks instead of 2 (an elastic restart on
    # more GPUs): 1,320 -> 660 steps an epoch by the rank count alone, the same run: its 1,000 steps redone
    more = [
        ln.replace("dp_degree: 2", "dp_degree: 4").replace("dp_group: [0, 1]", "dp_group: [0, 1, 2, 3]")
        for ln in _pp_launch(11, 660, 600)
    ]
    r = goodput(write_log(tmp_path, _pp_launch(10, 1320, 1000) + more, name="workerlog.0"))
    assert_sane_goodput(r)
    a = r.acc.attempts
    assert [(x.world_size, x.first_step, x.last_step, x.new_run) for x in a] == [(2, 0, 1000, ""), (4, 0, 600, "")]
    assert (r.acc.steps_redone, r.acc.steps_discarded) == (1000, 0)
    assert r.acc.buckets["redone"] == pytest.approx(750.0, abs=1.0)
    assert [f for f in r.findings if f.kind == "rollback_loss"]


def test_a_launch_that_crashed_at_start_up_between_two_runs_changes_no_count(tmp_path: Path) -> None:
    # 1,000 steps, then a launch that fails before its first step (a library not found), then a launch from
    # scratch: the redone steps, the steps kept and discarded, the rollback finding and Attempt.new_run all
    # pair the launches that reached a step (the one decision launches.note_new_runs makes)
    crash = [
        _PP_START.format("10:50:00,000"),
        "Traceback (most recent call last):",
        '  File "tools/train.py", line 172, in <module>',
        "RuntimeError: (PreconditionNotMet) The third-party dynamic library (libcudnn.so) that Paddle depends on is "
        "not configured correctly.",
    ]
    # the same configuration again: a rollback of all 1,000 steps, found by the finding too
    same = goodput(write_log(tmp_path / "same", _pp_launch(10, 1320, 1000) + crash + _pp_launch(11, 1320, 600)))
    assert [(x.first_step, x.new_run) for x in same.acc.attempts] == [(0, ""), (None, ""), (0, "")]
    assert (same.acc.steps_redone, same.acc.steps_discarded, same.acc.steps_completed) == (1000, 0, 600)
    (lost,) = [f for f in same.findings if f.kind == "rollback_loss"]
    assert lost.metrics["rollbacks"] == 1 and "after 1 rollback:" in lost.summary  # (0 rollbacks before)
    # another epoch length on as many ranks: a new run, the 1,000 steps left behind, kept in the steps done
    other = goodput(write_log(tmp_path / "other", _pp_launch(10, 1320, 1000) + crash + _pp_launch(11, 660, 600)))
    assert "steps per epoch 1,320 -> 660" in other.acc.attempts[2].new_run
    assert (other.acc.steps_redone, other.acc.steps_discarded) == (0, 1000)
    assert other.acc.steps_completed == 1600  # (600 before: the new run read as a rollback of them)
