"""The live detector fed by hand: each verdict, its culprit and its words; healthy noise gives nothing."""

from __future__ import annotations

import random
from collections.abc import Callable

from scope.live.detector import LiveDetector, LiveEvent
from scope.live.hang import hang_limit
from scope.live.samples import Heartbeat, StepSample

STEP_S = 0.1


def run_steps(
    det: LiveDetector,
    ranks: int,
    steps: int,
    shape: Callable[[int, int, random.Random], dict],
    seed: int = 0,
    t0: float = 1000.0,
) -> list[tuple[int, LiveEvent]]:
    """Feed `steps` steps of `ranks` ranks (shape gives each sample's fields); look after every step."""
    rng = random.Random(seed)
    events: list[tuple[int, LiveEvent]] = []
    t = t0
    for step in range(1, steps + 1):
        fields = {r: shape(r, step, rng) for r in range(ranks)}
        t += max(f["step_s"] for f in fields.values())
        for r, f in fields.items():
            det.add_sample(StepSample(rank=r, step=step, t=t, **f))
        events += [(step, e) for e in det.evaluate(t)]
    return events


def noisy(r: int, step: int, rng: random.Random, compute: float = 0.08, data: float = 0.005) -> dict:
    """A healthy rank: 15% noise on compute, a few ms of data wait, now and then an OS hiccup."""
    c = compute * rng.uniform(0.85, 1.15) * (3.0 if rng.random() < 0.02 else 1.0)
    d = data * rng.uniform(0.5, 1.5)
    h = 0.002 * rng.random()
    return {"step_s": STEP_S + rng.uniform(0, 0.01), "compute_s": c, "data_s": d, "host_s": h}


def test_healthy_noise_and_host_contention_give_no_finding() -> None:
    def shape(r: int, step: int, rng: random.Random) -> dict:
        f = noisy(r, step, rng)
        if 50 <= step < 70:  # the host is busy for everyone: all ranks 3x slower
            f = {k: v * 3 for k, v in f.items()}
        return f

    for seed in range(3):
        det = LiveDetector()
        assert run_steps(det, 8, 200, shape, seed=seed) == []


def test_compute_straggler_from_step_30_is_named_within_eight_steps_then_clears() -> None:
    def shape(r: int, step: int, rng: random.Random) -> dict:
        f = noisy(r, step, rng)
        if r == 3 and 30 <= step < 80:
            f["compute_s"] *= 1.6
        return f

    det = LiveDetector()
    events = run_steps(det, 8, 120, shape)
    new = [(s, e) for s, e in events if e.action == "new"]
    assert len(new) == 1
    step, event = new[0]
    assert 30 <= step <= 38
    f = event.finding
    assert (f.kind, f.ranks, f.metrics["straggler_kind"]) == ("straggler", [3], "compute")
    assert f.summary.startswith("rank 3 is a persistent compute straggler: compute ")
    assert "per step vs" in f.summary and "costing about" in f.summary
    assert 1.4 < f.metrics["step_ratio"] < 1.9 and f.metrics["since_step"] >= 30
    cleared = [(s, e) for s, e in events if e.action == "clear"]
    assert [e.key for _, e in cleared] == ["straggler:3"] and 80 <= cleared[0][0] <= 86
    assert det.active == {}


def test_input_and_host_stragglers_get_their_class() -> None:
    def shape(r: int, step: int, rng: random.Random) -> dict:
        f = noisy(r, step, rng)
        if r == 2 and step >= 20:
            f["data_s"] += 0.06
        if r == 5 and step >= 20:
            f["host_s"] += 0.05
        return f

    det = LiveDetector()
    events = run_steps(det, 8, 80, shape)
    first = {e.finding.ranks[0]: (s, e) for s, e in reversed(events) if e.action == "new"}
    assert {r: e.finding.metrics["straggler_kind"] for r, (_, e) in first.items()} == {2: "input", 5: "host"}
    assert "input (waiting for data)" in det.active["straggler:2"].summary
    # the input straggler at once; the host one once it has waited HOST_PERSIST_S (3 s: 30 steps of 0.1 s)
    assert first[2][0] <= 28 and 40 <= first[5][0] <= 56, {r: s for r, (s, _) in first.items()}


