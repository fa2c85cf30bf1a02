"""Goodput from logs alone: the three real logs in ../shared/data/training_logs against their hand-worked
TRUTH headers, and written excerpts in other frameworks' formats (tests/data/goodput/README.md) against the
split worked out by hand in each test; the Young/Daly figure on a worked example."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from scope.analyzers.goodput import goodput
from scope.analyzers.goodput.cadence import cadence, daly_interval, young_interval

from scope.cli import main
from tests.conftest import shared_data
from tests.helpers import inventory

DATA = Path(__file__).parent / "data" / "goodput"


def _within(got: float, want: float, wall: float, share: float = 0.05) -> bool:
    """Within `share` of the job's wall time (the issue's yardstick for a time bucket)."""
    return abs(got - want) <= share * wall


def _buckets(report) -> dict[str, float]:  # type: ignore[no-untyped-def]
    return report.acc.buckets


# ---- real logs (../shared/data/training_logs, TRUTH worked out by hand) ------------------------------------


def test_fairseq_resumed_epochs_real_log() -> None:
    r = goodput(shared_data("training_logs", "tianxiexiaozhu77-syngec_bash-english_exp-1.txt"))
    b, wall = _buckets(r), r.wall_s
    assert wall == pytest.approx(1564, abs=1)
    assert r.acc.steps_completed == 2818 and len(r.acc.attempts) == 1 and r.acc.steps_redone == 0
    assert r.acc.attempts[0].resume_step == 40015
    saves = [c for c in r.saves() if c.ended]
    assert len(saves) == 10 and sum(c.blocking_s or 0 for c in saves) == pytest.approx(125, abs=3)
    for name, want in (("initialization", 44), ("productive", 1360), ("checkpoint_save", 125), ("evaluation", 34)):
        assert _within(b[name], want, wall), (name, b[name], want)
    assert r.acc.ideal_step_s == pytest.approx(0.46, rel=0.05)
    assert [f.kind for f in r.findings] == ["checkpoint_stall"]  # 8% of the job in blocking saves


def test_megatron_deepspeed_fresh_run_real_log() -> None:
    r = goodput(shared_data("training_logs", "liguodongiot-llm-action_megatron-deepspeed-llama-note.txt"))
    b, wall = _buckets(r), r.wall_s
    assert wall == pytest.approx(3073, rel=0.01)
    assert r.acc.steps_completed == 2500 and len(r.acc.attempts) == 1 and r.acc.steps_redone == 0
    assert r.acc.attempts[0].ended == "completed"
    assert [c.blocking_s for c in r.saves()] == [pytest.approx(5.95, abs=0.02)]
    for name, want in (("initialization", 13.6), ("productive", 3053), ("checkpoint_save", 5.95)):
        assert _within(b[name], want, wall), (name, b[name], want)
    assert r.acc.ideal_step_s == pytest.approx(1.21, rel=0.05)
    assert not r.findings  # a healthy run: nothing to report


def test_nemo_checkpoint_stalls_real_log() -> None:
    r = goodput(shared_data("training_logs", "skypilot-org-skypilot_perf-storage_0724-juicefs-nemo-2node.txt"))
    b, wall = _buckets(r), r.wall_s
    assert wall == pytest.approx(1436, abs=2)
    assert r.acc.steps_completed == 21 and len(r.acc.attempts) == 1
    timed = sorted(round(c.blocking_s or 0) for c in r.saves() if c.ended)
    assert len(timed) == 8 and sum(timed) == pytest.approx(387, abs=4)
    # TRUTH over the 1395 s of four cycles, plus the window's first step (3 s) and validation (38 s)
    for name, want in (("productive", 54 + 3), ("checkpoint_save", 1190), ("evaluation", 152 + 38)):
        assert _within(b[name], want, wall), (name, b[name], want)
    assert r.acc.ideal_step_s == pytest.approx(2.72, rel=0.02)
    stall = next(f for f in r.findings if f.kind == "checkpoint_stall")
    assert stall.severity == "critical" and stall.metrics["share_pct"] > 75
    assert any("starts mid-run" in c for c in r.cannot)


# ---- written excerpts ---------------------------------------------------------------------------------


def test_torchtitan_crash_restart_and_rollback() -> None:
    r = goodput(DATA / "torchtitan_restart.log")
    b = _buckets(r)
    assert r.wall_s == 565
    assert [(a.first_step, a.last_step, a.resume_step, a.ended) for a in r.acc.attempts] == [
        (1, 25, 0, "failed"),
        (25, 30, 20, "completed"),
    ]
    assert r.acc.steps_completed == 30 and r.acc.steps_redone == 5
    want = {
        "productive": 300,
        "initialization": 80,
        "checkpoint_save": 90,
        "checkpoint_load": 15,
        "redone": 70,
        "failure_to_restart": 10,
    }
    assert {k: v for k, v in b.items() if v} == want
    assert r.acc.ideal_step_s == 10
    kinds = {f.kind for f in r.findings}
    assert {"rollback_loss", "checkpoint_stall"} <= kinds
    rb = next(f for f in r.findings if f.kind == "rollback_loss")
    assert rb.metrics["steps_redone"] == 5 and rb.metrics["time_lost_us"] == 70e6
    # one failure in 565 s: the cadence is computed, and said to be rough
    assert r.cadence.young_s == pytest.approx(math.sqrt(2 * 30 * 565))
    assert "only 1 failure" in r.cadence.note


def test_hang_timeout_and_slow_requeue(tmp_path: Path) -> None:
    """Steps stop at 70; the NCCL watchdog fires 30 min later; SLURM requeues the job 20 min after that; the
    new attempt resumes from step 50. The hang, the slow restart and the lost steps are each accounted for,
    and `scope goodput` links the failed attempt to the diagnosis."""
    log = DATA / "torchtitan_hang_requeue.log"
    r = goodput(log)
    want = {
        "productive": 100,
        "initialization": 70,
        "checkpoint_save": 10,
        "checkpoint_load": 10,
        "redone": 20,
        "failure_to_restart": 1210,
        "hung": 1800,
    }
    got = {k: v for k, v in _buckets(r).items() if v}
    assert got.keys() == want.keys() and all(abs(got[k] - want[k]) < 0.5 for k in want), got
    assert r.wall_s == 3220 and r.acc.steps_redone == 20 and r.acc.attempts[1].resume_step == 50
    kinds = {f.kind for f in r.findings}
    assert {"no_progress", "restart_slow"} <= kinds
    out = tmp_path / "g.json"
    assert main(["goodput", str(log), "--json", str(out)]) == 0
    d = json.loads(out.read_text())
    assert d["attempts"][0]["ended"] == "failed" and d["attempts"][0]["diagnosis"]  # linked to a failure finding
    assert all(f["caused_by"] for f in d["findings"] if f["kind"] in ("no_progress", "restart_slow"))


def test_megatron_lm_slurm_preemption_and_requeue() -> None:
    r = goodput(DATA / "megatron_lm_slurm_requeue.log")
    want = {
        "productive": 100,
        "initialization": 100,
        "checkpoint_save": 40,
        "checkpoint_load": 10,
        "redone": 25,
        "queued": 185,  # a preemption is a stop from outside: the wait is the scheduler's, no failure's
    }
    assert r.wall_s == 460 and {k: v for k, v in _buckets(r).items() if v} == want
    assert len(r.acc.attempts) == 2 and r.acc.attempts[1].resume_step == 20
    assert r.acc.steps_completed == 100 and r.acc.steps_redone == 20
    assert r.acc.attempts[0].ended == "stopped" and "PREEMPTION" in r.acc.attempts[0].end_evidence
    assert r.cadence.failures == 0  # no checkpoint interval recommended from a preemption alone
    rollback = next(f for f in r.findings if f.kind == "rollback_loss")
    assert "stopped from outside" in rollback.suggestion and "fix the failure" not in rollback.suggestion
    # the cadence recommends no interval (no failure): the suggestion names none either
    assert r.cadence.young_s is None and "Young/Daly" not in rollback.suggestion


def test_hf_trainer_run_that_never_failed() -> None:
    """Goodput from initialization and checkpoints alone; no failure, so no cadence is recommended."""
    r = goodput(DATA / "hf_trainer_never_failed.log")
    assert r.wall_s == 360 and r.goodput_pct == pytest.approx(300 / 360 * 100)
    assert {k: v for k, v in _buckets(r).items() if v} == {
        "productive": 300,
        "initialization": 30,
        "checkpoint_save": 30,
    }
    assert len(r.acc.attempts) == 1 and r.acc.attempts[0].ended == "completed" and r.acc.steps_redone == 0
    assert [c.blocking_s for c in r.saves()] == [20, 10]
    assert r.cadence.young_s is None and "no failure" in r.cadence.note
    assert {f.kind for f in r.findings} == {"checkpoint_stall"}  # 8.3% of the job


def test_nemo2_progress_lines_without_timestamps_between_timed_ones() -> None:
    """NeMo 2's progress printer writes no time: steps are placed by their step timing after the timestamped
    lines before them; the save line says only how long it took (it began 10 s before the line). By hand:
    init 30 s (14:40:00-14:40:30), steps 1-30 60 s, save 10 s, steps 31-40 20 s, then 10 s with no line
    after the last step."""
    r = goodput(DATA / "nemo2_progress_printer.log")
    assert r.wall_s == 130 and r.acc.steps_completed == 40
    got = {k: v for k, v in _buckets(r).items() if v}
    want = {"initialization": 30, "productive": 80, "checkpoint_save": 10, "unexplained": 10}
    assert got.keys() == want.keys() and all(abs(got[k] - want[k]) < 0.5 for k in want), got
    assert [c.blocking_s for c in r.saves()] == [10]


def test_every_rank_printing_its_steps_is_one_voice() -> None:
    """torchrun --tee with every rank logging (`[rankN]:` prefixes), rank 1 one step behind rank 0: no
    rollback, one attempt, one save (not one per rank)."""
    r = goodput(DATA / "torchtitan_all_ranks.log")
    assert len(r.acc.attempts) == 1 and r.acc.steps_redone == 0 and r.acc.steps_completed == 6
    assert len(r.saves()) == 1 and r.wall_s == 22


def test_lightning_epoch_bars_are_not_rollbacks() -> None:
    r = goodput(DATA / "lightning_epochs_no_timestamps.log")
    assert len(r.acc.attempts) == 1 and r.acc.steps_redone == 0
    assert r.acc.attempts[0].resume_step == 100 and r.acc.steps_completed == 200
    # (each validation bar's own 3 s laid after its epoch's bar: 100 s of training, 6 s of validation)
    assert r.clock == "bar" and r.wall_s == 106 and r.acc.buckets["evaluation"] == 6


def test_megatron_batch_generator_timer_is_data_stall() -> None:
    """--timing-log-level 1: the batch-generator timer (ms per iteration, max over ranks: 200) over 10
    iterations per log line is 2 s of each 10 s interval waiting for input."""
    r = goodput(DATA / "megatron_data_timers.log")
    assert r.wall_s == 30 and {k: v for k, v in _buckets(r).items() if v} == pytest.approx(
        {"productive": 24.0, "data_stall": 6.0}
    )
    assert not any("data stalls" in c for c in r.cannot)


def test_megatron_without_timestamps_uses_elapsed_time() -> None:
    r = goodput(DATA / "megatron_no_timestamps.log")
    assert r.clock == "derived" and r.acc.steps_completed == 50
    assert {k: v for k, v in _buckets(r).items() if v} == {
        "productive": 100,
        "initialization": 12,
        "checkpoint_save": 15,
    }


def test_steps_only_log_says_what_it_cannot_compute(capsys: pytest.CaptureFixture[str]) -> None:
    r = goodput(DATA / "steps_only.log")
    assert not r.timed and r.goodput_pct is None and r.acc.steps_completed == 30
    assert len(r.acc.attempts) == 2 and r.acc.steps_redone == 10  # step 20 -> 11: a rollback
    assert any("no timestamps" in c for c in r.cannot)
    assert main(["goodput", str(DATA / "steps_only.log")]) == 0
    out = capsys.readouterr().out
    assert "Not computed" in out and "no timestamps" in out and "Where the time went" not in out


def test_cli_json_contract(tmp_path: Path) -> None:
    out = tmp_path / "g.json"
    assert main(["goodput", str(DATA / "torchtitan_restart.log"), "--json", str(out), "--no-diagnose"]) == 0
    d = json.loads(out.read_text())
    assert d["wall_s"] == 565 and d["goodput_pct"] == pytest.approx(300 / 565 * 100)
    assert sum(d["buckets"].values()) == pytest.approx(d["wall_s"])
    assert d["restarts"] == 1 and d["steps_redone"] == 5 and len(d["timeline"]) >= 10
    assert {"checkpoints", "cadence", "attempts", "cannot", "findings"} <= set(d)


def test_cli_refuses_input_without_progress(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("hello\nworld\n")
    assert main(["goodput", str(log)]) == 3


# ---- checkpoint cadence -------------------------------------------------------------------------------


def test_young_daly_worked_example() -> None:
    """C = 60 s, MTBF = 24 h: tau = sqrt(2 * 60 * 86400) = 3219.9 s (53.7 min). Saving every 4 h instead
    loses 60/14400 + 14400/172800 = 8.75% of the time, against 2 * 60/3219.9 = 3.73% at tau: 8.44 h a week."""
    assert young_interval(60, 86400) == pytest.approx(3219.94, abs=0.01)
    assert daly_interval(60, 86400) == pytest.approx(3219.94 * (1 + math.sqrt(60 / 172800) / 3 + 60 / 172800 / 9) - 60)
    c = cadence(60, wall_s=10 * 86400, failures=10, interval_used_s=4 * 3600)
    assert c.mtbf_s == 86400 and c.young_s == pytest.approx(3219.94, abs=0.01)
    assert c.waste_used == pytest.approx(0.0875, abs=1e-4) and c.waste_best == pytest.approx(0.03727, abs=1e-4)
    assert c.hours_per_week_saved == pytest.approx(8.44, abs=0.01)
    assert c.note == ""  # ten failures: no caveat
    assert cadence(60, wall_s=86400, failures=0, interval_used_s=3600).young_s is None
    assert cadence(60, wall_s=86400, failures=0, interval_used_s=3600, mtbf_s=86400).young_s == pytest.approx(
        3219.94, abs=0.01
    )


def test_one_log_per_attempt(tmp_path: Path) -> None:
    """A requeued job writing a new file per attempt (slurm-<id>.out): two logs that do not overlap are two
    attempts, the gap between them a restart."""
    lines = (DATA / "torchtitan_restart.log").read_text().splitlines(keepends=True)
    (tmp_path / "slurm-1001.out").write_text("".join(lines[:14]))  # attempt 0, cut after step 25
    (tmp_path / "slurm-1002.out").write_text("".join(lines[23:]))  # attempt 1, from its first line
    r = goodput(tmp_path)
    assert [(a.first_step, a.last_step, a.resume_step) for a in r.acc.attempts] == [(1, 25, 0), (25, 30, 20)]
    assert r.acc.steps_redone == 5 and r.acc.buckets["failure_to_restart"] == 35  # 10:05:50 -> 10:06:25


def test_run_directory_logs_read_the_lowest_rank_only(tmp_path: Path) -> None:
    from scope.analyzers.goodput.sources import find_logs

    for rank in (0, 1, 2):
        d = tmp_path / "ranks" / str(rank)
        d.mkdir(parents=True)
        (d / "stdout.log").write_text((DATA / "torchtitan_restart.log").read_text())
        (d / "nccl.log").write_text("node:1:1 [0] NCCL INFO Init COMPLETE\n")
    (tmp_path / "launcher.log").write_text("starting\n")
    found = sorted(str(p.relative_to(tmp_path)) for p in find_logs(inventory(tmp_path)))
    assert found == ["launcher.log", "ranks/0/stdout.log"]
    r = goodput(tmp_path)
    assert len(r.acc.attempts) == 2 and r.acc.steps_redone == 5  # the same answer as the log alone


def test_torchrun_elastic_node_join_is_a_membership_change_not_a_failure() -> None:
    """torchrun's agent sees a node waiting, restarts the group (world 4 -> 8) without a failure; the job
    resumes from step 10. Hand split over 340 s: init 30 + 20 (incl. 5 s before the load and 5 s after),
    productive 50 + 150, save 10, load 5, redone 50 (steps 11-20) + 15 (step 20 to the restart line),
    failure-to-restart 5 (restart line to the new rendezvous), shutdown 5."""
    r = goodput(DATA / "torchrun_elastic_membership.log")
    first, second = r.acc.attempts
    assert (first.world_size, first.nodes, second.world_size, second.nodes) == (4, 1, 8, 2)
    assert first.ended == "membership_change" and second.ended == "completed"
    assert second.membership == "world size 4 -> 8; nodes 1 -> 2"
    d = r.to_dict()
    assert d["failures"] == 0 and d["membership_changes"] == 1 and d["restarts"] == 1
    assert r.cadence.failures == 0
    want = {
        "productive": 200,
        "initialization": 50,
        "checkpoint_save": 10,
        "checkpoint_load": 5,
        "redone": 65,
        "failure_to_restart": 5,
        "unexplained": 5,
    }
    got = {k: v for k, v in _buckets(r).items() if v}
    assert got == pytest.approx(want), got
    assert r.acc.steps_redone == 10 and r.acc.steps_completed == 40
    assert not [f for f in r.findings if f.kind == "restart_slow"]
    rollback = next(f for f in r.findings if f.kind == "rollback_loss")
    assert "membership changes" in rollback.suggestion and "fix the failure" not in rollback.suggestion


def test_utf16_log_reads_as_its_utf8_original(tmp_path: Path) -> None:
    """A log PowerShell wrote (UTF-16 with a byte-order mark): the same attempts and buckets."""
    original = DATA / "torchtitan_restart.log"
    wide = tmp_path / "train.log"
    wide.write_bytes(original.read_text().encode("utf-16"))
    a, b = goodput(original), goodput(wide)
    assert b.acc.buckets == a.acc.buckets and len(b.acc.attempts) == 2 and b.acc.steps_redone == 5


def test_log_over_the_read_limit_is_read_by_its_head_and_tail(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """2,000 one-second steps with a save every 500; the reader's limit (512 MiB, here 16 KiB) leaves the
    middle unread: the job's start and end still give the wall time, the steps, and a warning says what
    was not read."""
    from scope.analyzers.diagnose.readers import logtext

    monkeypatch.setattr(logtext, "MAX_LOG_BYTES", 16 << 10)
    monkeypatch.setattr(logtext, "HEAD_BYTES", 4 << 10)
    t0 = 1_740_823_200  # 2025-03-01 10:00:00 UTC

    def stamp(s: int) -> str:
        h, m, sec = (t0 + s) // 3600 % 24, (t0 + s) // 60 % 60, (t0 + s) % 60
        return f"[titan] 2025-03-01 {h:02d}:{m:02d}:{sec:02d},000"

    lines = [f"{stamp(0)} - root - INFO - Starting job: Llama 3 debug training"]
    lines.append(f"{stamp(60)} - root - INFO - Training starts at step 1, with local batch size 8, total steps 2000")
    t = 60
    for step in range(1, 2001):
        t += 1
        lines.append(f"{stamp(t)} - root - INFO - step: {step:4d}  loss:  6.1007  memory:  1.35GiB(1.71%)  tps: 1,640")
        if step % 500 == 0:
            lines.append(f"{stamp(t)} - root - INFO - Saving the checkpoint (or staging if async is enabled).")
            t += 10
            done = "Finished saving the checkpoint (or staging if async is enabled)in 10.00 seconds."
            lines.append(f"{stamp(t)} - root - INFO - {done}")
    lines.append(f"{stamp(t)} - root - INFO - Training completed")
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    assert log.stat().st_size > 100 << 10
    r = goodput(log)
    assert r.wall_s == t and r.acc.steps_completed == 2000 and len(r.acc.attempts) == 1
    assert any("were not" in w and "estimated" in w for w in r.warnings), r.warnings
    b = r.acc.buckets
    assert b["initialization"] == pytest.approx(60, abs=1)
    # the saves in the unread middle are productive time to the reader: within 5% of the wall
    assert b["productive"] + b["checkpoint_save"] == pytest.approx(2040, abs=0.05 * t)


def test_torchtitan_async_checkpoint_process_is_not_a_blocking_save() -> None:
    """DCP's checkpoint process (zero-overhead async saves; line format of pytorch/torchtitan#1287) logs
    its requests as `[rank0]:[0]` lines while training goes on: none of it blocks training. Hand split over
    86 s: init 10 (to 'Training starts'), 76 s of steps to step 50, of which the first ten's 20 s (tps 2,400
    against 5,900 after: compilation) are 6 s of warm-up beyond ten ideal 1.4 s steps; nothing else."""
    r = goodput(DATA / "torchtitan_async_checkpoint_process.log")
    assert r.wall_s == 86 and r.acc.steps_completed == 50 and len(r.acc.attempts) == 1
    assert {k: v for k, v in _buckets(r).items() if v} == {"initialization": 10, "warmup": 6, "productive": 70}
    assert r.acc.ideal_step_s == pytest.approx(1.4) and not r.checkpoints


def test_every_rank_printing_without_a_prefix_counts_each_step_once() -> None:
    """Every rank logs each line into one file with no rank prefix (format of pytorch/torchtitan#2389): the
    repeated step lines are one step. Hand split over 18.8 s: init 10, productive 8.8; ideal step 1.6 s."""
    r = goodput(DATA / "torchtitan_every_rank_no_prefix.log")
    assert r.wall_s == pytest.approx(18.8) and r.acc.steps_completed == 6 and r.acc.steps_redone == 0
    assert len(r.acc.attempts) == 1 and r.acc.attempts[0].ended == "completed"
    got = {k: v for k, v in _buckets(r).items() if v}
    assert got == pytest.approx({"initialization": 10, "productive": 8.8}), got
    assert r.acc.ideal_step_s == pytest.approx(1.6)
