# ruff: noqa: E501  (log lines are kept whole, as the programs print them)
"""Goodput classes from the heldout11 training logs (issue 40), each on a few lines written here in the real
programs' formats: a launcher's own success lines end a run as completed, a run that dies before its first
step is accounted (not refused), a save before a stretch whose lines state their own per-step time blocks
only what that time leaves, a relaunch from iteration 0 redoes the lost attempts' steps, and untimestamped
evaluation and save lines between two timestamps take the span they bound."""

from __future__ import annotations

from pathlib import Path

from scope.analyzers.goodput import goodput

from tests.helpers import write_log

_DS = "[2025-01-02 {t}] [INFO] "


def _ds_steps(first_s: int, steps: range) -> list[str]:
    """DeepSpeed's progress line every 10 steps, 7 s apart, from second FIRST_S after 15:47:00."""
    lines = []
    for i, step in enumerate(steps):
        s = first_s + 7 * i
        t = f"15:{47 + s // 60:02d}:{s % 60:02d},{100 + i:03d}"
        lines.append(
            _DS.format(t=t)
            + f"[logging.py:128:log_dist] [Rank 0] step={step}, skipped=0, lr=[5e-05, 5e-05], mom=[(0.9, 0.95), (0.9, 0.95)]"
        )
    return lines


def test_deepspeed_launcher_success_lines_complete_the_run(tmp_path: Path) -> None:
    """The launcher's `Process N exits successfully.` for every rank after the last step: the run completed
    (not `running`); the same for torchrun's exit barrier `Local worker group finished (WorkerState.SUCCEEDED)`."""
    exits = [
        _DS.format(t=f"15:49:{10 + r:02d},000") + f"[launch.py:351:main] Process {1000 + r} exits successfully."
        for r in range(4)
    ]
    r = goodput(write_log(tmp_path / "ds", [*_ds_steps(0, range(10, 110, 10)), *exits]))
    assert [a.ended for a in r.acc.attempts] == ["completed"], r.acc.attempts
    assert "exits successfully" in r.acc.attempts[0].end_evidence
    torchrun = "[2024-03-12 08:22:56,574] torch.distributed.elastic.agent.server.api: [INFO] Local worker group finished (WorkerState.SUCCEEDED). Waiting 300 seconds for other agents to finish"
    steps = [f"[2024-03-12 08:2{i}:00,000] train INFO: step {i * 10}/100 loss 1.0" for i in range(1, 3)]
    r = goodput(write_log(tmp_path / "tr", [*steps, torchrun]))
    assert [a.ended for a in r.acc.attempts] == ["completed"], r.acc.attempts


def test_failure_after_some_ranks_exit_successfully_still_decides(tmp_path: Path) -> None:
    """One rank exits 0, another dies: the launcher's sigkill line after the success line makes it a failure."""
    tail = [
        _DS.format(t="15:49:10,000") + "[launch.py:351:main] Process 1000 exits successfully.",
        _DS.format(t="15:49:12,000") + "[launch.py:341:sigkill_handler] Killing subprocess 1001",
        _DS.format(t="15:49:12,500").replace("INFO", "ERROR")
        + "[launch.py:341:sigkill_handler] ['/usr/bin/python', '-u', 'main.py', '--local_rank=1'] exits with return code = 1",
    ]
    r = goodput(write_log(tmp_path, [*_ds_steps(0, range(10, 60, 10)), *tail]))
    assert [a.ended for a in r.acc.attempts] == ["failed"], r.acc.attempts