def test_a_rank_favoured_less_by_the_scheduler_for_a_second_is_no_host_straggler() -> None:
    """Ranks that outnumber their host's cores wait for one, each in turn: rank 1 waits 60% more than its
    peers for 12 steps of 0.12 s, then rank 3 does. Neither is a host straggler (HOST_PERSIST_S)."""

    def shape(r: int, step: int, rng: random.Random) -> dict:
        f = {"step_s": 0.12, "compute_s": 0.03 * rng.uniform(0.95, 1.05), "data_s": 0.0}
        turn = 1 if 20 <= step < 32 else 3 if 50 <= step < 62 else None
        f["host_s"] = 0.05 * rng.uniform(0.9, 1.1) * (1.6 if r == turn else 1.0)
        return f

    for seed in range(3):
        assert run_steps(LiveDetector(), 4, 100, shape, seed=seed) == []


def test_a_compute_straggler_on_a_host_short_of_cores_is_named() -> None:
    """4 ranks on 2 busy cores: each computes 33 ms a step and waits 110 ms for a core; from step 20 rank 1
    computes 1.5x (16 ms more, and waits more for it). Its excess CPU time is under 15% of the wall-clock
    step, but a CPU second costs 4.3 wall seconds here: named, as compute, within 10 steps."""

    def shape(r: int, step: int, rng: random.Random) -> dict:
        slow = 1.5 if r == 1 and step >= 20 else 1.0
        compute = 0.033 * slow * rng.uniform(0.9, 1.1)
        host = 0.110 * slow * rng.uniform(0.8, 1.2)
        return {"step_s": 0.2, "compute_s": compute, "data_s": 0.0, "host_s": host}

    events = [(s, e) for s, e in run_steps(LiveDetector(), 4, 60, shape) if e.action == "new"]
    assert [(e.finding.ranks, e.finding.metrics["straggler_kind"]) for _, e in events] == [([1], "compute")]
    assert 20 <= events[0][0] <= 30


def test_stragglers_are_judged_within_their_stage_and_an_unequal_stage_is_an_imbalance() -> None:
    def shape(r: int, step: int, rng: random.Random) -> dict:
        f = noisy(r, step, rng)
        f["group"] = r // 2  # 4 stages of 2 data-parallel replicas
        if f["group"] == 3:
            f["compute_s"] *= 1.5  # the last stage does more
        return f

    det = LiveDetector()
    events = run_steps(det, 8, 40, shape)
    new = [e.finding for _, e in events if e.action == "new"]
    assert [f.kind for f in new] == ["pipeline_imbalance"]
    assert new[0].ranks == [6, 7] and new[0].metrics["stage"] == 3
    assert new[0].summary.startswith("pipeline stage 3 on ranks 6, 7 bounds the step")


def beats(now: float, steps: dict[int, int], step_t: dict[int, float], written: dict[int, float] | None = None,
          **extra: dict) -> list[Heartbeat]:  # fmt: skip
    out = []
    for r, s in steps.items():
        b = Heartbeat(rank=r, written=(written or {}).get(r, now), step=s, step_t=step_t[r])
        for k, v in extra.items():
            setattr(b, k, v.get(r))
        out.append(b)
    return out


def hung_detector(step_s: float = STEP_S) -> tuple[LiveDetector, float]:
    """Four ranks that stepped 20 times every step_s; returns the detector and the last step's time."""
    det = LiveDetector()
    run_steps(det, 4, 20, lambda r, s, rng: {"step_s": step_s, "compute_s": step_s * 0.8})
    last = max(b.step_t for b in det.beats.values())
    return det, last


