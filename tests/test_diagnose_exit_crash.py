"""A crash at exit, after the last step (issue 41 item 18), on a real run: `scope run` of a job that trains
to its end and then dies of SIGSEGV while Python finalizes (tests/jobs/exit_crash_job.py). The diagnosis
must say that training finished and where the stack is, not call it a plain crash with generic advice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scope.analyzers.diagnose import diagnose
from scope.analyzers.diagnose.readers.hook_end import rank_end

from tests.test_collector_faults import ROOT, clean_env

JOB = ROOT / "tests" / "jobs" / "exit_crash_job.py"


@pytest.fixture(scope="module")
def crashed_at_exit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import subprocess
    import sys

    run = tmp_path_factory.mktemp("exit-crash") / "run"
    cmd = [sys.executable, "-m", "scope", "run", "--out", str(run), "--quiet", "--no-sidecar", "--", str(JOB)]
    proc = subprocess.run(
        [*cmd, "--steps", "6"], cwd=ROOT, env=clean_env(), capture_output=True, text=True, timeout=240
    )
    assert proc.returncode != 0, proc.stdout + proc.stderr  # the job failed: its exit status says so
    return run


@pytest.mark.multirank
def test_a_crash_after_the_last_step_says_training_finished_and_where_the_stack_is(crashed_at_exit: Path) -> None:
    manifest = json.loads((crashed_at_exit / "run.json").read_text())
    assert manifest["ranks"][0]["signal"] == "SIGSEGV" or manifest["ranks"][0]["exit_code"] == -11
    end = rank_end(crashed_at_exit, 0)
    assert end is not None and end["state"] == "exited" and end["step"] == 6  # the hook saw the job return

    top = diagnose(crashed_at_exit).findings[0]
    assert top.kind == "crash" and top.severity == "critical"
    assert top.summary.startswith("Training finished (ranks/0/attempts.jsonl") and "at exit" in top.summary
    assert "Garbage-collecting" in top.summary and "SIGSEGV" in top.summary
    assert "exit_crash_job.py:23 in __del__" in top.suggestion  # where the stack is
    assert top.suggestion.startswith("The training itself completed")
    assert top.metrics["after_training"]["finalizing"] is True


def test_hook_records_are_read_only_when_they_are_a_sane_regular_file(tmp_path: Path) -> None:
    import os

    d = tmp_path / "ranks" / "0"
    d.mkdir(parents=True)
    records = d / "attempts.jsonl"
    records.write_text('{"event": "start", "attempt": 0}\n{"event": "end", "state": "exited", "step": 40}\n')
    assert rank_end(tmp_path, 0) == {"event": "end", "state": "exited", "step": 40}
    records.write_text('{"event": "end", "state": "exited", "step": 1e400}\n')
    assert rank_end(tmp_path, 0) is None  # not an integer step
    records.write_text('{"event": "end", "state": "exited", "step": 40}\n{"event": "start", "attempt": 1}\n')
    assert rank_end(tmp_path, 0) is None  # a later attempt started: that end is not the last word
    records.unlink()
    os.mkfifo(records)
    assert rank_end(tmp_path, 0) is None  # a FIFO is never opened (it would block)


def test_a_crash_in_an_earlier_attempt_is_not_one_after_training(tmp_path: Path) -> None:
    """A restarted job: rank 2 raised in attempt 0 and the relaunch (attempt 1) finished. The crash is
    attempt 0's, not a crash at exit after training; and a peer's stack written on the launcher's SIGTERM
    while it was garbage-collecting (stacks/sigterm.txt) is where it stood, not a native crash at exit."""
    rank2 = tmp_path / "ranks" / "2"
    rank2.mkdir(parents=True)
    manifest = {"schema_version": 1, "status": "completed", "world_size": 4, "ranks": []}
    (tmp_path / "run.json").write_text(json.dumps(manifest))  # a run directory: the hook's records are read
    records = [
        {"event": "start", "attempt": 0, "pid": 100},
        {"event": "end", "attempt": 0, "state": "exception", "step": 8},
        {"event": "start", "attempt": 1, "pid": 200},
        {"event": "end", "attempt": 1, "state": "exited", "step": 4},
    ]
    (rank2 / "attempts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (rank2 / "attempt0.stderr.log").write_text(
        "[rank2]: Traceback (most recent call last):\n"
        '[rank2]:   File "/job/train.py", line 89, in main\n'
        '[rank2]:     raise RuntimeError("injected crash on rank 2 at step 9")\n'
        "[rank2]: RuntimeError: injected crash on rank 2 at step 9\n"
    )
    stacks = tmp_path / "ranks" / "1" / "stacks"
    stacks.mkdir(parents=True)
    (stacks / "sigterm.txt").write_text(
        "# faulthandler (SIGTERM) for rank 1 pid 101\n"
        "Current thread 0x00007f89bbe2fb80 (most recent call first):\n  Garbage-collecting\n  <no Python frame>\n"
    )
    top = diagnose(tmp_path).findings[0]
    assert top.kind == "crash" and 2 in top.ranks, top.summary
    assert "injected crash on rank 2" in top.summary
    assert not top.summary.startswith("Training finished") and "Garbage-collecting" not in top.summary, top.summary
    assert "after_training" not in top.metrics
