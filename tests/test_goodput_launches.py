"""Launches in real training logs (heldout5's, sources in tests/data/goodput/README.md), one test a class:
a launch that never reaches a step is an attempt of its own; the time between two complete jobs in one
log is between_jobs, not the job's; a relaunch from scratch after Ctrl-C is a new run whose earlier steps
are discarded, not redone (after a failure it redoes them: test_goodput_relaunch_ends.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from scope.analyzers.goodput import goodput
from scope.analyzers.goodput.formats.startup import ROWS

from tests.helpers import assert_sane_goodput, write_log

_TT = "[rank0]:[titan] 2026-05-11 {} - root - INFO - "
_TT_STEP = "step: {}  loss:  0.72776  grad_norm:  0.0659  memory: 13.38GiB(42.66%)  tps: 547  tflops: 4.09  mfu: 1.31%"
_OMP = (
    "W0511 {} {} torch/distributed/run.py:803] Setting OMP_NUM_THREADS environment variable for each process to be "
    "1 in default, to avoid your system being overloaded, please further tune the variable for optimal performance"
)
_CKPT = "/root/torchtitan_attention_residual/phase5/runs/vlm_447m_sft_3ep/checkpoint/step-5500."
_KILLED = (
    "/root/torchtitan_attention_residual/phase6/launch_8gpu_mm.sh: line 258: {} Killed                  torchrun "
    '--nproc_per_node="$NGPU" --rdzv_backend=c10d --rdzv_endpoint=localhost:0 --role rank --tee 3 -m phase5.train_mm'
)
# QIU023/torchtitan_attention_residual's auto-retry wrapper log: session B's last steps, session C's torchrun
# started and killed with B's before any step, session D killed while it loaded a checkpoint (13 min of
# silence), session E loading the same checkpoint and training on
TORCHTITAN_RETRY = [
    _TT.format("08:18:44,183") + _TT_STEP.format(5529),
    _TT.format("08:18:51,676") + _TT_STEP.format(5530),
    "=== launch_8gpu_mm.sh ===",
    _TT.format("08:18:58,859") + _TT_STEP.format(5531),
    _OMP.format("08:18:59.185000", 1922528),
    _KILLED.format(1922528),
    '     1922529 Done                    | tee "$OUT_DIR/train.log"',
    _KILLED.format(1916131),
    "[Mon May 11 09:05:03 AM UTC 2026] ATTEMPT #1 seed=43 RESUME from /root/torchtitan_attention_residual/phase5",
    _OMP.format("09:05:04.350000", 1931841),
    _TT.format("09:05:24,334") + "Loading the checkpoint from " + _CKPT,
    "[Mon May 11 09:18:13 AM UTC 2026] ATTEMPT #1 seed=43 RESUME from /root/torchtitan_attention_residual/phase5",
    _OMP.format("09:18:15.027000", 1935665),
    _TT.format("09:18:37,992") + "Loading the checkpoint from " + _CKPT,
    _TT.format("09:18:41,900") + "Finished loading the checkpoint in 3.91 seconds.",
    _TT.format("09:18:41,900") + "Training starts at step 5501",
    _TT.format("09:18:48,924") + _TT_STEP.format(5501),
    _TT.format("09:18:53,295") + _TT_STEP.format(5502),
    _TT.format("09:18:57,673") + _TT_STEP.format(5503),
]

_PD_NOTE = (
    "W{} {} device_context.cc:{}] Please NOTE: device: 0, GPU Compute Capability: 7.0, Driver API Version: 10.1, "
    "Runtime API Version: 10.1"
)
_PD_CACHED = "[{}] [    INFO] - Already cached /home/aistudio/.paddlenlp/models/ernie-1.0/ernie_v1_chn_base.pdparams"
_PD_STEP = "train epoch: 0 - step: {} (total: {}) - loss: 0.225738"
_PD_START = "============start train=========="
# klein-wang/event_element_extraction's workerlog.0 (PaddleNLP): launch 2's last steps, launch 3 stopped with
# Ctrl-C while it built the model, launch 4 stopped with Ctrl-C at step 100, launch 5 from step 0 again
PADDLE_CTRL_C = [
    *(_PD_STEP.format(s, 590) for s in (560, 570, 580)),
    _PD_CACHED.format("2021-05-19 15:05:56,227"),
    _PD_NOTE.format("0519", "15:05:56.228232 12662", 404),
    "Traceback (most recent call last):",
    '  File "classifier.py", line 338, in <module>',
    "    self_tensor_np = self.numpy()",
    "KeyboardInterrupt",
    _PD_CACHED.format("2021-05-19 15:06:44,075"),
    _PD_NOTE.format("0519", "15:06:44.077005 12903", 404),
    _PD_START,
    *(_PD_STEP.format(s, 2950) for s in range(10, 101, 10)),
    "Traceback (most recent call last):",
    '  File "sequence_labeling.py", line 207, in do_train',
    "    loss.backward()",
    "    framework._dygraph_tracer())",
    "KeyboardInterrupt",
    _PD_CACHED.format("2021-05-19 15:07:51,532"),
    _PD_NOTE.format("0519", "15:07:51.533774 13143", 404),
    _PD_START,
    *(_PD_STEP.format(s, 1770) for s in (10, 20, 30)),
]
# the same log months later: launch 7 gone silent after its start, launch 8 (15 h later) likewise, launch 9
# (4 h later) training from step 0
PADDLE_SILENT = [
    "[2021-06-23 18:18:12,147] [    INFO] - Downloading ernie_v1_chn_base.pdparams from https://paddlenlp.bj.bcebos.com",
    _PD_NOTE.format("0623", "18:18:20.702592   353", 362),
    _PD_START,
    _PD_CACHED.format("2021-06-24 09:38:06,214"),
    _PD_NOTE.format("0624", "09:38:06.215610   491", 362),
    _PD_START,
    "[2021-06-24 13:53:43,159] [    INFO] - Downloading ernie_v1_chn_base.pdparams from https://paddlenlp.bj.bcebos.com",
    _PD_NOTE.format("0624", "13:53:53.060542  1545", 362),
    _PD_START,
    *(_PD_STEP.format(s, 627) for s in (10, 20, 30)),
]

_LSF_SUBMIT = "Job <WorkingSetup_0> was submitted from host <gbarlogin2> by user <s230208> in cluster <dcc> at {}"


def _lsf_report(job: int, how: str, started: str, ended: str, submitted: str, times: tuple[int, int]) -> list[str]:
    """LSF's job report (Deep_learning_2023's WorkingSetup_0.md), printed after the job's output."""
    return [
        "------------------------------------------------------------",
        "Sender: LSF System <lsfadmin@hpc.dtu.dk>",
        f"Subject: Job {job}: <WorkingSetup_0> in cluster <dcc> {'Done' if how[0] == 'S' else 'Exited'}",
        _LSF_SUBMIT.format(submitted),
        f"Started at {started}",
        f"Terminated at {ended}",
        f"Results reported at {ended}",
        how,
        "Resource usage summary:",
        f"    Run time :                                   {times[0]} sec.",
        f"    Turnaround time :                            {times[1]} sec.",
        "The output (if any) is above this job summary.",
    ]