def test_hang_limit_follows_the_rhythm_with_a_floor() -> None:
    assert hang_limit(0.1) == 10.0  # 10 x 0.1 s is below the floor
    assert hang_limit(4.0) == 40.0
    assert hang_limit(None) == 10.0
    det, last = hung_detector(step_s=3.0)
    assert abs(det.hang_limit_s() - 30.0) < 1e-6
    assert det.evaluate(last + 25) == []
    assert [e.finding.kind for e in det.evaluate(last + 31)] == ["hang"]


def test_hang_culprit_stopped_beating() -> None:
    det, last = hung_detector()
    now = last + 40
    for b in beats(now, {0: 20, 1: 20, 2: 20, 3: 20}, dict.fromkeys(range(4), last), {1: last}):
        det.add_beat(b)
    events = det.evaluate(now)
    assert len(events) == 1
    f = events[0].finding
    assert (f.kind, f.severity, f.ranks, f.metrics["culprit_rule"]) == ("hang", "critical", [1], "stopped_beating")
    assert "rank 1 stopped beating" in f.summary and "ranks 0, 2, 3 still beat" in f.summary


def test_hang_named_from_the_rhythm_in_seconds_not_300() -> None:
    det, last = hung_detector()
    steps = {0: 21, 1: 20, 2: 21, 3: 21}
    for b in beats(last + 5, steps, {0: last + 0.1, 1: last, 2: last + 0.1, 3: last + 0.1}):
        det.add_beat(b)
    assert det.evaluate(last + 5) == []  # under the 10 s floor
    f = det.evaluate(last + 10.5)[0].finding
    assert f.ranks == [1] and f.metrics["culprit_rule"] == "behind"
    assert "rank 1 stopped at step 20 while ranks 0, 2, 3 finished step 21" in f.summary
    assert det.evaluate(last + 11) == []  # said once


def test_hang_culprit_not_joined_and_elsewhere() -> None:
    det, last = hung_detector()
    coll = {r: {"group": "0", "seq": 812 if r != 2 else 811, "op": "all_reduce"} for r in range(4)}
    for b in beats(last + 12, dict.fromkeys(range(4), 20), dict.fromkeys(range(4), last), coll=coll):
        det.add_beat(b)
    f = det.evaluate(last + 12)[0].finding
    assert f.ranks == [2] and "rank 2 never joined all_reduce #812 on PG 0; ranks 0, 1, 3 wait for it" in f.summary

    det, last = hung_detector()
    wait = "torch/autograd/graph.py:_engine_run_backward"
    where = {0: wait, 1: "train.py:load_batch", 2: wait, 3: wait}
    for b in beats(last + 12, dict.fromkeys(range(4), 20), dict.fromkeys(range(4), last), where=where):
        det.add_beat(b)
    f = det.evaluate(last + 12)[0].finding
    assert f.ranks == [1] and f.metrics["culprit_rule"] == "elsewhere"
    assert f"rank 1 is not where the 3 others wait ({wait}): at train.py:load_batch" in f.summary


def test_hang_clears_when_a_step_completes_and_an_ended_rank_is_no_hang() -> None:
    det, last = hung_detector()
    assert [e.action for e in det.evaluate(last + 11)] == ["new"]
    det.add_sample(StepSample(rank=0, step=21, t=last + 11.5, step_s=11.5, compute_s=0.08))
    events = det.evaluate(last + 12)
    assert [(e.action, e.key) for e in events] == [("clear", "hang")]

    det, last = hung_detector()
    det.add_beat(Heartbeat(rank=2, written=last + 1, step=20, step_t=last, state="exception"))
    assert det.evaluate(last + 60) == []


def comm_shape(slow: Callable[[int, int], float]) -> Callable[[int, int, random.Random], dict]:
    def shape(r: int, step: int, rng: random.Random) -> dict:
        f = noisy(r, step, rng)
        f["comm"] = {"dp": 0.02 * rng.uniform(0.9, 1.1) + slow(r, step), "pp": 0.01 * rng.uniform(0.9, 1.1)}
        return f

    return shape


