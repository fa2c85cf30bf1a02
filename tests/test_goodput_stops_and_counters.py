# ruff: noqa: E501  (log lines are kept whole, as posted)
"""Goodput classes of issue 40 (stop 51), each on a real excerpt named above it: a job stopped from outside by
SLURM (a cancel, its time limit, a preemption) or signalled through Lightning is stopped, not failed; a node
failure stays a failure; litgpt's two counters (iterations of gradient accumulation, optimizer steps); an
evaluation that begins where a line says the epoch's training is done; a test pass's result line ends one;
two JSON-lines writers a record apart in a launch's first minutes are no resume; on every real training log
of ../shared/data, no figure is larger than the log's own span."""

from __future__ import annotations

from pathlib import Path

import pytest
from scope.analyzers.goodput import goodput
from scope.analyzers.goodput.line_marks import parse_clock, scan_line

from scope.render.goodput import render_goodput
from tests.conftest import shared_data
from tests.helpers import assert_sane_goodput, write_log
from tests.test_goodput_training_classes import LLAMAFACTORY_JSONL, VINVL

# https://github.com/ZettaAI/zetta_utils/issues/671 (the last lines of a SLURM job that reached its time limit,
# as the issue quotes them; the node name was left out by the reporter)
SLURM_TIME_LIMIT = [
    "srun: Job step aborted: Waiting up to 47 seconds for job step to finish.",
    "slurmstepd: error: *** JOB 494583 ON ... CANCELLED AT 2024-04-20T09:09:37 DUE TO TIME LIMIT ***",
    "slurmstepd: error: *** STEP 494583.0 ON ... CANCELLED AT 2024-04-20T09:09:37 DUE TO TIME LIMIT ***",
]
# https://github.com/IGNF/myria3d/issues/123 (../shared/data/failure_corpus/IGNF-myria3d_123.txt: `scancel`-like,
# no reason given, after the ranks' own watchdog failure)
SLURM_STEP_CANCELLED = "Preparing test set...:  46%|████▋     | 31/67 [29:02<35:12, 58.67s/it]slurmstepd: error: *** STEP 6053.0 ON DEL2212S020 CANCELLED AT 2024-04-23T12:18:08 ***"
# slurmstepd's other form: the node failed under the job (tests/data/goodput/torchtitan_hang_requeue.log)
SLURM_NODE_FAILURE = (
    "slurmstepd: error: *** JOB 91823 ON gpu-a-017 CANCELLED AT 2025-12-01T12:32:00 DUE TO NODE FAILURE, REQUEUED ***"
)


def _kinds(line: str) -> list[str]:
    marks, _ = scan_line(line, 1, "slurm.out")
    return [m.kind for m in marks if m.kind not in ("step",)]


def test_slurm_cancel_time_limit_and_preemption_are_stops_a_node_failure_a_failure() -> None:
    assert _kinds(SLURM_TIME_LIMIT[1]) == ["stop"] and _kinds(SLURM_TIME_LIMIT[2]) == ["stop"]
    assert _kinds(SLURM_STEP_CANCELLED) == ["stop"]
    assert _kinds(SLURM_NODE_FAILURE) == ["failure"]
    assert _kinds("[rank: 3] Received SIGTERM: 15") == ["stop"]


def test_a_job_cancelled_at_its_time_limit_ends_stopped_not_failed(tmp_path: Path) -> None:
    """The SLURM lines of a time limit after a run's last step (the step lines: Megatron's, timestamped, as
    tests/data/goodput/megatron_lm_slurm_requeue.log writes them, at the cancel's own date): the attempt
    is stopped, the step under way is lost (not productive), and no failure is counted."""
    steps = [
        f" [2024-04-20 09:0{m}:00] iteration       {i}/     100 | consumed samples:        {i * 512} | elapsed time per iteration (ms): 60000.0 | learning rate: 1.000000E-04 | global batch size:   512 | lm loss: 7.1E+00 |"
        for m, i in ((5, 10), (6, 11), (7, 12), (8, 13))
    ]
    r = goodput(write_log(tmp_path, [*steps, *SLURM_TIME_LIMIT]))
    assert_sane_goodput(r)
    (a,) = r.acc.attempts
    assert a.ended == "stopped" and "TIME LIMIT" in a.end_evidence
    assert r.cadence.failures == 0 and not any(f.kind == "rollback_loss" for f in r.findings)
    assert r.acc.buckets["productive"] == 180.0 and r.acc.buckets["unexplained"] == 97.0


