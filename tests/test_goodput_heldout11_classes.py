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


def _mmcv(t: str, epoch: int, it: int, step_s: float, data_s: float) -> str:
    return (
        f"2022-08-29 {t} - mmdet - INFO - Epoch [{epoch}][{it}/200]\tlr: 1.000e-02, eta: 3 days, 1:00:00, "
        f"time: {step_s:.3f}, data_time: {data_s:.3f}, memory: 8000, loss_cls: 0.4, loss_bbox: 0.9, loss: 1.3"
    )


def test_save_before_a_stretch_timed_by_its_own_step_timer_blocks_only_what_the_timer_leaves(tmp_path: Path) -> None:
    """mmcv: the epoch-end save, then 50 iterations whose line says `time: 9.000` each (the timer stops for
    the save): 451 s after the save line, the save blocked at most 1 s, not the 100 s beyond the usual pace;
    the slow stretch is the data loader's (`data_time` 4.0 against a steady 0.4): 50 x 3.6 s of data stall,
    the steady wait none; no save warning."""
    lines = [
        _mmcv("10:00:00,000", 1, 100, 7.0, 0.4),
        _mmcv("10:05:50,000", 1, 150, 7.0, 0.4),
        _mmcv("10:11:40,000", 1, 200, 7.0, 0.4),
        "2022-08-29 10:11:41,000 - mmdet - INFO - Saving checkpoint at 1 epochs",
        _mmcv("10:19:12,000", 2, 50, 9.0, 4.0),
        _mmcv("10:25:02,000", 2, 100, 7.0, 0.4),
    ]
    r = goodput(write_log(tmp_path, lines))
    assert r.acc.buckets["checkpoint_save"] <= 1.0 + 1e-6, r.acc.buckets
    assert 50 * 3.5 <= r.acc.buckets["data_stall"] <= 50 * 3.6 + 1e-6, r.acc.buckets  # (4.0 - the steady 0.4)
    assert not [f for f in r.findings if f.kind == "checkpoint_stall"], [f.summary for f in r.findings]


def test_save_stall_finding_counts_the_saves_its_bucket_rests_on(tmp_path: Path) -> None:
    """A Megatron save with no end line, then the next 10 iterations' line 10 minutes later, its timer 6 s per
    iteration: the 8 min its timer leaves is the save's; the stall found names 1 save (never `0 saves` beside
    the seconds it blocked)."""

    def it(t: str, step: int) -> str:
        return f" [2024-03-05 {t}] iteration {step:>8}/    1000 | consumed samples: {step * 8:>12} | elapsed time per iteration (ms): 6000.0 | learning rate: 1.000000E-04 | lm loss: 2.0E+00 |"

    steps = [it(f"10:{m:02d}:00", m * 10) for m in range(0, 20)]
    save = "saving checkpoint at iteration     190 to /ckpt in torch_dist format"
    later = it("10:29:00", 200)
    r = goodput(write_log(tmp_path, [*steps, save, later]))
    stall = [f for f in r.findings if f.kind == "checkpoint_stall"]
    assert stall and "0 saves" not in stall[0].summary and "1 save" in stall[0].summary, [f.summary for f in r.findings]
