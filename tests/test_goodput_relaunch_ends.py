"""How one attempt ended decides what its relaunch means (tests/data/goodput/README.md names each log): a
relaunch from step 0 after a failure, a preemption or a silence redoes every step, and only a run that
completed (or that the user stopped) is followed by a new run; a silence says nothing of how an attempt
ended; a start-up line repeated with nothing between, by another rank, or by a program launched beside the
job is no relaunch; a run that reached its planned steps completed; LSF's TERM_* reason decides its end."""

from __future__ import annotations

from pathlib import Path

import pytest
from scope.analyzers.goodput import goodput
from scope.analyzers.goodput.report import GoodputReport

from tests.helpers import assert_sane_goodput, write_log

DATA = Path(__file__).parent / "data" / "goodput"


def _run(name: str) -> GoodputReport:
    r = goodput(DATA / name)
    assert_sane_goodput(r)
    return r


def test_a_relaunch_from_scratch_after_a_crash_or_a_preemption_redoes_every_step() -> None:
    r = _run("torchtitan_crash_relaunch_from_scratch.log")
    assert [a.ended for a in r.acc.attempts] == ["failed", "completed"]
    # the crash lost all 25 steps: run again from step 1, none of them productive, none discarded
    assert r.acc.steps_redone == 25 and r.acc.steps_completed == 10 and r.acc.steps_discarded == 0
    assert r.goodput_pct == pytest.approx(17.7, abs=0.1)
    assert any(f.kind == "rollback_loss" for f in r.findings)

    r = _run("torchtitan_preempt_from_scratch.log")
    assert [a.ended for a in r.acc.attempts] == ["stopped", "completed"]
    assert r.acc.steps_redone == 70 and r.acc.steps_completed == 50
    # the requeue's wait is the job's (queued), not time between two jobs
    assert r.acc.buckets["between_jobs"] == 0 and r.acc.buckets["queued"] == pytest.approx(3005.0)
    assert r.goodput_pct < 2.0


def test_a_silence_before_a_start_up_line_is_an_unknown_end() -> None:
    r = _run("torchtitan_silent_hang_resume.log")
    assert [a.ended for a in r.acc.attempts] == ["restarted", "completed"]
    assert r.to_dict()["failures"] == 1
    # 12:01:50 (its last line) -> 12:52:00 (the relaunch's start): no line says what happened
    assert r.acc.buckets["unexplained"] == pytest.approx(3010.0)
    assert r.acc.buckets["queued"] == 0 and r.acc.buckets["between_jobs"] == 0
    assert any(f.kind == "restart_slow" for f in r.findings)

    r = _run("torchtitan_silent_hang_from_scratch.log")
    assert r.acc.buckets["between_jobs"] == 0 and r.acc.steps_redone == 70
    # the relaunch from step 1 after 50 min of silence mid-run: nothing shows the launch had ended (no end
    # line, no save or epoch end last): unexplained, as before a resume, not down time (queued)
    assert r.acc.buckets["unexplained"] == pytest.approx(3010.0) and r.acc.buckets["queued"] == 0
    assert r.goodput_pct < 2.0

    # a heartbeat a minute for 30 min: the old process was alive, its lines stay in its attempt
    r = _run("torchtitan_hang_heartbeats_resume.log")
    a = r.acc.attempts
    assert len(a) == 2 and a[0].ended == "restarted" and a[1].marks[0].line == 42
    assert a[0].end is not None and a[1].start is not None and a[1].start - a[0].end == pytest.approx(1210.0)
    assert r.acc.buckets["queued"] == 0


def test_a_start_up_line_repeated_with_nothing_between_is_one_launch() -> None:
    # one torchrun a node, the second node 6.5 min late: its wait in rendezvous is the launch's start-up
    r = _run("torchrun_two_node_start_skew.log")
    assert len(r.acc.attempts) == 1 and r.acc.attempts[0].ended == "completed"
    assert r.acc.buckets["initialization"] == pytest.approx(419.9, abs=0.5)
    assert r.goodput_pct == pytest.approx(54.3, abs=0.1)


def test_another_rank_or_a_program_launched_beside_the_job_is_no_relaunch() -> None:
    r = _run("torchtitan_rank_late_start_line.log")
    assert [a.ended for a in r.acc.attempts] == ["failed", "completed"]
    assert r.to_dict()["failures"] == 1 and r.acc.steps_redone == 5

    r = _run("torchrun_eval_launch_mid_run.log")
    assert [a.ended for a in r.acc.attempts] == ["completed"] and r.to_dict()["failures"] == 0