# https://github.com/Lightning-AI/litgpt/pull/1055 (its description: LoRA finetuning's console lines, 4 iterations
# of gradient accumulation a step, `(opt.step)` on the iteration that steps; "..." is the PR's own elision)
LITGPT_1055 = [
    "Ep 1 | iter 1 | stEp 1: loss train (curr): 1.657, val (prev val iter): None | iter time: 298.27 ms",
    "Ep 1 | iter 2 | stEp 1: loss train (curr): 1.506, val (prev val iter): None | iter time: 174.64 ms",
    "Ep 1 | iter 3 | stEp 1: loss train (curr): 1.610, val (prev val iter): None | iter time: 106.92 ms",
    "Ep 1 | iter 4 | step 1: loss train (curr): 1.585, val (prev val iter): None | iter time: 181.34 ms (opt.step)",
    "Ep 1 | iter 5 | step 1: loss train (curr): 1.577, val (prev val iter): None | iter time: 154.41 ms",
    "Ep 1 | iter 6 | step 1: loss train (curr): 1.737, val (prev val iter): None | iter time: 102.00 ms",
    "Ep 1 | iter 7 | step 1: loss train (curr): 1.671, val (prev val iter): None | iter time: 156.28 ms",
    "Ep 1 | iter 8 | step 2: loss train (curr): 1.761, val (prev val iter): None | iter time: 121.17 ms (opt.step)",
    "Ep 1 | iter 9 | step 2: loss train (curr): 1.766, val (prev val iter): None | iter time: 151.38 ms",
    "...",
    "Ep 1 | iter 119 | step 29: loss train (curr): 1.199, val (prev val iter): None | iter time: 166.23 ms",
    "Ep 1 | iter 120 | step 30: loss train (curr): 1.162, val (prev val iter): None | iter time: 164.51 ms (opt.step)",
    "Validating ...",
]
# https://github.com/Lightning-AI/litgpt/issues/1042 (its description: a log every 10 iterations, 8 a step)
LITGPT_1042 = [
    "iter 1760 | step 220: loss 1.5947, iter time: 263.85 ms (optimizer.step)",
    "iter 1770 | step 221: loss 1.5191, iter time: 89.96 ms",
    "iter 1780 | step 222: loss 1.5989, iter time: 89.64 ms",
    "iter 1790 | step 223: loss 1.4138, iter time: 86.21 ms",
    "iter 1800 | step 225: loss 1.8572, iter time: 257.35 ms (optimizer.step)",
    "iter 1810 | step 226: loss 1.6535, iter time: 97.41 ms",
    "iter 1820 | step 227: loss 2.1728, iter time: 104.73 ms",
]


def test_litgpt_counts_optimizer_steps_and_times_its_iterations(tmp_path: Path) -> None:
    """From its start: 30 optimizer steps over 120 iterations, each iteration timed by its own field (the
    PR's "..." bridged at the pace of the lines around it)."""
    r = goodput(write_log(tmp_path, LITGPT_1055))
    assert_sane_goodput(r)
    assert r.acc.steps_completed == 30 and r.acc.iterations_completed == 120 and not r.acc.completed_is_bound
    assert r.acc.ideal_step_s is not None and 0.1 < r.acc.ideal_step_s < 0.2  # an iteration's, not a step's
    text = render_goodput(r.result())
    assert "30 completed (optimizer steps, over 120 iterations)" in text and "ideal iteration time" in text
    assert r.result().to_dict()["iterations_completed"] == 120
    from scope.app.pages.goodput import _summary_facts  # the dashboard's Goodput page says the same

    facts = dict(_summary_facts(r.result()))
    assert facts["steps completed"] == "30 optimizer steps, over 120 iterations"


def test_litgpt_mid_run_every_10_iterations_counts_the_steps_its_counter_shows(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path, LITGPT_1042))
    assert_sane_goodput(r)
    assert r.acc.steps_completed == 227 - 220 and r.acc.iterations_completed == 60
    assert not r.acc.completed_is_bound  # the optimizer step counter says how many ran


def test_one_counter_logs_keep_their_steps(tmp_path: Path) -> None:
    """A line with one counter (nanoGPT's `iter 100: loss ..., time 45.2ms`) is no two-counter line."""
    lines = [f"iter {i}: loss 2.{i:03d}, time 45.{i % 10}ms, mfu 30.00%" for i in range(100, 110)]
    r = goodput(write_log(tmp_path, lines))
    assert r.acc.iterations_completed is None and r.acc.steps_completed == 10