# MrCogito/Deep_learning_2023's LSF output: job 1 crashed at start-up (its traceback, then LSF's report), job
# 5, the resubmission, trained (three of its 650 epoch lines) and completed
LSF_JOBS = [
    "# Output",
    "Traceback (most recent call last):",
    '  File "/zhome/59/9/198225/Desktop/Deep_learning_2023/Deep_learning_2023/main.py", line 98, in <module>',
    "FileNotFoundError: [Errno 2] No such file or directory: 'outputs/1WorkingSetup/1WorkingSetup-0/'",
    *_lsf_report(
        19629902,
        "Exited with exit code 1.",
        "Thu Nov 30 13:23:37 2023",
        "Thu Nov 30 13:26:16 2023",
        "Thu Nov 30 11:34:38 2023",
        (159, 6698),
    ),
    "# Output",
    "wandb: Currently logged in as: mrcogito (deeplearning_painn). Use `wandb login --relogin` to force relogin",
    "Epoch [1/650], Train Loss: 0.1746, Train L1 Loss: 1.9826",
    "Epoch [1/650], Validation Loss: 0.0714, Validation L1: 1.7551, Smoothed Validation Loss: 0.0714",
    "Epoch [2/650], Train Loss: 0.0586, Train L1 Loss: 1.5459",
    "Epoch [2/650], Validation Loss: 0.0697, Validation L1: 1.7230, Smoothed Validation Loss: 0.0713",
    "Epoch [3/650], Train Loss: 0.0547, Train L1 Loss: 1.4923",
    *_lsf_report(
        19630794,
        "Successfully completed.",
        "Thu Nov 30 16:58:59 2023",
        "Fri Dec  1 04:27:09 2023",
        "Thu Nov 30 13:59:43 2023",
        (41291, 52046),
    ),
]

