"""What-if metrics from the replay: slowdown S, waste, attribution to op types, workers, stages, steps.

T_nodelay: each step replayed with its traced durations (launch delays gone, so simulator error does
not count as slowdown). T_ideal: every compute op at the mean of its type, every transfer at the median
of its type (communication stragglers are rare, extreme outliers: the median ignores them).
S = mean T_nodelay / mean T_ideal; waste = 1 - 1/S. S_X = T with only X's ops traced, the rest
ideal, over T_ideal. M_X = (T_ori - T_rem) / (T_ori - T_ideal): the share of the slowdown removed by
making X ideal (M_W for the worst ~3% of workers by S_w, M_S for the last stage).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scope.analyzers.whatif.graph import StepGraph, build, prepare, step_templates
from scope.analyzers.whatif.replay import chunk_columns, replay

# "Fix the worst few workers": the paper's M_W fixes the slowest 3% of workers (at least one).
WORST_WORKER_SHARE = 0.03
# S_w costs one replay per worker: beyond this many workers it is replayed for the workers with the most
# excess time (their ops' traced minus ideal durations), which are where the worst ones are.
EXACT_WORKERS = 64


@dataclass
class Worker:
    id: int
    dp_rank: int
    stage: int
    rank: int = -1  # the global rank that traced it, when the timeline says


@dataclass
class WhatIf:
    """Everything the what-if analysis measures on one job (times in seconds)."""

    steps: list[int]
    workers: list[Worker]
    pp: int
    t_base: dict[int, float]
    t_nodelay: dict[int, float]
    t_ideal: dict[int, float]
    by_optype: dict[str, float] = field(default_factory=dict)
    by_dp_rank: dict[int, float] = field(default_factory=dict)
    by_stage: dict[int, float] = field(default_factory=dict)
    by_worker: dict[int, float] = field(default_factory=dict)
    excess_by_worker: dict[int, float] = field(default_factory=dict)  # seconds per step over ideal
    by_step: dict[int, float] = field(default_factory=dict)
    by_dp_rank_per_step: dict[int, dict[int, float]] = field(default_factory=dict)
    by_stage_per_step: dict[int, dict[int, float]] = field(default_factory=dict)
    fix_workers: dict[str, Any] = field(default_factory=dict)
    fix_last_stage: dict[str, Any] = field(default_factory=dict)
    fix_worst_stage: dict[str, Any] = field(default_factory=dict)  # the stage with the largest S
    # micro-batch compute made equal within each stage and step (data / sequence-length imbalance gone)
    fix_microbatch: dict[str, Any] = field(default_factory=dict)

    @property
    def slowdown(self) -> float:
        return _mean(self.t_nodelay) / _mean(self.t_ideal)

    @property
    def waste(self) -> float:
        return 1.0 - 1.0 / self.slowdown

    @property
    def launch_slowdown(self) -> float:
        return _mean(self.t_base) / _mean(self.t_nodelay)


def _mean(values: dict[int, float]) -> float:
    return float(np.mean(list(values.values()))) if values else float("nan")


def analyze_ops(ops: pd.DataFrame, pp: int | None = None) -> WhatIf:
    """Run the what-if analysis on an operation-level timeline (columns of the ByteDance parquet)."""
    ops = prepare(ops)
    pp = int(pp or ops["stage"].max() + 1)
    graphs = [build(ops, steps, pp) for steps in step_templates(ops)]
    if "rank" not in ops.columns:
        ops["rank"] = -1
    first = ops.groupby("worker", sort=True)[["dp_rank", "stage", "rank"]].first()
    workers = [Worker(int(w), int(d), int(s), int(rk)) for w, (d, s, rk) in first.iterrows()]
    ideal = _ideal_durations(graphs)
    result = WhatIf(
        steps=sorted(int(s) for g in graphs for s in g.steps),
        workers=workers,
        pp=pp,
        t_base={},
        t_nodelay={},
        t_ideal={},
    )
    for g, g_ideal in zip(graphs, ideal, strict=True):
        t_ori = replay(g, g.duration)
        t_ideal = replay(g, g_ideal[:, None])[0]
        for s, b, t in zip(g.steps, g.base_time, t_ori, strict=True):
            result.t_base[int(s)] = float(b)
            result.t_nodelay[int(s)] = float(t)
            result.t_ideal[int(s)] = float(t_ideal)
    _attribute(result, graphs, ideal)
    return result


def _ideal_durations(graphs: list[StepGraph]) -> list[np.ndarray]:
    """Per graph, each node's ideal duration: mean (compute) or median (transfer) of its type, job-wide."""
    types = sorted({t for g in graphs for t in g.node_type})
    ideal_of: dict[str, float] = {}
    for t in types:
        values = np.concatenate([g.duration[g.node_type == t].ravel() for g in graphs])
        comm = any(bool(g.node_comm[g.node_type == t].any()) for g in graphs)
        ideal_of[t] = float(np.median(values)) if comm else float(np.mean(values))
    return [np.array([ideal_of[t] for t in g.node_type]) for g in graphs]


