"""Checkpoint saves while the live detector watches: the hook says how long the job saved and whether a save
is in progress; steps holding a save are no samples (no straggler, no slow step) and a save is no hang."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from scope.collectors.launch_env import SITE_DIR

from scope.live.detector import LiveDetector, LiveEvent
from scope.live.tail import to_heartbeat, to_sample

ROOT = Path(__file__).resolve().parent.parent
JOB = ROOT / "tests" / "jobs" / "checkpoint_loop.py"
RANKS = 8
STEP_S = 0.1


@pytest.mark.subprocess  # a real checkpointing job in a child process, with the hook loaded
def test_the_hook_writes_the_time_in_saves_and_when_the_last_one_ended(tmp_path: Path) -> None:
    run, out = tmp_path / "run", tmp_path / "out"
    out.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCOPE_")}
    env.update(PYTHONPATH=os.pathsep.join([str(SITE_DIR), str(ROOT)]), RANK="0", SCOPE_RUN_DIR=str(run))
    proc = subprocess.run(
        [sys.executable, str(JOB), str(out), "9"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=180
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    rank = run / "ranks" / "0"
    lines = [json.loads(line) for line in (rank / "progress.jsonl").read_text().splitlines()]
    saves = [json.loads(line) for line in (rank / "checkpoints.jsonl").read_text().splitlines()]
    saves = [r for r in saves if r["op"] == "save"]
    assert len(saves) >= 3
    # The job's own time in saves reaches the progress line of the step they delayed (the saves after the
    # last step delayed none).
    before_last = [r["dur_ns"] for r in saves if r["step"] < lines[-1]["step"]]
    assert before_last and sum(r.get("ckpt_ns", 0) for r in lines) >= sum(before_last)
    beat = json.loads((rank / "heartbeat.json").read_text())
    assert beat["saving_ns"] is None and beat["saved_ns"] > max(r["start_ns"] for r in saves)


def feed(
    det: LiveDetector, saves: dict[int, set[int]], steps: int, save_s: float, seed: int = 0, said: bool = True
) -> list[LiveEvent]:
    """`steps` synchronized steps of RANKS ranks as progress lines; at step s the ranks in saves[s] save for
    `save_s` (everyone's step lasts as long: the others wait for them in the next collective); `said`: the
    hook's line carries the time in the save."""
    rng = random.Random(seed)
    events: list[LiveEvent] = []
    t_ns = 10**18
    prev: dict[int, dict[str, Any]] = {}
    for step in range(1, steps + 1):
        savers = saves.get(step, set())
        step_ns = int((STEP_S * rng.uniform(0.95, 1.05) + (save_s if savers else 0.0)) * 1e9)
        t_ns += step_ns
        for r in range(RANKS):
            cpu = int(0.08e9 * rng.uniform(0.9, 1.1)) + (int(save_s * 0.9e9) if r in savers else 0)
            rec = {"step": step, "t_ns": t_ns, "attempt": 0, "cpu_ns": cpu, "wait_ns": 0, "span_ns": step_ns}
            if r in savers and said:
                rec["ckpt_ns"] = int(save_s * 1e9)
            sample = to_sample(r, prev.get(r), rec)
            prev[r] = rec
            if sample is not None:
                det.add_sample(sample)
        events += det.evaluate(t_ns / 1e9)
    return events


def test_a_save_on_every_rank_makes_no_slow_step_and_rank_0_saving_alone_no_straggler() -> None:
    every_rank = {s: set(range(RANKS)) for s in (20, 40, 41, 60)}
    det = LiveDetector()
    assert feed(det, every_rank, 90, save_s=2.0) == []
    assert det.stragglers.saves == 4 * RANKS
    rank0 = {s: {0} for s in range(10, 90, 3)}  # rank 0 writes the checkpoint every third step
    det = LiveDetector()
    assert feed(det, rank0, 90, save_s=0.5) == []
    assert det.stragglers.saves == len(rank0)
    # Rank 0 saving at every step from step 10: left out while the hook says so; a straggler when it does not.
    every_step = {s: {0} for s in range(10, 90)}
    assert feed(LiveDetector(), every_step, 90, save_s=0.5) == []
    blind = [(e.key, e.finding.ranks) for e in feed(LiveDetector(), every_step, 90, save_s=0.5, said=False)]
    assert blind == [("straggler:0", [0])]


def test_a_long_save_is_no_hang_and_the_end_of_a_save_counts_as_progress() -> None:
    det = LiveDetector()
    feed(det, {}, 30, save_s=0.0)
    last_t = max(b.step_t for b in det.beats.values() if b.step_t is not None)
    start_ns = int((last_t + 0.05) * 1e9)
    for t in (5.0, 15.0, 40.0):  # a 40 s save on rank 0; the others wait, beating
        now = last_t + t
        for r in range(RANKS):
            det.add_beat(to_heartbeat(r, {"step": 30, "time_ns": int(last_t * 1e9), "written_ns": int(now * 1e9),
                                          "saving_ns": start_ns if r == 0 else None}))  # fmt: skip
        assert det.evaluate(now) == []
    end = last_t + 41.0
    for r in range(RANKS):
        det.add_beat(to_heartbeat(r, {"step": 30, "time_ns": int(last_t * 1e9), "written_ns": int(end * 1e9),
                                      "saving_ns": None, "saved_ns": int(end * 1e9) if r == 0 else None}))  # fmt: skip
    assert det.evaluate(end + 2.0) == []
    # ...but the job that never steps again after it hangs, from the save's end.
    hang = [e for e in det.evaluate(end + 12.0) if e.key == "hang"]
    assert [e.action for e in hang] == ["new"]
