# ruff: noqa: E501  (log lines are kept whole, as posted)
"""Goodput classes of issue 40 (stop 51), each on a real excerpt named above it: a job stopped from outside by
SLURM (a cancel, its time limit, a preemption) or signalled through Lightning is stopped, not failed; a node
failure stays a failure."""

from __future__ import annotations

from pathlib import Path

from scope.analyzers.goodput import goodput
from scope.analyzers.goodput.line_marks import scan_line

from tests.helpers import assert_sane_goodput, write_log

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