_PD_STEP = "train epoch: {} - step: {} (total: {}) - loss: 0.225738"
_PD_NOTE = (
    "W0519 {} {} device_context.cc:404] Please NOTE: device: 0, GPU Compute Capability: 7.0, Driver API Version: "
    "10.1, Runtime API Version: 10.1"
)


def test_a_run_that_reached_its_planned_steps_completed(tmp_path: Path) -> None:
    # klein-wang/event_element_extraction's workerlog.0 (PaddleNLP, heldout5): launch 1 logs every 10 steps
    # to 1,810 of 1,814 over two epochs, launch 2 starts from step 0 an hour later: two complete runs
    lines = [
        _PD_NOTE.format("13:59:30.552155", 1264),
        *(_PD_STEP.format(0 if s < 1000 else 1, s, 1814) for s in range(10, 1811, 10)),
        _PD_NOTE.format("15:00:07.102301", 2410),
        *(_PD_STEP.format(0, s, 590) for s in range(10, 101, 10)),
    ]
    r = goodput(write_log(tmp_path, lines))
    a = r.acc.attempts
    assert [(x.first_step, x.last_step, x.ended) for x in a] == [(10, 1810, "completed"), (10, 100, "running")]
    assert r.to_dict()["failures"] == 0 and r.acc.steps_redone == 0 and r.acc.steps_discarded == 0


def _titan(t: str, text: str) -> str:
    return f"[rank0]:[titan] 2023-11-30 {t},000 - root - INFO - {text}"


def _titan_steps(first: int, last: int, start_s: int) -> list[str]:
    """Step lines every 10 s from `start_s` seconds past 10:00:00."""
    out = []
    for i, s in enumerate(range(first, last + 1)):
        h, rest = divmod(start_s + 10 * i, 3600)
        out.append(_titan(f"{10 + h}:{rest // 60:02d}:{rest % 60:02d}", f"step: {s}  loss:  0.7277  tps: 547"))
    return out


def _lsf_report(ended: str, how: list[str], run_s: int, turnaround_s: int, started: str) -> list[str]:
    return [
        "Sender: LSF System <lsfadmin@hpc.dtu.dk>",
        "Subject: Job 1: <train> in cluster <dcc> Exited",
        f"Started at Thu Nov 30 {started} 2023",
        f"Terminated at Thu Nov 30 {ended} 2023",
        *how,
        f"    Run time :                                   {run_s} sec.",
        f"    Turnaround time :                            {turnaround_s} sec.",
        "The output (if any) is above this job summary.",
    ]


def test_an_lsf_run_limit_is_a_stop_and_its_queue_wait_no_restart_time(tmp_path: Path) -> None:
    # job 1 killed at LSF's run-time limit after 360 steps; job 2 waits ~20 min in the queue, loads step 300
    lines = [
        _titan("10:00:00", "Starting job: Llama 3 debug training"),
        _titan("10:00:30", "Training starts at step 1"),
        *_titan_steps(1, 355, 40),
        *_lsf_report(
            "11:00:00",
            ["TERM_RUNLIMIT: job killed after reaching LSF run time limit.", "Exited with exit code 140."],
            3600,
            3700,
            "10:00:00",
        ),
        _titan("11:20:00", "Starting job: Llama 3 debug training"),
        _titan("11:20:10", "Loading the checkpoint from ./outputs/checkpoint/step-300."),
        _titan("11:20:20", "Finished loading the checkpoint in 10.00 seconds."),
        _titan("11:20:30", "Training starts at step 301"),
        *_titan_steps(301, 600, 4840),
        _titan("12:10:40", "Training completed"),
        *_lsf_report("12:10:40", ["Successfully completed."], 3010, 4205, "11:20:00"),
    ]
    r = goodput(write_log(tmp_path, lines))
    a = r.acc.attempts
    assert [a_.ended for a_ in a] == ["stopped", "completed"] and "TERM_RUNLIMIT" in a[0].end_evidence
    assert r.to_dict()["failures"] == 0
    # (4205 - 3010 s of job 2's gap in the queue: the rest, 20 min less that, is no slow restart)
    assert r.acc.buckets["queued"] >= 4205 - 3010 - 1
    assert not any(f.kind == "restart_slow" for f in r.findings)
