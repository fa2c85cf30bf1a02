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