def test_slow_collective_on_a_whole_group_is_a_slow_link() -> None:
    det = LiveDetector()
    events = run_steps(det, 8, 60, comm_shape(lambda r, s: 0.05 if s >= 30 else 0.0))
    new = [(s, e.finding) for s, e in events if e.action == "new"]
    assert len(new) == 1 and 30 <= new[0][0] <= 40
    f = new[0][1]
    assert (f.kind, f.metrics["group"], f.metrics["shape"]) == ("slow_collective", "dp", "group")
    assert f.summary.startswith("collectives on PG dp take") and "a slow link on its path" in f.summary


def test_slow_collective_late_starter_is_named() -> None:
    det = LiveDetector()
    events = run_steps(det, 8, 60, comm_shape(lambda r, s: 0.05 if s >= 30 and r != 6 else 0.0))
    new = [e.finding for _, e in events if e.action == "new"]
    assert [(f.kind, f.ranks, f.metrics["shape"]) for f in new] == [("slow_collective", [6], "late")]


def test_waiting_for_a_straggler_is_not_a_slow_collective() -> None:
    def shape(r: int, step: int, rng: random.Random) -> dict:
        f = comm_shape(lambda r, s: 0.05 if s >= 30 and r != 6 else 0.0)(r, step, rng)
        if r == 6 and step >= 30:
            f["compute_s"] += 0.05
        return f

    det = LiveDetector()
    events = run_steps(det, 8, 60, shape)
    assert [(e.finding.kind, e.finding.ranks) for _, e in events if e.action == "new"] == [("straggler", [6])]


def test_rank_metrics_and_bad_samples() -> None:
    det, last = hung_detector()
    det.add_sample(StepSample(rank=0, step=21, t=last, step_s=float("nan")))
    assert det.dropped == 1
    m = det.rank_metrics(last + 2)
    assert set(m) == {0, 1, 2, 3}
    assert abs(m[0]["step_s"] - STEP_S) < 1e-9 and abs(m[0]["since_progress_s"] - 2) < 1e-6
    assert abs(m[0]["score"] - 1.0) < 1e-9


def test_hang_first_without_a_culprit_then_named_when_a_beat_goes_stale() -> None:
    """A frozen rank (SIGSTOP) writes nothing more: at the rhythm's limit no rank stands out; once its beat
    is stale the same hang is said again, naming it."""
    det, last = hung_detector()
    for t in (last + 5, last + 11):
        for b in beats(t, dict.fromkeys(range(4), 20), dict.fromkeys(range(4), last), {1: last + 1}):
            det.add_beat(b)
        events = det.evaluate(t)
    assert [(e.action, e.finding.ranks, e.finding.metrics["culprit_rule"]) for e in events] == [("new", [], "unknown")]
    for b in beats(last + 27, dict.fromkeys(range(4), 20), dict.fromkeys(range(4), last), {1: last + 1}):
        det.add_beat(b)
    events = det.evaluate(last + 27)
    assert [(e.action, e.finding.ranks, e.finding.metrics["culprit_rule"]) for e in events] == [
        ("update", [1], "stopped_beating")
    ]
    assert events[0].line().startswith("scope live: hang: no rank completed a step for 27 s")
    assert det.evaluate(last + 28) == []  # said once
    assert det.active["hang"].ranks == [1]


def test_a_rank_slow_in_the_few_steps_of_a_jobs_first_look_is_no_straggler() -> None:
    """The first record of each rank covers start-up steps 4-5 (the one before, start-up, is no sample); rank 1
    computed 1.6x in them, then like its peers. Two steps of eight are no persistence (MIN_SEEN)."""
    det = LiveDetector()
    events: list[LiveEvent] = []
    for step, covers in [(5, 2), *((s, 1) for s in range(6, 30))]:
        t = 1000.0 + step * STEP_S
        for r in range(4):
            compute = 0.08 * (1.6 if r == 1 and step == 5 else 1.0)
            det.add_sample(StepSample(rank=r, step=step, t=t, step_s=STEP_S, steps=covers, compute_s=compute))
        events += det.evaluate(t)
    assert events == []
