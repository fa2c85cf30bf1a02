"""Replay as a stream: a recorded run directory or an operation timeline fed to the detector step by step.

The detector sees the samples in the order they would have arrived (by completion time) and looks at the
live monitor's pace: every LOOK_S of the recorded time (the records' own timestamps), with the samples
completed by then, so a replay says what the monitor said live, and the step at which it would have
flagged a culprit is measured on real data. (A look after every record, four times as often on a 4-rank
run, let a partial slow-collective verdict pass its 5 looks while a slowdown spread: it named a waiting
rank where the monitor named the late one, tests/data/live_slow_link.)

- a run directory: every rank's progress.jsonl, as `scope run` would have tailed it;
- an operation timeline (ByteDance's NDTimeline parquet or its Chrome form, scope.ingest.optrace): per
  worker and step, its compute (forward and backward compute ops), its time in data-parallel collectives,
  and its step time; workers are compared within their pipeline stage, and stages with each other.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scope.live.detector import LiveDetector, LiveEvent
from scope.live.samples import Heartbeat, StepSample
from scope.live.straggle import SAVE_SHARE
from scope.live.tail import MAX_LINE, read_regular, to_sample

# Collective op types of an operation timeline, and the group they run in ("dp": the stage's data-parallel
# replicas). Point-to-point sends and receives are left out: their time is mostly the pipeline's bubble.
DP_COLLECTIVES = ("grads-reduce-scatter", "params-all-gather", "grads-all-reduce")
# The live monitor's pace: `scope run`'s live thread ticks it every 0.5 s (collectors/watchdog.py
# WatchdogThread), `scope watch` every --interval (0.5 s by default).
LOOK_S = 0.5


@dataclass
class Replay:
    events: list[LiveEvent]
    detector: LiveDetector
    steps: int  # steps replayed (the furthest any rank completed)


def replay(samples: list[StepSample], detector: LiveDetector | None = None, look_s: float = LOOK_S) -> Replay:
    det = detector or LiveDetector()
    events: list[LiveEvent] = []
    ordered = sorted(samples, key=lambda s: (s.t, s.rank))
    saves = _saves(ordered)
    if not ordered:
        return Replay(events, det, det.max_step)
    look, i = ordered[0].t + look_s, 0
    while i < len(ordered):
        fed = i
        while i < len(ordered) and ordered[i].t <= look:
            _feed(det, ordered[i], saves)
            i += 1
        _replay_beats(det, saves, look)
        found = det.evaluate(look)
        events += found
        look = _next_look(det, look, look_s, ordered[i].t if i < len(ordered) else None, fed < i or bool(found))
    return Replay(events, det, det.max_step)


def _next_look(det: LiveDetector, look: float, look_s: float, next_t: float | None, moved: bool) -> float:
    """The next look that can say anything. Without new samples only the hang verdict moves (with time):
    the looks between are skipped, to the first at which the hang limit has passed, else to the one that
    sees the next sample; once a hang is open nothing new comes until a sample does."""
    after = look + look_s
    if next_t is None or moved or next_t <= after:
        return after
    due = next_t
    if det.hang is None:
        progress = max((b.step_t for b in det.beats.values() if b.step_t is not None), default=None)
        if progress is not None:
            due = min(due, progress + det.hang_limit_s())
    return look + max(1, math.ceil((due - look) / look_s - 1e-9)) * look_s


@dataclass
class _Save:
    """A checkpoint save a recorded sample holds: its rank was saving from `start` to `end` (the record's
    span, the save's place in it unknown). Live, the heartbeat said so and no hang was judged meanwhile."""

    rank: int
    start: float
    end: float


def _saves(ordered: list[StepSample]) -> list[_Save]:
    return [_Save(s.rank, s.t - s.step_s * s.steps, s.t) for s in ordered if s.ckpt_s > SAVE_SHARE * s.step_s]


def _replay_beats(det: LiveDetector, saves: list[_Save], now: float) -> None:
    """The heartbeats the hook would have written: a record holds none, so every rank counts as beating
    (a hang's culprit is judged from the steps), and one saving a checkpoint says so (no hang meanwhile)."""
    for beat in det.beats.values():
        beat.written = max(beat.written, now)
    for save in saves:
        if save.start <= now < save.end:
            known = det.beats.get(save.rank)
            step, step_t = (known.step, known.step_t) if known is not None else (0, None)
            det.add_beat(Heartbeat(save.rank, now, step, step_t, saving_since=save.start))


def _feed(det: LiveDetector, s: StepSample, saves: list[_Save]) -> None:
    beat = det.beats.get(s.rank)
    if beat is not None and beat.saving_since is not None and any(v.rank == s.rank and v.end == s.t for v in saves):
        det.add_beat(Heartbeat(s.rank, s.t, beat.step, beat.step_t, saved_at=s.t))  # the save ended: progress
    det.add_sample(s)


def run_dir_samples(run_dir: Path) -> list[StepSample]:
    """Every rank's progress lines as step samples (guarded reads: regular files, bounded lines)."""
    out: list[StepSample] = []
    for folder in sorted((Path(run_dir) / "ranks").glob("*")):
        if not folder.name.isdigit():
            continue
        data = read_regular(folder / "progress.jsonl", 0, 64 << 20) or b""
        prev: dict[str, Any] | None = None
        for raw in data.split(b"\n"):
            try:
                rec = json.loads(raw) if raw.strip() and len(raw) <= MAX_LINE else None
            except ValueError:
                continue
            if not isinstance(rec, dict) or not isinstance(rec.get("step"), int) or "t_ns" not in rec:
                continue
            sample = to_sample(int(folder.name), prev, rec)
            prev = rec
            if sample is not None:
                out.append(sample)
    return out


def optrace_samples(path: Path) -> list[StepSample]:
    """Per worker and step of an operation timeline (a trace-<T>.parquet or timeline-<T>.json.gz file)."""
    from scope.errors import ScopeError
    from scope.ingest.optrace import find_job, read_job
    from scope.inputs import Inventory

    job = find_job(Inventory.scan(path))
    if job is None:
        raise ScopeError(f"{path}: not an operation timeline (trace-<T>.parquet or timeline-<T>.json.gz)")
    ops = read_job(job)
    ops = ops.assign(end=ops["start_ts"] + ops["duration"])
    keys = ["step", "rank", "stage"]
    per = ops.groupby(keys).agg(start=("start_ts", "min"), end=("end", "max"))
    compute = ops[ops["optype"].str.endswith("-compute")].groupby(keys)["duration"].sum()
    comm = ops[ops["optype"].isin(DP_COLLECTIVES)].groupby(keys)["duration"].sum()
    step_len = (per["end"] - per["start"]).groupby("step").max()
    order = {step: i + 1 for i, step in enumerate(sorted(step_len.index))}
    t0, ends = 0.0, {}
    for step in sorted(step_len.index):  # the sampled steps laid end to end
        t0 += float(step_len[step])
        ends[step] = t0
    out = []
    for step, rank, stage in per.index:
        key = (step, rank, stage)
        out.append(
            StepSample(
                rank=int(rank),
                step=order[step],
                t=ends[step],
                step_s=float(step_len[step]),
                compute_s=float(compute.get(key, 0.0)),
                comm={f"dp/stage{stage}": float(comm[key])} if key in comm.index else {},
                group=int(stage),
            )
        )
    return out