def node_mask(g: StepGraph, workers: np.ndarray) -> np.ndarray:
    """Nodes with at least one participant among `workers`.

    A node keeps its traced duration when any participant's op is traced: a collective is as slow as
    its one slow member. So "only X traced" keeps the nodes X takes part in, and "X made ideal" keeps
    every node with a participant outside X.
    """
    hit = np.isin(g.part_worker, workers).astype(np.int64)
    return np.add.reduceat(hit, g.part_ptr[:-1]) > 0 if len(hit) else np.zeros(0, dtype=bool)


def outside_mask(g: StepGraph, workers: np.ndarray) -> np.ndarray:
    """Nodes with at least one participant not among `workers`."""
    hit = (~np.isin(g.part_worker, workers)).astype(np.int64)
    return np.add.reduceat(hit, g.part_ptr[:-1]) > 0 if len(hit) else np.zeros(0, dtype=bool)


Scenario = Callable[[StepGraph], np.ndarray]  # the nodes kept at their traced durations


def times_with(graphs: list[StepGraph], ideal: list[np.ndarray], scenarios: list[Scenario]) -> np.ndarray:
    """Step times (scenario x step, steps in graph order) with each scenario's nodes traced, the rest ideal."""
    rows = []
    for gi, g in enumerate(graphs):
        n_steps = len(g.steps)
        batch = max(1, chunk_columns(g) // n_steps)  # scenarios per pass: the columns of one chunk
        out = np.empty((len(scenarios), n_steps))
        for lo in range(0, len(scenarios), batch):
            masks = [sc(g) for sc in scenarios[lo : lo + batch]]
            # float32: step times of up to hours keep sub-millisecond precision, at half the memory traffic
            traced, ideal32 = g.duration.astype(np.float32), ideal[gi].astype(np.float32)[:, None]
            cols = np.concatenate([np.where(m[:, None], traced, ideal32) for m in masks], axis=1)
            out[lo : lo + len(masks)] = replay(g, cols).reshape(len(masks), n_steps)
        rows.append(out)
    return np.concatenate(rows, axis=1)


def _attribute(result: WhatIf, graphs: list[StepGraph], ideal: list[np.ndarray]) -> None:
    steps = [int(s) for g in graphs for s in g.steps]
    t_ideal = np.array([result.t_ideal[s] for s in steps])
    mean_ideal = float(t_ideal.mean())
    ws = result.workers
    dps = sorted({w.dp_rank for w in ws})
    stages = sorted({w.stage for w in ws})
    types = sorted({t for g in graphs for t in g.node_type})

    def of_workers(sel: list[int]) -> Scenario:
        arr = np.asarray(sel)
        return lambda g: node_mask(g, arr)

    def of_type(t: str) -> Scenario:
        return lambda g: g.node_type == t

    scen: list[Scenario] = [of_workers([w.id for w in ws if w.dp_rank == d]) for d in dps]
    scen += [of_workers([w.id for w in ws if w.stage == s]) for s in stages]
    scen += [of_type(t) for t in types]
    result.excess_by_worker = _excess(graphs, ideal, len(ws))
    candidates = sorted(result.excess_by_worker, key=lambda w: -result.excess_by_worker[w])[:EXACT_WORKERS]
    exact = [w for w in ws if len(ws) <= EXACT_WORKERS or w.id in set(candidates)]
    scen += [of_workers([w.id]) for w in exact]
    times = times_with(graphs, ideal, scen)
    ratios = times / t_ideal[None, :]
    overall = times.mean(axis=1) / mean_ideal
    i = 0
    for d in dps:
        result.by_dp_rank[d] = float(overall[i])
        result.by_dp_rank_per_step[d] = dict(zip(steps, ratios[i].tolist(), strict=True))
        i += 1
    for s in stages:
        result.by_stage[s] = float(overall[i])
        result.by_stage_per_step[s] = dict(zip(steps, ratios[i].tolist(), strict=True))
        i += 1
    for t in types:
        result.by_optype[t] = float(overall[i])
        i += 1
    for w in exact:
        result.by_worker[w.id] = float(overall[i])
        i += 1
    result.by_step = {s: result.t_nodelay[s] / result.t_ideal[s] for s in steps}
    n_worst = max(1, math.ceil(WORST_WORKER_SHARE * len(ws)))
    worst = sorted(result.by_worker, key=lambda w: -result.by_worker[w])[:n_worst]
    last = [w.id for w in ws if w.stage == max(stages)]
    result.fix_workers = _fix(result, graphs, ideal, worst)
    result.fix_last_stage = _fix(result, graphs, ideal, last)
    worst_stage = max(result.by_stage, key=lambda st: result.by_stage[st])
    result.fix_worst_stage = (
        result.fix_last_stage
        if worst_stage == max(stages)
        else _fix(result, graphs, ideal, [w.id for w in ws if w.stage == worst_stage])
    )
    result.fix_worst_stage = {**result.fix_worst_stage, "stage": worst_stage}
    result.fix_microbatch = _fix_microbatch(result, graphs)


def _excess(graphs: list[StepGraph], ideal: list[np.ndarray], n_workers: int) -> dict[int, float]:
    """Per worker, the mean per step of its ops' traced minus ideal durations, where positive."""
    total = np.zeros(n_workers)
    n_steps = 0
    for g, g_ideal in zip(graphs, ideal, strict=True):
        extra = np.clip(g.duration - g_ideal[:, None], 0.0, None).sum(axis=1)  # per node, all steps
        counts = np.diff(g.part_ptr)
        np.add.at(total, g.part_worker, np.repeat(extra, counts))
        n_steps += len(g.steps)
    return {w: float(total[w] / max(1, n_steps)) for w in range(n_workers)}


def _fix(result: WhatIf, graphs: list[StepGraph], ideal: list[np.ndarray], fixed: list[int]) -> dict[str, Any]:
    """Explained fraction when `fixed` workers become ideal (rem) / when only they are traced (add)."""
    arr = np.asarray(fixed)
    t_rem = float(times_with(graphs, ideal, [lambda g: outside_mask(g, arr)]).mean())
    t_add = float(times_with(graphs, ideal, [lambda g: node_mask(g, arr)]).mean())
    t_ori, t_ideal = _mean(result.t_nodelay), _mean(result.t_ideal)
    gap = t_ori - t_ideal
    return {
        "workers": [int(w) for w in fixed],
        "t_ori": t_ori,
        "t_ideal": t_ideal,
        "t_rem": t_rem,
        "t_add": t_add,
        "explained_by_removal": (t_ori - t_rem) / gap if gap > 0 else 0.0,
        "explained_by_addition": (t_add - t_ideal) / gap if gap > 0 else 0.0,
    }


def _fix_microbatch(result: WhatIf, graphs: list[StepGraph]) -> dict[str, Any]:
    """M_D: the share of the slowdown removed by giving every compute op of a stage, in a step, the mean
    of that stage's ops of its type in that step (all its micro-batches on all its DP ranks). What stays:
    the stage's own total (a stage imbalance), step-to-step change and all communication; what goes: the
    spread of compute between micro-batches and DP ranks within a stage and step (data / sequence-length
    imbalance: micro-batches of unequal tokens, a slowest DP rank that changes from step to step)."""
    stage_of = np.array([w.stage for w in result.workers], dtype=np.int64)
    times = []
    for g in graphs:
        dur = g.duration.astype(np.float64).copy()
        single = np.diff(g.part_ptr) == 1
        compute = ~g.node_comm.astype(bool) & single
        nodes = np.flatnonzero(compute)
        if nodes.size:
            stage = stage_of[g.part_worker[g.part_ptr[nodes]]]
            keys = pd.factorize(pd.Series(g.node_type[nodes].astype(str)) + "@" + pd.Series(stage).astype(str))[0]
            for k in np.unique(keys):
                group = nodes[keys == k]
                dur[group, :] = dur[group, :].mean(axis=0)
        times.append(replay(g, dur))
    t_bal = float(np.concatenate(times).mean())
    t_ori, t_ideal = _mean(result.t_nodelay), _mean(result.t_ideal)
    gap = t_ori - t_ideal
    return {
        "t_ori": t_ori,
        "t_ideal": t_ideal,
        "t_rem": t_bal,
        "explained_by_removal": (t_ori - t_bal) / gap if gap > 0 else 0.0,
    }