# launch 5's last lines (its steps have no time), then launch 6 an hour later, counting from step 1
PADDLE_NEXT_RUN = [
    _PD_NOTE.format("0519", "15:07:51.533774 13143", 404),
    _PD_START,
    *(_PD_STEP.format(s, 1770) for s in (10, 20, 1750, 1760)),
    _PD_CACHED.format("2021-05-19 16:15:03,060"),
    _PD_NOTE.format("0519", "16:15:03.061208 24675", 404),
    "[2021-05-19 16:15:09,241] [    INFO] - Found /home/aistudio/.paddlenlp/models/ernie-1.0/vocab.txt",
    _PD_START,
    *(f"train epoch: 0 - step: {s} (total: 81) - loss: 1.816590 acc 0.00000" for s in (1, 2, 3)),
]

_MEGATRON_ITER = (
    " iteration        {}/       3 | consumed samples:           16 | elapsed time per iteration (ms): 15165.9 | "
    "learning rate: 2.000E-07 | global batch size:    16 | lm loss: 1.263599E+01 | loss scale: 1.0 |"
)


def _megatron_run(day: int) -> list[str]:
    """stark-sim/megatron-deepspeed-lock-clock's qwen7b_baseline_500 run (its launch, start and end lines),
    three iterations of it, on 2025-12-`day`: a complete run of its own."""
    return [
        _OMP.format("19:29:33.885000", 3154626).replace("W0511", f"W12{day}"),
        f"[before the start of training step] datetime: 2025-12-{day} 19:30:22 ",
        *(_MEGATRON_ITER.format(i) for i in (1, 2, 3)),
        f"[after training is done] datetime: 2025-12-{day} 19:31:08 ",
    ]


def test_every_startup_row_reads_its_own_line() -> None:
    lines = {
        "torchrun_omp_banner": _OMP.format("08:18:59.185000", 1),
        "paddle_device_note": _PD_NOTE.format("0519", "13:59:30.552155  1264", 404),
        "paddle_nccl_init": (
            "I0519 13:59:30.213507  1264 nccl_context.cc:83] init nccl context nranks: 2 local rank: 0 gpu id: 0"
        ),
        "lsf_started": "Started at Thu Nov 30 13:23:37 2023",
        "lsf_done": "Successfully completed.",
        "lsf_exited": "Exited with exit code 1.",
        "lsf_term_stop": "TERM_OWNER: job killed by owner.",
        "lsf_term_failure": "TERM_MEMLIMIT: job killed after reaching LSF memory usage limit.",
        "lsf_run_time": "    Run time :                                   159 sec.",
        "lsf_turnaround": "    Turnaround time :                            6698 sec.",
    }
    for row in ROWS:
        assert row.source.startswith("https://") and row.regex.search(lines[row.name]), row.name


def test_launches_that_never_reach_a_step_are_attempts(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path, TORCHTITAN_RETRY))
    assert_sane_goodput(r)
    a = r.acc.attempts
    assert len(a) == 4, [(x.first_step, x.last_step, x.ended) for x in a]
    assert [(x.first_step, x.last_step) for x in a] == [(5529, 5531), (None, None), (None, None), (5501, 5503)]
    # C killed with B's torchrun (the shell's `Killed` lines); D silent for 13 min while it loaded, then E:
    # no line says how D ended
    assert [x.ended for x in a] == ["restarted", "failed", "restarted", "running"]
    # B's steps past the checkpoint E loads are redone though two launches came between
    assert r.acc.steps_redone == 31 and not r.acc.redone_is_bound
    # from C's kill to D's start (08:18:59.185 -> 09:05:04.350) the restart; from D's load to E's start
    # (09:05:24.334 -> 09:18:15.027) unexplained; nothing queued (no line says the job waited)
    assert r.acc.buckets["failure_to_restart"] == pytest.approx(2765.165, abs=1.0)
    assert r.acc.buckets["unexplained"] == pytest.approx(770.693, abs=1.0)
    assert r.acc.buckets["queued"] == 0
    assert not any(f.kind == "restart_slow" for f in r.findings)  # (neither launch reached a step)


