"""Replay as a stream: a recorded run directory or an operation timeline fed to the detector step by step.

The detector sees the samples in the order they would have arrived (by completion time) and looks after
each arrival time, so the step at which it would have flagged a culprit, live, is measured on real data.

- a run directory: every rank's progress.jsonl, as `scope run` would have tailed it;
- an operation timeline (ByteDance's NDTimeline parquet or its Chrome form, scope.ingest.optrace): per
  worker and step, its compute (forward and backward compute ops), its time in data-parallel collectives,
  and its step time; workers are compared within their pipeline stage, and stages with each other.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scope.live.detector import LiveDetector, LiveEvent
from scope.live.samples import StepSample
from scope.live.tail import MAX_LINE, read_regular, to_sample

# Collective op types of an operation timeline, and the group they run in ("dp": the stage's data-parallel
# replicas). Point-to-point sends and receives are left out: their time is mostly the pipeline's bubble.
DP_COLLECTIVES = ("grads-reduce-scatter", "params-all-gather", "grads-all-reduce")


@dataclass
class Replay:
    events: list[LiveEvent]
    detector: LiveDetector
    steps: int  # steps replayed (the furthest any rank completed)


def replay(samples: list[StepSample], detector: LiveDetector | None = None) -> Replay:
    det = detector or LiveDetector()
    events: list[LiveEvent] = []
    ordered = sorted(samples, key=lambda s: (s.t, s.rank))
    for i, s in enumerate(ordered):
        det.add_sample(s)
        if i + 1 == len(ordered) or ordered[i + 1].t > s.t:
            events += det.evaluate(s.t)
    return Replay(events, det, det.max_step)


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