def test_an_epoch_done_line_with_no_evaluation_after_it_is_only_a_time(tmp_path: Path) -> None:
    """With no evaluation after it, the done line changes nothing: the buckets are those of the log without it."""
    lines = [line for line in VINVL if "Eval at" not in line]
    with_done = goodput(write_log(tmp_path / "a", lines))
    without = goodput(write_log(tmp_path / "b", [line for line in lines if "done!" not in line]))
    assert with_done.acc.buckets["evaluation"] == 0.0 and with_done.acc.buckets == without.acc.buckets


# https://github.com/saforem2/vault/blob/d96afcb06ae007719358935729013925a1d52c1a/imported/0007-MeetingNotes/Venkat/logs/mlprof/train-deepspeed-thetaGPU.md
# (lines 807-823 of the quoted log: epochs 2 and 3 of mlprof's trainer, each followed by its `[TEST] Accuracy`)
MLPROF_TEST = [
    ">     [2023-01-11 13:28:15,405][mlprof.trainers.pytorch.trainer][INFO] - [0] [2/10: 0/1875 (0%)] epoch=2.0000 step=9.0000 dt=0.0046 batch_acc=0.6758 batch_loss=0.0050 acc=0.0923 running_loss=0.0007",
    ">     [2023-01-11 13:28:15,583][mlprof.trainers.pytorch.trainer][INFO] - [0] [2/10: 1280/1875 (62%)] epoch=2.0000 step=14.0000 dt=0.0022 batch_acc=0.6992 batch_loss=0.0035 acc=0.5723 running_loss=0.0033",
    ">     [2023-01-11 13:28:16,897][mlprof.trainers.pytorch.trainer][INFO] - --------------------",
    ">     [2023-01-11 13:28:16,898][mlprof.trainers.pytorch.trainer][INFO] - [TEST] Accuracy: 85%",
    ">     [2023-01-11 13:28:16,898][mlprof.trainers.pytorch.trainer][INFO] - --------------------",
    ">     [2023-01-11 13:28:16,899][mlprof.trainers.pytorch.trainer][INFO] - ----------------------------",
    ">     [2023-01-11 13:28:16,899][mlprof.trainers.pytorch.trainer][INFO] - [TRAIN]  loss=0.0001  acc=2%",
    ">     [2023-01-11 13:28:16,899][mlprof.trainers.pytorch.trainer][INFO] - ----------------------------",
    ">     [2023-01-11 13:28:16,935][mlprof.trainers.pytorch.trainer][INFO] - [0] [3/10: 0/1875 (0%)] epoch=3.0000 step=17.0000 dt=0.0026 batch_acc=0.8086 batch_loss=0.0026 acc=0.1104 running_loss=0.0004",
    ">     [2023-01-11 13:28:17,115][mlprof.trainers.pytorch.trainer][INFO] - [0] [3/10: 1280/1875 (62%)] epoch=3.0000 step=22.0000 dt=0.0023 batch_acc=0.7930 batch_loss=0.0024 acc=0.6667 running_loss=0.0019",
    ">     [2023-01-11 13:28:18,415][mlprof.trainers.pytorch.trainer][INFO] - --------------------",
    ">     [2023-01-11 13:28:18,415][mlprof.trainers.pytorch.trainer][INFO] - [TEST] Accuracy: 90%",
    ">     [2023-01-11 13:28:18,415][mlprof.trainers.pytorch.trainer][INFO] - --------------------",
    ">     [2023-01-11 13:28:18,416][mlprof.trainers.pytorch.trainer][INFO] - ----------------------------",
    ">     [2023-01-11 13:28:18,416][mlprof.trainers.pytorch.trainer][INFO] - [TRAIN]  loss=0.0001  acc=3%",
    ">     [2023-01-11 13:28:18,416][mlprof.trainers.pytorch.trainer][INFO] - ----------------------------",
    ">     [2023-01-11 13:28:18,464][mlprof.trainers.pytorch.trainer][INFO] - [0] [4/10: 0/1875 (0%)] epoch=4.0000 step=25.0000 dt=0.0150 batch_acc=0.8633 batch_loss=0.0020 acc=0.1179 running_loss=0.0003",
]


