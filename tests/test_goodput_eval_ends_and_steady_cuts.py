"""Four classes of training logs (issue 54): detectron2's evaluation ends at its result lines (`copypaste:`),
not at `Total inference time` (the metric computation after the inference is the evaluation's too, and a
log cut to its result lines still shows where each evaluation ended); a loop summary after a progress line
that still estimates hours left (`eta: 1:09:03`) ends an interrupted launch even where no plan line is left;
LLaMA-Factory's evaluation records in trainer_log.jsonl end an evaluation; and a stretch of many steps at
about the steady pace (a log cut between two lines hours apart) is work, not a hang. The lines follow the
FORMAT of real logs (sources below); the sequences around them are built here."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

from scope.analyzers.goodput import goodput
from scope.analyzers.goodput.cut_stretches import unlogged_in_cuts
from scope.analyzers.goodput.line_marks import scan_line
from scope.analyzers.goodput.states import Interval

from tests.helpers import assert_sane_goodput, write_log

# detectron2 0.6 DefaultTrainer's log.txt around an EvalHook run (the periodic save, the inference, COCOeval,
# the results, then the next events line): the format and the timings of the real excerpt _D2_BALANCE below
# (HaowenGuan/NYU-Semi-Supervise-Object-Detection's log_supervised_lr_0.040_balance.txt: 143 s of inference,
# then 32 s of COCOeval before the `copypaste:` results), the events lines as in
# https://github.com/BUAAZhangHaonan/mgm_mask2former/blob/747ef0209b5d17003208d61fce185fcd0bf267d4/output/log.txt


def _stamp(s: float) -> str:
    s = int(s)
    return f"[11/18 {14 + s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}]"


def _events(t: float, it: int, eta: str = "20:49:44") -> str:
    return (
        f"{_stamp(t)} d2.utils.events INFO:  eta: {eta}  iter: {it}  total_loss: 0.1707  loss_cls: 0.07874  "
        "time: 0.6834  data_time: 0.0021  lr: 0.02  max_mem: 5237M"
    )


def _eval_cycle(t: float, it: int, *, cut: bool = False) -> tuple[list[str], float]:
    """The save after iteration `it` (20 events lines of 20 iterations at 0.68 s before it), the evaluation
    (137 s of inference, 40 s of COCO evaluation), then the next events line."""
    out = [
        f"{_stamp(t)} fvcore.common.checkpoint INFO: Saving checkpoint to ./output/model_{it:07d}.pth",
        f"{_stamp(t + 2)} d2.evaluation.evaluator INFO: Start inference on 3334 batches",
        f"{_stamp(t + 139)} d2.evaluation.evaluator INFO: Total inference time: 0:02:16.411997 (0.040977 s / iter "
        "per device, on 6 devices)",
        f"{_stamp(t + 177)} d2.engine.defaults INFO: Evaluation results for nyu_val in csv format:",
        f"{_stamp(t + 177)} d2.evaluation.testing INFO: copypaste: Task: bbox",
        f"{_stamp(t + 177)} d2.evaluation.testing INFO: copypaste: AP,AP50,AP75,APs,APm,APl",
        f"{_stamp(t + 177)} d2.evaluation.testing INFO: copypaste: 10.9699,22.4369,9.2552,1.1235,4.8808,13.6171",
    ]
    if cut:  # a log cut to the save and the result lines (`[... cut ...]` between)
        out = [out[0], "[... cut ...]", *out[4:], "[... cut ...]"]
    return out, t + 177


def _d2_run(cycles: int, *, cut: bool = False) -> tuple[list[str], float]:
    """The launch's lines (1,000 iterations, an events line every 20, then a save and an evaluation, per
    cycle) and the time of its last line."""
    lines = [
        f"{_stamp(0)} detectron2 INFO: Rank of current process: 0. World size: 6",
        f"{_stamp(6)} d2.engine.train_loop INFO: Starting training from iteration 0",
    ]
    t, it = 6.0, -1
    for _ in range(cycles):
        for _ in range(49):  # iterations 19 .. 979 of the thousand
            it += 20
            t += 20 * 0.68
            lines.append(_events(t, it))
        cycle, t = _eval_cycle(t + 13.6, it + 20, cut=cut)  # the save after iteration 999, its evaluation
        lines += cycle
        it += 20
        lines.append(_events(t, it))  # the events line of 999 after the hooks
    return lines, t


def test_detectron2_evaluation_ends_at_its_results_not_at_the_inference(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path, _d2_run(3)[0], name="log.txt"))
    assert_sane_goodput(r)
    # each cycle: 2 s to `Start inference`, 137 s of inference, 38 s of COCOeval, all evaluation but the save
    # (its 2 s to the evaluation's first line); before: 137 s each (to `Total inference time`)
    assert abs(r.acc.buckets["evaluation"] - 3 * 175) <= 3, r.acc.buckets
    assert abs(r.acc.buckets["checkpoint_save"] - 3 * 2) <= 1, r.acc.buckets
    # each periodic save is named by its iteration (model_0000999.pth follows iteration 999)
    assert [c.step for c in r.checkpoints] == [999, 1999, 2999]


def test_detectron2_log_cut_to_save_and_results_charges_the_evaluation_not_the_save(tmp_path: Path) -> None:
    # a save line, then (lines cut) the results: the save's own share is not shown, the evaluation's is most of
    # it; before, the save had no end and ran on to the next save (hours of `checkpoint_save` in a long log)
    r = goodput(write_log(tmp_path, _d2_run(3, cut=True)[0], name="log.txt"))
    assert_sane_goodput(r)
    assert abs(r.acc.buckets["evaluation"] - 3 * 177) <= 3, r.acc.buckets
    assert r.acc.buckets["checkpoint_save"] == 0
    assert r.findings == [] or all(f.kind != "checkpoint_stall" for f in r.findings)


def test_detectron2_summary_with_hours_of_eta_left_is_interrupted_without_a_plan_line(tmp_path: Path) -> None:
    # the after-train hooks' summary printed at iteration 3019 while the events line still says 17:59:33 left
    # (no config dump in the log: no MAX_ITER to count against)
    lines, t = _d2_run(3)
    t += 14
    lines += [
        f"{_stamp(t)} d2.engine.hooks INFO: Overall training speed: 3017 iterations in 0:34:22 (0.6834 s / it)",
        f"{_stamp(t)} d2.engine.hooks INFO: Total training time: 0:44:03 (0:09:41 on hooks)",
        _events(t, 3019, eta="17:59:33"),
    ]
    (a,) = goodput(write_log(tmp_path, lines, name="log.txt")).acc.attempts
    assert a.ended == "interrupted", a.end_evidence
    assert "estimated 18.0 h left" in a.end_evidence and "Total training time" in a.end_evidence
    # the same summary after `eta: 0:00:00` closes a completed run
    lines[-1] = _events(t, 3019, eta="0:00:00")
    (done,) = goodput(write_log(tmp_path / "done", lines, name="log.txt")).acc.attempts
    assert done.ended == "completed", done.end_evidence


# LLaMA-Factory's trainer_log.jsonl (src/llamafactory/train/callbacks.py, LogCallback.on_log): a record per
# logging step, and after an evaluation a record of the same step with `eval_loss` and the elapsed time after
# it; the format of https://github.com/AolinGuo/graduate_agent/blob/787eda9c798745f95440f398de29d542babf870f/
# trainer_log.jsonl (its run evaluated nothing), the evaluation record's keys as on_log writes them
def _lf(step: int, elapsed: int, total: int = 300, **keys: float) -> str:
    rec: dict[str, object] = {"current_steps": step, "total_steps": total, **keys}
    rec["epoch"] = round(step / total * 3, 4)
    rec["percentage"] = round(100 * step / total, 2)
    rec["elapsed_time"] = f"{elapsed // 3600}:{elapsed // 60 % 60:02d}:{elapsed % 60:02d}"
    rec["remaining_time"] = "0:00:00"
    return json.dumps(rec)


def test_llamafactory_eval_records_are_evaluation_time(tmp_path: Path) -> None:
    lines, t = [], 0
    for step in range(10, 301, 10):
        t += 32
        lines.append(_lf(step, t, loss=1.6, lr=5e-05))
        if step % 100 == 0:  # evaluate every 100 steps: 220 s
            t += 220
            lines.append(_lf(step, t, eval_loss=1.55))
    lines.append(_lf(300, t))  # the closing summary record
    r = goodput(write_log(tmp_path, lines, name="trainer_log.jsonl"))
    assert_sane_goodput(r)
    assert r.acc.buckets["evaluation"] == 3 * 220, r.acc.buckets
    assert r.acc.buckets["productive"] == 30 * 32
    assert r.acc.steps_completed == 300 and [a.ended for a in r.acc.attempts] == ["completed"]


# PaddleSeg's train.log ([TRAIN] lines every 10 iterations): the format of
# https://github.com/PaddlePaddle/PaddleSeg/blob/release/2.3/paddleseg/core/train.py (logger.info of the
# train loop: `[TRAIN] epoch: E, iter: N/T, loss: .., batch_cost: .., ETA ..`)
def _seg(t: int, it: int, total: int = 80000) -> str:
    stamp = datetime(2021, 11, 23, 20, 45, 25) + timedelta(seconds=t)
    return (
        f"{stamp:%Y-%m-%d %H:%M:%S} [INFO]\t[TRAIN] epoch: 1, iter: {it}/{total}, loss: 0.5118, "
        "lr: 0.009662, batch_cost: 1.1220, reader_cost: 0.00015, ips: 1.7825 samples/sec | ETA 23:59:44"
    )


def test_steady_pace_across_a_cut_is_work_not_a_hang(tmp_path: Path) -> None:
    # 10 iterations every 11 s, then (lines cut) 20,000 iterations in 22,600 s (1.13 s each, 2.7% slower than
    # the steady 1.10 s: epoch turnovers, unlogged saves; 600 s past the steady pace, a hang before), then the
    # steady lines again
    lines = [_seg(11 * i, 10 * i) for i in range(1, 30)]
    t0, it0 = 11 * 29, 290
    lines.append("[... cut ...]")
    lines += [_seg(t0 + 22600 + 11 * i, it0 + 20000 + 10 * i) for i in range(0, 30)]
    r = goodput(write_log(tmp_path, lines))
    assert_sane_goodput(r)
    assert r.acc.buckets["hung"] == 0, r.acc.buckets
    assert all(f.kind != "no_progress" for f in r.findings)

    # a real stall (30 min with no progress between two lines 10 iterations apart) is still a hang
    stalled = [_seg(11 * i, 10 * i) for i in range(1, 30)] + [
        _seg(11 * 29 + 1800 + 11 * i, 290 + 10 * i) for i in range(1, 30)
    ]
    h = goodput(write_log(tmp_path / "stall", stalled))
    assert h.acc.buckets["hung"] > 1700, h.acc.buckets


def test_llamafactory_eval_record_is_no_step_record() -> None:
    # (read as a step record too, the evaluation's time was the training's: a record of a step already read)
    marks, _ = scan_line(_lf(500, 1767, total=6750, eval_loss=1.641), 1, "trainer_log.jsonl")
    assert [(m.row, m.kind, m.step) for m in marks] == [("llamafactory_jsonl_eval", "eval_end", 500)]
    marks, _ = scan_line(_lf(500, 1547, total=6750, loss=1.6, lr=5e-05), 1, "trainer_log.jsonl")
    assert [(m.row, m.kind) for m in marks] == [("llamafactory_jsonl", "step")]
    # an older LLaMA-Factory writes every key in every record, `"eval_loss": null` in the training ones:
    # https://github.com/suzushi-tw/luojiu-7b-base/blob/f6a05a26564c4307e67d84de86bc9855633c7a29/trainer_log.jsonl
    # line 1 (its 1,743 records are all training records: read as evaluations, none was a step)
    old = (
        '{"current_steps": 5, "total_steps": 8712, "loss": 1.7484, "eval_loss": null, "predict_loss": null, '
        '"reward": null, "learning_rate": 4.999995936372264e-05, "epoch": 0.0, "percentage": 0.06, '
        '"elapsed_time": "0:03:29", "remaining_time": "4 days, 5:06:09"}'
    )
    marks, _ = scan_line(old, 1, "trainer_log.jsonl")
    assert [(m.row, m.kind, m.step) for m in marks] == [("llamafactory_jsonl", "step", 5)]


def _d2_saves_only(gap_after_last: float) -> list[str]:
    """A launch cut to its periodic saves (no result lines): 1,000 iterations (680 s) and a 2-s save between
    consecutive ones, then `gap_after_last` seconds to the next events line."""
    lines = [
        f"{_stamp(0)} detectron2 INFO: Rank of current process: 0. World size: 6",
        f"{_stamp(6)} d2.engine.train_loop INFO: Starting training from iteration 0",
    ]
    t = 6.0
    for it in range(19, 1000, 20):
        t += 13.6
        lines.append(_events(t, it))
    t += 13.6
    for k in range(1, 6):
        lines += [
            f"{_stamp(t)} fvcore.common.checkpoint INFO: Saving checkpoint to ./output/model_{k * 1000 - 1:07d}.pth",
            "[... cut ...]",
        ]
        t += 682 if k < 5 else gap_after_last
    return [*lines, _events(t, 5019)]


def test_cut_log_saves_do_not_block_until_the_next_save(tmp_path: Path) -> None:
    # each save's file names its iteration, 1,000 past the one before: those iterations ran between them;
    # before, each save ran on to the next (2,728 s of checkpoint_save, one save `blocked 45 min`, a
    # checkpoint_stall warning)
    r = goodput(write_log(tmp_path, _d2_saves_only(15.6), name="log.txt"))
    assert_sane_goodput(r)
    assert r.acc.buckets["checkpoint_save"] < 20, r.acc.buckets
    assert [c.step for c in r.checkpoints] == [999, 1999, 2999, 3999, 4999]
    assert all(f.kind != "checkpoint_stall" for f in r.findings)


def test_last_save_of_a_launch_is_not_charged_the_gap_to_the_next_launch(tmp_path: Path) -> None:
    # a launch whose last line is a save (no end line), an hour with no process, then a relaunch: the hour is
    # outside any process, not a save
    first = _d2_saves_only(15.6)[:-1]
    t = 6 + 50 * 13.6 + 4 * 682 + 3600
    relaunch = [
        f"{_stamp(t)} detectron2 INFO: Rank of current process: 0. World size: 6",
        f"{_stamp(t + 6)} d2.engine.train_loop INFO: Starting training from iteration 5000",
        *(_events(t + 6 + 13.6 * (i + 1), 5019 + 20 * i) for i in range(10)),
    ]
    r = goodput(write_log(tmp_path, [*first, *relaunch], name="log.txt"))
    assert_sane_goodput(r)
    assert len(r.acc.attempts) == 2
    assert r.acc.buckets["checkpoint_save"] < 20 and r.acc.buckets["unexplained"] >= 3550, r.acc.buckets
    assert all(f.kind != "checkpoint_stall" for f in r.findings)


def _hybrid(t: int, world: int) -> str:
    # PaddlePaddle's fleet start-up line (the format of
    # https://github.com/intflow/PaddleDetection_oad/blob/e2b4c2494f4a15ec441ce621fab9ac068492de15/log/workerlog.0)
    stamp = datetime(2021, 11, 23, 20, 45, 25) + timedelta(seconds=t)
    return (
        f"[{stamp:%Y-%m-%d %H:%M:%S},140] [    INFO] topology.py:215 - HybridParallelInfo: rank_id: 0, mp_degree: 1, "
        f"sharding_degree: 1, pp_degree: 1, dp_degree: {world}, mp_group: [0],  sharding_group: [0], pp_group: [0], "
        "dp_group: [0, 1], check/clip group: [0]"
    )


def test_relaunch_whose_first_line_is_its_first_log_interval_ran_from_step_0(tmp_path: Path) -> None:
    # a launch to iteration 450, then a relaunch with no resume line whose first line is `iter: 10` (PaddleSeg
    # logs every 10): it started from iteration 0, so all 450 were redone, a count, not a bound (before:
    # "at least 441", the relaunch taken to resume at iteration 9 at the latest)
    first = [_hybrid(0, 2), *(_seg(16 + 11 * i, 10 * i) for i in range(1, 46))]
    t = 16 + 11 * 45 + 77
    second = [_hybrid(t, 2), *(_seg(t + 16 + 11 * i, 10 * i) for i in range(1, 80))]
    r = goodput(write_log(tmp_path, [*first, *second]))
    assert_sane_goodput(r)
    assert len(r.acc.attempts) == 2, [(a.first_step, a.last_step) for a in r.acc.attempts]
    assert (r.acc.steps_redone, r.acc.redone_is_bound) == (450, False)


# https://github.com/HaowenGuan/NYU-Semi-Supervise-Object-Detection/blob/150add2fbb950984496aa4c958b6eb863beb2b14/
# output/log_supervised_lr_0.040_balance.txt lines 878-881, 928, 957, 1008-1010, 1011-1012 (each events line
# shortened at its losses: `..`): the save after iteration 999, the EvalHook's inference (143 s) and COCOeval
# (32 s), then training again
_D2_BALANCE = [
    "[11/19 09:06:03] d2.utils.events INFO:  eta: 20:52:15  iter: 939  total_loss: 0.1646 ..  time: 0.6831  "
    "data_time: 0.0710  lr: 0.03878  max_mem: 11811M",
    "[11/19 09:06:17] d2.utils.events INFO:  eta: 20:52:09  iter: 959  total_loss: 0.1647 ..  time: 0.6831  "
    "data_time: 0.0661  lr: 0.03918  max_mem: 11811M",
    "[11/19 09:06:30] d2.utils.events INFO:  eta: 20:51:38  iter: 979  total_loss: 0.1607 ..  time: 0.6828  "
    "data_time: 0.0770  lr: 0.03958  max_mem: 11811M",
    "[11/19 09:06:44] fvcore.common.checkpoint INFO: Saving checkpoint to ../../output/supervised/model_0000999.pth",
    "[11/19 09:06:46] d2.evaluation.evaluator INFO: Start inference on 3334 batches",
    "[11/19 09:09:09] d2.evaluation.evaluator INFO: Total inference time: 0:02:16.985997 (0.041149 s / iter per "
    "device, on 6 devices)",
    "[11/19 09:09:41] d2.evaluation.testing INFO: copypaste: Task: bbox",
    "[11/19 09:09:41] d2.evaluation.testing INFO: copypaste: AP,AP50,AP75,APs,APm,APl",
    "[11/19 09:09:41] d2.evaluation.testing INFO: copypaste: 14.8034,28.8891,13.3763,1.1741,5.6752,18.1768",
    "[11/19 09:19:35] d2.utils.events INFO:  eta: 20:54:55  iter: 1019  total_loss: 0.163 ..  time: 0.6953  "
    "data_time: 0.5769  lr: 0.04  max_mem: 11813M",
    "[11/19 09:19:49] d2.utils.events INFO:  eta: 20:52:25  iter: 1039  total_loss: 0.1669 ..  time: 0.6855  "
    "data_time: 0.0671  lr: 0.04  max_mem: 11813M",
]


def test_detectron2_real_evaluation_runs_to_its_results(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path, _D2_BALANCE, name="log.txt"))
    assert_sane_goodput(r)
    # 09:06:46 -> 09:09:41 (before: to 09:09:09, 143 s, the 32 s of COCOeval left to the stretch after it)
    assert r.acc.buckets["evaluation"] == 175, r.acc.buckets
    assert r.acc.buckets["checkpoint_save"] == 2
    assert [c.step for c in r.checkpoints] == [999]
    # after the results (line 1010) the next line is the events line of 1,019 (line 1011), 594 s later: 20
    # iterations (1,000-1,019: 980-999 ran before model_0000999.pth was saved, in the 14 s after iter 979) at
    # the median 0.683 s are 13.7 s of it; the rest (580.3 s) has no line in the real log either
    # (the excerpt leaves out only lines 958-1007, COCOeval's tables before the results). Two log intervals
    # are no cut (cut_stretches.CUT_MIN_INTERVALS), so this is a stall past HANG_MIN_S, as on main; the
    # events line's data_time 0.58 s (0.07 s before) hints at the input pipeline restarting after the
    # evaluation, which no line states
    assert abs(r.acc.buckets["hung"] - 580.3) < 1, r.acc.buckets
    assert any(f.kind == "no_progress" for f in r.findings)


# --- the counter-cases of the review of these changes (each read wrongly before its fix) --------------------


def test_detectron2_results_alone_after_a_cut_are_no_evaluation(tmp_path: Path) -> None:
    # iterations 19..979, then (cut) 49,000 iterations and 49 evaluations, then only the last evaluation's
    # `copypaste:` lines and the events lines from 50,019: with no evaluation, save or result line open, the
    # results say when they were printed, not that the 11.6 h since iteration 979 were an evaluation (before:
    # evaluation 41,895 s, goodput 3.1%; main 80.6%, the excess over the steady pace a hang as here)
    lines, t = [f"{_stamp(0)} d2.engine.train_loop INFO: Starting training from iteration 0"], 0.0
    for it in range(19, 1000, 20):
        t += 13.6
        lines.append(_events(t, it))
    t += 49000 * 0.68 + 49 * 175
    lines += [
        "[... cut ...]",
        f"{_stamp(t)} d2.evaluation.testing INFO: copypaste: Task: bbox",
        f"{_stamp(t)} d2.evaluation.testing INFO: copypaste: AP,AP50,AP75,APs,APm,APl",
        f"{_stamp(t)} d2.evaluation.testing INFO: copypaste: 10.9,22.4,9.2,1.1,4.8,13.6",
    ]
    for it in range(50019, 51000, 20):
        t += 13.6
        lines.append(_events(t, it))
    r = goodput(write_log(tmp_path, lines, name="log.txt"))
    assert_sane_goodput(r)
    assert r.acc.buckets["evaluation"] == 0, r.acc.buckets
    assert 0.79 < r.acc.buckets["productive"] / r.acc.wall_s < 0.82, r.acc.buckets
    assert r.acc.steps_completed == 50999


def _mmengine(t: float, text: str) -> str:
    return f"{datetime(2024, 3, 1, 10, 0, 0) + timedelta(seconds=t):%Y/%m/%d %H:%M:%S} - mmengine - INFO - {text}"


def test_healthy_early_stop_with_eta_left_stays_completed(tmp_path: Path) -> None:
    # MMEngine's EarlyStoppingHook ends an epoch-based run at epoch 8 of 50 (`eta: 2:55:00` at its last line),
    # then torchrun's agent says the worker group finished: a run that ended as it chose to (before:
    # interrupted, torchrun's line read as "the loop's summary"). Lines in the format of MMEngine's
    # LoggerHook (`Epoch(train) [8][500/500] ... eta: ...`) and torchrun's elastic agent
    lines, t = [], 0.0
    for ep in range(1, 9):
        for i in range(50, 501, 50):
            t += 25
            left = timedelta(seconds=int(((50 - ep) * 500 + 500 - i) * 0.5))
            lines.append(
                _mmengine(
                    t,
                    f"Epoch(train)  [{ep}][{i:3d}/500]  lr: 1.0000e-02  eta: {left}  time: 0.5000  data_time: 0.0100  "
                    "memory: 3000  loss: 0.5000",
                )
            )
        lines.append(_mmengine(t, f"Saving checkpoint at {ep} epochs"))
        t += 30
        lines.append(
            _mmengine(t, f"Epoch(val) [{ep}][50/50]    accuracy/top1: 70.0000  data_time: 0.0100  time: 0.1000")
        )
    lines += [
        _mmengine(t, "the monitored metric did not improve in the last 5 records. best score: 70.000. "),
        f"[{datetime(2024, 3, 1, 10, 0, 0) + timedelta(seconds=t + 2):%Y/%m/%d %H:%M:%S}] INFO "
        "torch.distributed.elastic.agent.server.api: [default] worker group successfully finished. Waiting 300 "
        "seconds for other agents to finish.",
    ]
    (a,) = goodput(write_log(tmp_path, lines, name="train.log")).acc.attempts
    assert a.ended == "completed", a.end_evidence
    # detectron2's own summary after an events line still 18 h from its end stays interrupted
    d2, t = _d2_run(1)
    d2 += [f"{_stamp(t + 14)} d2.engine.hooks INFO: Total training time: 0:14:03 (0:03:41 on hooks)"]
    (b,) = goodput(write_log(tmp_path / "d2", d2, name="log.txt")).acc.attempts
    assert b.ended == "interrupted", b.end_evidence


def test_a_stall_in_a_log_every_1000_iterations_is_a_hang(tmp_path: Path) -> None:
    # PaddleSeg logging every 1,000 iterations at 4 s each, one interval 390 s late: one log interval is no cut,
    # its stall is a hang (before: productive, 100%, no finding)
    lines = [_seg(4000 * k + (390 if k >= 10 else 0), 1000 * k, total=40000) for k in range(1, 21)]
    r = goodput(write_log(tmp_path, lines))
    assert_sane_goodput(r)
    assert abs(r.acc.buckets["hung"] - 390) <= 1, r.acc.buckets


def test_a_cut_far_off_the_steady_pace_is_not_work(tmp_path: Path) -> None:
    # 20,000 iterations cut out that took 26,000 s (1.3 s each against the steady 1.10 s): 4,000 s past the
    # pace is more than its noise; not read as work
    lines = [_seg(11 * i, 10 * i) for i in range(1, 30)]
    lines.append("[... cut ...]")
    lines += [_seg(11 * 29 + 26000 + 11 * i, 290 + 20000 + 10 * i) for i in range(0, 30)]
    r = goodput(write_log(tmp_path, lines))
    assert_sane_goodput(r)
    assert r.acc.buckets["hung"] + r.acc.buckets["unexplained"] >= 3900, r.acc.buckets


def test_detectron2_final_save_pair_is_one_save(tmp_path: Path) -> None:
    # MAX_ITER 3,000 a multiple of CHECKPOINT_PERIOD 1,000: PeriodicCheckpointer saves model_0002999.pth, then
    # model_final.pth (2 s each), then the events line of 2,999: one save of two files, 2 s measured to its
    # last file line (no end line says when the second file was written; before:
    # model_final.pth took the step of the events line before it, 2,979: a fourth save, and the blocked time
    # and the checkpoint cost unknown)
    lines, t = _d2_run(2)
    for it in range(2019, 2980, 20):  # (to 2,979: the events line of 2,999 comes after the hooks)
        t += 13.6
        lines.append(_events(t, it, eta=f"0:{int((2999 - it) * 0.68) // 60:02d}:{int((2999 - it) * 0.68) % 60:02d}"))
    t += 13.6
    lines += [
        f"{_stamp(t)} fvcore.common.checkpoint INFO: Saving checkpoint to ./output/model_0002999.pth",
        f"{_stamp(t + 2)} fvcore.common.checkpoint INFO: Saving checkpoint to ./output/model_final.pth",
        _events(t + 4, 2999, eta="0:00:00"),
        f"{_stamp(t + 4)} d2.engine.hooks INFO: Total training time: 0:38:03 (0:06:41 on hooks)",
    ]
    r = goodput(write_log(tmp_path, lines, name="log.txt"))
    assert_sane_goodput(r)
    assert [c.step for c in r.checkpoints] == [999, 1999, 2999]
    assert r.checkpoints[-1].blocking_s == 2, r.checkpoints
    assert r.cadence.checkpoint_cost_s is not None


def test_llamafactory_eval_between_logging_steps_counts_the_steps_before_it(tmp_path: Path) -> None:
    # logging every 10 steps, evaluating every 25 (3.2 s a step, 220 s an evaluation): the eval record at step
    # 25 is past the last training record (20); the 5 steps between ran before the evaluation (before: charged
    # to it, evaluation 48.8 min and productive 11.2 min against 44.0 and 16.0)
    lines, t = [], 0.0
    for step in range(1, 301):
        t += 3.2
        if step % 25 == 0:
            t += 220
            lines.append(_lf(step, int(t), eval_loss=1.5))
        if step % 10 == 0:
            lines.append(_lf(step, int(t), loss=1.6, lr=5e-05))
    lines.append(_lf(300, int(t)))
    r = goodput(write_log(tmp_path, lines, name="trainer_log.jsonl"))
    assert_sane_goodput(r)
    assert abs(r.acc.buckets["evaluation"] - 12 * 220) <= 12, r.acc.buckets
    assert abs(r.acc.buckets["productive"] - 300 * 3.2) <= 12, r.acc.buckets


def test_llamafactory_eval_after_the_closing_record_is_evaluation(tmp_path: Path) -> None:
    # do_eval: trainer.evaluate() once train() returned, its record 220 s after the closing one (before: 220 s
    # unexplained)
    lines, t = [], 0
    for step in range(10, 301, 10):
        t += 32
        lines.append(_lf(step, t, loss=1.6, lr=5e-05))
    lines += [_lf(300, t), _lf(300, t + 220, eval_loss=1.55)]
    r = goodput(write_log(tmp_path, lines, name="trainer_log.jsonl"))
    assert_sane_goodput(r)
    assert r.acc.buckets["evaluation"] == 220 and r.acc.buckets["unexplained"] == 0, r.acc.buckets
    assert [a.ended for a in r.acc.attempts] == ["completed"]


def test_llamafactory_eval_record_of_a_diverged_loss_is_an_evaluation() -> None:
    # json.dumps writes a float that is no number as NaN, Infinity or -Infinity
    for value in ("Infinity", "-Infinity", "NaN"):
        rec = _lf(500, 1767, total=6750, eval_loss=1.0).replace('"eval_loss": 1.0', f'"eval_loss": {value}')
        marks, _ = scan_line(rec, 1, "trainer_log.jsonl")
        assert [(m.row, m.kind, m.step) for m in marks] == [("llamafactory_jsonl_eval", "eval_end", 500)], value


def test_relaunch_from_its_first_log_interval_stays_a_bound_after_a_save_below_it(tmp_path: Path) -> None:
    # CHECKPOINT_PERIOD 10 logging every 20: the first launch saved model_0000009.pth before its first events
    # line (19); a relaunch with no `Starting training` line whose first line is iteration 19 may have resumed
    # from that save, so the steps redone are a lower bound (before: a count from iteration 0)
    first = [f"{_stamp(0)} detectron2 INFO: Rank of current process: 0. World size: 6"]
    t = 6.0
    for it in range(19, 400, 20):
        t += 13.6
        first += [
            f"{_stamp(t - 6.8)} fvcore.common.checkpoint INFO: Saving checkpoint to ./output/model_{it - 10:07d}.pth",
            _events(t, it),
        ]
    t += 600
    second = [f"{_stamp(t)} detectron2 INFO: Rank of current process: 0. World size: 6"]
    second += [_events(t + 6 + 13.6 * (i + 1), 19 + 20 * i) for i in range(30)]
    r = goodput(write_log(tmp_path, [*first, *second], name="log.txt"))
    assert_sane_goodput(r)
    assert len(r.acc.attempts) == 2
    assert r.acc.redone_is_bound, (r.acc.steps_redone, r.acc.redone_is_bound)


def test_an_attempts_own_ideal_step_time_is_not_the_next_attempts() -> None:
    """Attempt 0 measured against its own 0.5 s, attempt 1 (no ideal of its own) against the job's 1.0 s: its
    100 steps in 100 s across a cut are its steady pace, all productive (the 0.5 s leaked from the interval
    before split off 50 s as unexplained)."""
    cut0 = Interval(0.0, 50.0, "productive", 0, steps=100)
    cut1 = Interval(60.0, 160.0, "productive", 1, steps=100)
    out = unlogged_in_cuts([cut0, cut1], every=10, ideal=1.0, ideals={0: 0.5})
    got = [(iv.attempt, iv.bucket, iv.end - iv.start) for iv in out]
    assert got == [(0, "productive", 50.0), (1, "productive", 100.0)]
