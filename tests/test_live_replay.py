"""scope.live.replay looks at a recorded run at the live monitor's pace (every LOOK_S of the records' own time),
so a replay says what the monitor said live: as few looks, a hang named from the steps, no hang in a save."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from scope.live.detector import LiveDetector, LiveEvent
from scope.live.replay import LOOK_S, replay, run_dir_samples
from scope.live.samples import StepSample

DATA = Path(__file__).resolve().parent / "data"
RANKS = 4
T0 = 1_000.0


class CountingDetector(LiveDetector):
    """A detector that notes the time of each look."""

    def __init__(self) -> None:
        super().__init__()
        self.looks: list[float] = []

    def evaluate(self, now: float) -> list[LiveEvent]:
        self.looks.append(now)
        return super().evaluate(now)


def steps(first: int, last: int, step_s: float, t0: float, skip: tuple[int, ...] = ()) -> list[StepSample]:
    """Ranks 0..RANKS-1 (less `skip`) completing steps first..last, one every step_s from t0."""
    return [
        StepSample(rank=r, step=s, t=t0 + (s - first + 1) * step_s + 0.001 * r, step_s=step_s, compute_s=0.6 * step_s)
        for s in range(first, last + 1)
        for r in range(RANKS)
        if r not in skip
    ]


def test_a_replay_looks_every_half_second_of_the_records_time_not_after_every_record() -> None:
    det = CountingDetector()
    samples = steps(1, 100, 0.1, T0)  # 400 records in 10 s
    replay(samples, det)
    gaps = {round(b - a, 6) for a, b in zip(det.looks, det.looks[1:], strict=False)}
    assert gaps == {LOOK_S} and 19 <= len(det.looks) <= 21, (len(det.looks), gaps)


def test_a_replay_names_a_hang_from_the_steps_and_skips_the_empty_looks() -> None:
    """Rank 2 never completes step 21; the others stop after it (they wait for rank 2): the hang comes at the
    first look 10 s (the floor: 10 steps of 0.2 s are less) after the last step, naming rank 2 as behind."""
    samples = steps(1, 20, 0.2, T0) + steps(21, 21, 0.2, T0 + 20 * 0.2, skip=(2,))
    samples.append(StepSample(rank=0, step=22, t=T0 + 3600.0, step_s=0.2, compute_s=0.1))  # an hour later
    det = CountingDetector()
    events = replay(samples, det).events
    last_step_t = T0 + 21 * 0.2 + 0.003
    (hang,) = [e for e in events if e.key == "hang" and e.action == "new"]
    assert last_step_t + 10.0 <= hang.t < last_step_t + 10.0 + LOOK_S
    assert hang.finding.ranks == [2] and hang.finding.metrics["culprit_rule"] == "behind", hang.finding
    assert [e.action for e in events if e.key == "hang"] == ["new", "clear"]  # the step an hour later
    assert len(det.looks) < 30  # not 7,200 looks through the hour without a record


def test_a_checkpoint_save_in_a_replayed_run_is_no_hang() -> None:
    """Every rank waits 30 s for rank 0's save (its record holds the save's time, as the hook writes it): live,
    its heartbeat said it saved and no hang was judged; the replay says the same."""
    save_s = 30.0
    samples = steps(1, 20, 0.2, T0)
    after = T0 + 20 * 0.2 + save_s
    for r in range(RANKS):
        ckpt = save_s if r == 0 else 0.0
        samples.append(StepSample(rank=r, step=21, t=after + 0.001 * r, step_s=save_s + 0.2, ckpt_s=ckpt))
    samples += steps(22, 40, 0.2, after)
    events = replay(samples).events
    assert not [e for e in events if e.key == "hang"], [e.line() for e in events]
    # the same run with the save left unsaid is a hang (the test can fail)
    for s in samples:
        s.ckpt_s = 0.0
    assert [e.action for e in replay(samples).events if e.key == "hang"] == ["new", "clear"]


# What the replays of the recorded runs say, figures included: the detector's cost may change (straggle.py judges
# every class in one pass), its verdicts may not. Live, the monitor named the same rank, kind and class at step 70,
# 18 and 19 (tests/data/live_*/README.md).
RECORDED = {
    "live_slow_link": (
        "slow_collective:0",
        70,
        "rank 2: persistent communication straggler, starting the collectives on PG 0 (mostly all_reduce 1.4 MB, "
        "up to #209) late: the other ranks' time in them grew from 223.5 ms to 1271.4 ms per step",
    ),
    "live_straggler": (
        "straggler:2",
        18,
        "rank 2 is a persistent compute straggler: compute 258.6 ms per step vs 83.7 ms on the other ranks, "
        "costing about 171.5 ms per step",
    ),
    "live_data_stall": (
        "straggler:2",
        20,
        "rank 2 is a persistent input straggler: input (waiting for data) 150.4 ms per step vs 0.1 ms on the "
        "other ranks, costing about 150.3 ms per step",
    ),
}


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_a_recorded_run_replays_to_the_same_verdict_and_figures(name: str) -> None:
    events = replay(run_dir_samples(DATA / name)).events
    assert [(e.action, e.key, e.step, e.finding.summary) for e in events] == [("new", *RECORDED[name])]


@pytest.mark.subprocess  # a fresh interpreter: another test may have imported pandas in this one
def test_the_first_finding_costs_the_monitor_no_pandas_import() -> None:
    """The live finding's advice comes from stragglers_spec, not the analyzer: importing pandas cost the
    monitor's thread 0.3 CPU-s at its first finding, more than all its looks of a run."""
    code = (
        "import sys; from pathlib import Path; from scope.live.replay import replay, run_dir_samples; "
        f"events = replay(run_dir_samples(Path({str(DATA / 'live_straggler')!r}))).events; "
        "print(len(events), events[0].finding.suggestion != '', 'pandas' in sys.modules)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["1", "True", "False"], proc.stdout