def test_a_test_pass_result_line_ends_an_evaluation_mlprof(tmp_path: Path) -> None:
    """`[TEST] Accuracy: 85%` 1.31 s after the epoch's last progress line: that time is the test pass (the
    trainer's few steps left in the epoch take milliseconds), not training."""
    r = goodput(write_log(tmp_path, MLPROF_TEST))
    assert_sane_goodput(r)
    assert r.acc.buckets["evaluation"] == pytest.approx(16.898 - 15.583 + 18.415 - 17.115, abs=1e-3)
    assert r.acc.buckets["productive"] < 1.0 and len(r.acc.attempts) == 1


def test_two_json_lines_writers_a_record_apart_at_the_start_are_one_launch(tmp_path: Path) -> None:
    """LLaMA-Factory's trainer_log.jsonl (rameyjm7's, the records of tests/test_goodput_training_classes.py):
    its first six records as two writers flush them when one lags a record behind (10, 20, 10, 30, 20, 30):
    the second writer's step 10 at 0:02:13 comes after step 20 at 0:04:43 (under half the clock, as a
    relaunch's would), but step 10 was read at 0:02:12: the other writer's, not a resume."""
    a10, b10, a20, b20, a30, b30 = LLAMAFACTORY_JSONL[:6]
    r = goodput(write_log(tmp_path, [a10, a20, b10, a30, b20, b30], name="trainer_log.jsonl"))
    assert_sane_goodput(r)
    assert len(r.acc.attempts) == 1 and r.acc.steps_redone == 0 and r.acc.steps_completed == 30


def _figures_beyond(r: object, wall: float) -> list[str]:
    """Every time figure of a report that exceeds WALL: checkpoints, attempts, step times, findings."""
    from scope.analyzers.goodput.report import GoodputReport

    assert isinstance(r, GoodputReport)
    out = [f"{c.op} at {c.step}: {c.blocking_s}" for c in r.checkpoints if (c.blocking_s or 0.0) > wall]
    out += [f"attempt {a.index}" for a in r.acc.attempts if (a.end or 0.0) - (a.start or 0.0) > wall]
    out += [f"step {s}: {d}" for s, d in r.acc.step_times if d > wall]
    for f in r.findings:
        for key, value in f.metrics.items():
            seconds = value / 1e6 if key.endswith("_us") else value if key.endswith("_s") else None
            if isinstance(seconds, float | int) and "interval" not in key and "mtbf" not in key and seconds > wall:
                out.append(f"{f.kind}.{key}: {seconds}")
    return out


@pytest.mark.shared_data
def test_no_figure_is_larger_than_the_logs_own_span(tmp_path: Path) -> None:
    """Each real training log of ../shared/data (its `# ` header stripped, as a user would run it): no
    checkpoint, attempt, step time or finding's time is longer than the wall time the log spans."""
    for i, log in enumerate(sorted(shared_data("training_logs").glob("*.txt"))):
        lines = [line for line in log.read_text(errors="replace").splitlines() if not line.startswith("# ")]
        r = goodput(write_log(tmp_path / str(i), lines, name="job.log"))
        if r.timed:
            assert_sane_goodput(r)
            assert not _figures_beyond(r, r.acc.wall_s + 1e-6), (log.name, _figures_beyond(r, r.acc.wall_s))


def test_c10_lines_with_an_unpadded_month_are_timed() -> None:
    """torch 2.x's c10 prefix prints the month unpadded: the auroraGPT torchtitan log's first line (markdown-
    indented as its doc quotes it) and the dual32 Megatron-DeepSpeed log's c10d warnings after pdsh's host
    prefix (heldout4_training; sources in tests/test_goodput_training_classes.py). Their times were not read:
    the aurora run's span began 0.7 s late, dual32's ended 0.4 s early (13:17:05.8 against its 13:17:06.2)."""
    aurora = "  [W911 14:08:52.571468379 OperatorEntry.cpp:218] Warning: Warning only once for all operators,  other operators may also be overridden."
    dual32 = (
        "[W324 13:17:06.208535000 socket.cpp:209] [c10d] The hostname of the client socket cannot be retrieved. err=-3"
    )
    times = [parse_clock(line, year) for line, year in ((aurora, 2025), (dual32, 2026))]
    assert [t[0] if t else None for t in times] == [
        pytest.approx(1757599732.571468, abs=1e-3),
        pytest.approx(1774358226.208535, abs=1e-3),
    ]
    padded = parse_clock("[W1201 12:31:50.123456789 ProcessGroupNCCL.cpp:616] x", 2025)
    assert padded is not None and padded[0] == pytest.approx(1764592310.123457, abs=1e-3)