def test_a_job_that_crashed_in_start_up_under_lsf_is_an_attempt(tmp_path: Path) -> None:
    # LSF prints each job's report after its output: the job's start is where its output begins
    r = goodput(write_log(tmp_path, LSF_JOBS))
    a = r.acc.attempts
    assert [(x.first_step, x.last_step, x.ended) for x in a] == [(None, None, "failed"), (1, 3, "completed")]
    assert a[0].end is not None and a[0].start is not None and a[0].end - a[0].start == pytest.approx(159.0)
    # (LSF's report says run time 41291 s)
    assert a[1].start is not None and a[1].end is not None and a[1].end - a[1].start == pytest.approx(41290.0)
    # from job 1's submission (its turnaround less its run time before its start) to job 5's end: each
    # job's wait in the queue is queued, the time from job 1's failure to job 5's submission the restart
    assert r.wall_s == pytest.approx(
        (6698 - 159) + 159 + (16 * 3600 + 58 * 60 + 59 - (13 * 3600 + 26 * 60 + 16)) + 41290
    )
    assert r.acc.buckets["queued"] == pytest.approx((6698 - 159) + (52046 - 41291))
    assert r.acc.buckets["failure_to_restart"] == pytest.approx(13 * 3600 + 59 * 60 + 44 - (13 * 3600 + 26 * 60 + 16))
    assert not any("stepped back" in w for w in r.warnings)  # (the report's times are its own job's)
    # a report cut before its end line: the next job's start is still read where its own output begins
    cut = goodput(write_log(tmp_path / "cut", [ln for ln in LSF_JOBS if not ln.startswith("Exited with")]))
    assert [(x.first_step, x.last_step) for x in cut.acc.attempts] == [(None, None), (1, 3)]


def test_a_relaunch_from_scratch_after_ctrl_c_discards_and_never_redoes(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path, PADDLE_CTRL_C))
    a = r.acc.attempts
    assert len(a) == 4, [(x.first_step, x.last_step, x.ended) for x in a]
    # launch 2 reached its plan (580 of 590, a line every 10 steps); launch 3 stopped by Ctrl-C before a
    # step is an attempt; Ctrl-C's traceback is no failure
    assert [x.ended for x in a[:3]] == ["completed", "interrupted", "interrupted"] and a[1].first_step is None
    assert r.to_dict()["failures"] == 0
    assert r.acc.steps_redone == 0 and r.acc.buckets["redone"] == 0
    # launch 4's 100 steps are left behind by the user's new run from step 0 (a completed run leaves none)
    assert r.acc.steps_discarded == 100
    out = r.to_dict()
    assert out["steps_discarded"] == 100


def test_the_time_between_two_jobs_is_not_the_jobs(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path, PADDLE_SILENT))
    a = r.acc.attempts
    # each launch silent after its start, then another process's start line hours later: no line says how
    # it ended, so the hours after it are unexplained, never between jobs
    assert [x.ended for x in a] == ["restarted", "restarted", "running"]
    assert r.acc.buckets["between_jobs"] == 0 and r.acc.buckets["failure_to_restart"] == 0
    assert r.acc.buckets["unexplained"] == pytest.approx(15 * 3600 + 19 * 60 + 46 + 4 * 3600 + 15 * 60 + 47, abs=30)

    # a run whose lines carry no time, then another an hour after it started: when the first ended is not
    # known, so the hour is unexplained, no slow restart (nor a failure to restart from)
    r = goodput(write_log(tmp_path / "next", PADDLE_NEXT_RUN))
    assert len(r.acc.attempts) == 2 and r.acc.steps_redone == 0 and r.acc.steps_discarded == 0
    assert r.acc.buckets["failure_to_restart"] == 0 and r.acc.buckets["unexplained"] > 3000
    assert not any(f.kind == "restart_slow" for f in r.findings)

    # two complete runs three days apart in one log: the days between are neither run's
    one = goodput(write_log(tmp_path / "one", _megatron_run(22)))
    two = goodput(write_log(tmp_path / "two", _megatron_run(22) + _megatron_run(25)))
    assert_sane_goodput(two)
    assert [x.ended for x in two.acc.attempts] == ["completed", "completed"]
    assert two.acc.buckets["between_jobs"] == pytest.approx(3 * 86400 - 95, abs=5)
    assert two.goodput_pct == pytest.approx(one.goodput_pct, abs=1.0)
    assert two.acc.steps_redone == 0 and two.acc.steps_discarded == 0


def test_the_dashboard_says_what_was_discarded_and_what_was_between_jobs(tmp_path: Path) -> None:
    from scope.app.pages.goodput import _summary_facts

    facts = dict(_summary_facts(goodput(write_log(tmp_path, _megatron_run(22) + _megatron_run(25))).result()))
    assert "between jobs" in str(facts["goodput"])
    facts = dict(_summary_facts(goodput(write_log(tmp_path / "ctrl-c", PADDLE_CTRL_C)).result()))
    assert facts["steps discarded (a relaunch from scratch)"] == 100
