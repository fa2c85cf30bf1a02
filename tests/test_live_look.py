"""The look's shortcuts say what the long way says: the one-sort medians and quantiles, the typical step, the
hang gate kept between looks (benchmarks/live_look.py --same compares whole replays before and after)."""

from __future__ import annotations

import random
import statistics

import numpy as np

from scope.live.detector import LiveDetector
from scope.live.hang import HANG_FLOOR_S, HANG_STEPS, SAVE_MAX_S, HangGate, judge_hang
from scope.live.samples import Heartbeat, StepSample
from scope.live.straggle import median_positive, row_nanmedian, sort_rows, sorted_median, sorted_quantile


def typical_step(step_times: list[float]) -> float | None:
    """The reference for median_positive: the statistics median of the positive step times."""
    clean = [t for t in step_times if t == t and t > 0]
    return statistics.median(clean) if clean else None


def row_quantile(a: np.ndarray, q: float) -> np.ndarray:
    """Per row, the q-quantile of its non-NaN values by one sort (what the straggler look computes)."""
    return sorted_quantile(*sort_rows(a), q)


def rows_with_gaps(seed: int, rows: int = 200, width: int = 8) -> np.ndarray:
    """Rows of step times with NaN where a slot holds no step, a few rows all NaN, some ties."""
    rng = np.random.default_rng(seed)
    a = np.round(rng.gamma(4.0, 0.05, (rows, width)), 3)
    a[rng.random((rows, width)) < 0.3] = np.nan
    a[::17] = np.nan
    return a


def test_one_sort_medians_and_quantiles_are_numpys() -> None:
    for seed in range(5):
        a = rows_with_gaps(seed)
        empty = np.isnan(a).all(axis=1)
        expected = np.full(len(a), np.nan)
        expected[~empty] = np.nanmedian(a[~empty], axis=1)
        np.testing.assert_array_equal(row_nanmedian(a), expected)  # the two middle values' mean, exactly
        np.testing.assert_array_equal(sorted_median(*sort_rows(a)), expected)
        quartile = np.full(len(a), np.nan)
        quartile[~empty] = np.nanquantile(a[~empty], 0.25, axis=1)
        np.testing.assert_allclose(row_quantile(a, 0.25), quartile, rtol=1e-12)
        assert np.isnan(row_quantile(a, 0.25)[empty]).all()


def test_the_typical_step_by_one_sort_is_the_statistics_median() -> None:
    rng = random.Random(3)
    for n in (1, 2, 3, 4, 7, 64, 513):
        values = np.array([rng.choice([float("nan"), 0.0, -1.0, rng.uniform(0.05, 2.0)]) for _ in range(n)])
        assert median_positive(values) == typical_step([float(x) for x in values])
    assert median_positive(np.array([np.nan, 0.0])) is None
    assert median_positive(np.array([0.3, 0.1, 0.2, 0.4])) == statistics.median([0.1, 0.2, 0.3, 0.4])


def test_the_hang_gate_says_no_hang_exactly_where_judge_hang_does() -> None:
    """Over times around the limit, with a save in progress, an ended rank, a save that ended: the gate's quiet
    look is judge_hang's None, and where it is not quiet, judge_hang names a hang."""
    t0 = 1000.0
    cases = {
        "stepping": [Heartbeat(r, t0, 10, t0 - 0.01 * r) for r in range(4)],
        "saving": [Heartbeat(0, t0, 10, t0, saving_since=t0 + 5.0)] + [Heartbeat(r, t0, 10, t0) for r in (1, 2, 3)],
        "ended": [Heartbeat(0, t0, 10, t0, state="ended")] + [Heartbeat(r, t0, 10, t0) for r in (1, 2, 3)],
        "saved": [Heartbeat(0, t0, 10, t0, saved_at=t0 + 3.0)] + [Heartbeat(r, t0, 9, t0 - 1) for r in (1, 2, 3)],
        "no step yet": [Heartbeat(r, t0, 0, None) for r in range(4)],
    }
    for name, beats in cases.items():
        by_rank = {b.rank: b for b in beats}
        gate = HangGate.of(by_rank)
        hangs = 0
        for typical in (None, 0.1, 2.0):
            for dt in np.arange(0.0, SAVE_MAX_S + 40.0, 0.25):
                now = t0 + float(dt)
                verdict = judge_hang(by_rank, now, typical)
                assert gate.quiet(now, typical, HANG_FLOOR_S, HANG_STEPS) == (verdict is None), (name, typical, dt)
                hangs += verdict is not None
        assert hangs > 0 or name in ("ended", "no step yet"), name


def test_a_heartbeat_read_again_unchanged_keeps_the_gate_and_a_changed_one_renews_it() -> None:
    det = LiveDetector()
    for step in range(1, 21):
        for r in range(4):
            det.add_sample(StepSample(rank=r, step=step, t=1000.0 + step, step_s=1.0, compute_s=0.6))
    det.evaluate(1021.0)
    det.add_beat(Heartbeat(2, 1021.0, 20, 1020.0))
    gate = det._hang_gate()
    det.add_beat(Heartbeat(2, 1021.0, 20, 1020.0))  # the tail reads every heartbeat at each look
    assert det._hang_gate() is gate
    det.add_beat(Heartbeat(2, 1031.0, 20, 1020.0, where="train.py:step"))  # the stalled rank's frame
    assert det._hang_gate() is not gate
    (hang,) = [e for e in det.evaluate(1041.0) if e.key == "hang"]  # 10 typical steps of 1 s, the 10 s floor
    assert hang.action == "new" and hang.finding.kind == "hang"


def _held_bytes(obj: object) -> int:
    """The bytes of the numpy arrays an object holds in its attributes, and in the dicts and lists there."""
    total = 0
    for v in vars(obj).values():
        for x in v.values() if isinstance(v, dict) else v if isinstance(v, list) else [v]:
            total += x.nbytes if isinstance(x, np.ndarray) else 0
    return total


def test_the_row_ranges_kept_do_not_grow_with_every_rank_count_seen() -> None:
    """A look at n ranks indexes its rows with np.arange(n): one is kept (the last count), not one per count
    (67 MB over every count up to 4,096 ranks)."""
    tracker = LiveDetector().stragglers
    tracker._arange(8)
    held = _held_bytes(tracker)
    for n in range(9, 1000):
        assert (tracker._arange(n) == np.arange(n)).all()
    assert tracker._arange(999) is tracker._arange(999)  # (kept while the count stays)
    assert _held_bytes(tracker) - held <= 1000 * 8  # (a dict of every count: 4 MB)


def test_a_new_stragglers_finding_is_the_one_its_event_carries() -> None:
    """The look that flags a straggler words its finding once: the event's finding is the active one (it was
    worded again, another object, by the still-slow pass of the same look)."""
    det = LiveDetector()
    rng = random.Random(0)
    t = 1000.0
    for step in range(1, 60):
        t += 0.1
        for r in range(8):
            compute = 0.08 * rng.uniform(0.85, 1.15) * (1.6 if r == 3 and step >= 30 else 1.0)
            det.add_sample(StepSample(rank=r, step=step, t=t, step_s=0.1, compute_s=compute, data_s=0.005))
        new = [e for e in det.evaluate(t) if e.action == "new"]
        if new:
            (event,) = new
            assert event.key == "straggler:3" and det.active["straggler:3"] is event.finding
            return
    raise AssertionError("no straggler flagged")
