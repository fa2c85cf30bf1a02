"""Findings from a what-if result: which class of cause the slowdown belongs to, and who is named.

The classes follow the paper's reading of its metrics (and of the DP x PP heat-map):
- an individual slow worker: fixing the worst ~3% of workers removes most of the slowdown (M_W);
- a stage-partition imbalance: fixing the last stage removes most of it (M_S); the band on the heat-map;
- a data / sequence-length imbalance: making micro-batch compute equal within each stage and step
  removes more of the slowdown than fixing the worst workers or the last stage (M_D above M_W and M_S),
  or compute carries the slowdown and neither a few workers nor the last stage explain it: it is spread
  over many workers and steps (speckle on the heat-map).
A job slowed by less than SLOWED (S) gets no finding: 10% is the paper's threshold for "slowed".
"""

from __future__ import annotations

from scope.analyzers.whatif.model import WhatIf

from scope.finding import Finding

SLOWED = 1.10
EXPLAINS = 0.5  # an explained fraction above this makes the cause the root
SPREAD_SHARE = 0.25  # a worker "shares" the slowdown when its S_w - 1 reaches this part of the worst one's
COMPUTE_TYPES = ("forward-compute", "backward-compute")


def whatif_findings(r: WhatIf) -> list[Finding]:
    s = r.slowdown
    if not s >= SLOWED:
        return []
    mw = float(r.fix_workers.get("explained_by_removal", 0.0))
    ms = float(r.fix_last_stage.get("explained_by_removal", 0.0))
    common = {
        "slowdown": s,
        "waste": r.waste,
        "launch_slowdown": r.launch_slowdown,
        "t_nodelay_s": _mean(r.t_nodelay),
        "t_ideal_s": _mean(r.t_ideal),
        "m_w": mw,
        "m_s": ms,
        "time_lost_us": 1e6 * (_mean(r.t_nodelay) - _mean(r.t_ideal)) * len(r.steps),
    }
    md = float(r.fix_microbatch.get("explained_by_removal", 0.0))
    common["m_d"] = md
    if mw >= EXPLAINS and mw >= ms and mw >= md:
        return [_slow_worker(r, common)]
    # Micro-batch compute made equal within each stage and step explains more than the last stage or the
    # worst workers: the slowdown is in how the data falls into micro-batches, not in a stage or a worker.
    if md >= EXPLAINS and md > ms and md > mw:
        return [_data_imbalance(r, common)]
    if ms >= EXPLAINS:
        return [_stage_imbalance(r, common, max(r.by_stage), r.fix_last_stage)]
    m_stage = float(r.fix_worst_stage.get("explained_by_removal", 0.0))
    if m_stage >= EXPLAINS and m_stage >= mw:  # another stage than the last (e.g. the first, with embeddings)
        return [_stage_imbalance(r, common, int(r.fix_worst_stage["stage"]), r.fix_worst_stage)]
    compute = max((r.by_optype.get(t, 1.0) for t in COMPUTE_TYPES), default=1.0)
    if compute - 1.0 >= EXPLAINS * (s - 1.0):
        return [_data_imbalance(r, common)]
    top, value = max(r.by_optype.items(), key=lambda kv: kv[1], default=("", 1.0))
    if value - 1.0 >= EXPLAINS * (s - 1.0):
        return [_slow_op_type(r, common, top, value)]
    return []


def removed_words(fix: dict[str, float]) -> str:
    """How much of the slowdown making some workers ideal removes, as a share that never reads above 100%.

    M = (T_ori - T_rem) / (T_ori - T_ideal) exceeds 1 when the job with those workers made ideal runs
    faster than T_ideal: the ideal gives each op its type's mean, and the slow workers themselves raise
    that mean, so the others' ops sit below it. Then the fix removes all of the slowdown; the rest is how
    far the reference ideal is from the best the job can do, said as such (M stays in the metrics).
    """
    m = float(fix.get("explained_by_removal", 0.0))
    if m <= 1.0:
        return f"removes {100 * max(m, 0.0):.0f}% of the slowdown"
    t_rem, t_ideal = float(fix.get("t_rem", 0.0)), float(fix.get("t_ideal", 0.0))
    below = f" and runs {100 * (1 - t_rem / t_ideal):.0f}% below the ideal reference" if t_ideal > 0 else ""
    return (
        f"removes all of the slowdown{below} (the ideal takes each op type's mean, which the slow part "
        f"itself raises; M = {m:.2f})"
    )


def _mean(values: dict[int, float]) -> float:
    return sum(values.values()) / len(values) if values else 0.0


def _severity(s: float) -> str:
    return "critical" if s >= 1.5 else "warning"


def _worker_label(r: WhatIf, wid: int) -> str:
    w = r.workers[wid]
    return f"DP rank {w.dp_rank} / stage {w.stage}"


def _slow_worker(r: WhatIf, common: dict[str, float]) -> Finding:
    worst = [int(w) for w in r.fix_workers["workers"]]
    names = ", ".join(_worker_label(r, w) for w in worst)
    s = common["slowdown"]
    return Finding(
        kind="slow_worker",
        severity=_severity(s),
        summary=(
            f"{names} slows the whole job {s:.2f}x ({100 * common['waste']:.0f}% of GPU time wasted): "
            f"fixing it alone {removed_words(r.fix_workers)}"
        ),
        evidence=[f"{_worker_label(r, w)}: S_w = {r.by_worker[w]:.3f} (only its ops as traced)" for w in worst]
        + _top_types(r),
        metrics={
            **common,
            "workers": [{"dp_rank": r.workers[w].dp_rank, "stage": r.workers[w].stage} for w in worst],
            "dp_ranks": sorted({r.workers[w].dp_rank for w in worst}),
            "stages": sorted({r.workers[w].stage for w in worst}),
        },
        ranks=[r.workers[w].rank for w in worst if r.workers[w].rank >= 0],
        steps=r.steps,
        suggestion="check that worker's host and GPU (clocks, thermals, errors, co-located load); replace it",
    )


def _stage_imbalance(r: WhatIf, common: dict[str, float], stage: int, fix: dict[str, float]) -> Finding:
    last = stage
    explained = float(fix.get("explained_by_removal", 0.0))
    s = common["slowdown"]
    which = " (the last)" if stage == max(r.by_stage) else (" (the first)" if stage == min(r.by_stage) else "")
    return Finding(
        kind="stage_imbalance",
        severity=_severity(s),
        summary=(
            f"pipeline stage {stage}{which} takes longer than the others and slows the job {s:.2f}x "
            f"({100 * common['waste']:.0f}% wasted): balancing it {removed_words(fix)}"
        ),
        evidence=[f"stage {st}: S = {v:.3f} (only its ops as traced)" for st, v in sorted(r.by_stage.items())]
        + _top_types(r),
        metrics={
            **common,
            "stage": last,
            "explained_by_fixing_stage": explained,
            "by_stage": {str(k): v for k, v in r.by_stage.items()},
        },
        ranks=sorted(w.rank for w in r.workers if w.stage == last and w.rank >= 0),
        steps=r.steps,
        suggestion=(
            f"repartition layers so stage {stage} carries less: fewer transformer layers there, or an uneven "
            "split (Megatron --decoder-first/last-pipeline-num-layers; the last stage also holds loss and output)"
        ),
    )


def _data_imbalance(r: WhatIf, common: dict[str, float]) -> Finding:
    s = common["slowdown"]
    worst = max(r.by_worker.values(), default=1.0)
    sharing = [w for w, v in r.by_worker.items() if v - 1.0 >= SPREAD_SHARE * (worst - 1.0) and v > 1.0]
    slowed_steps = [st for st, v in r.by_step.items() if v >= SLOWED]
    return Finding(
        kind="data_imbalance",
        severity=_severity(s),
        summary=(
            f"compute time varies across workers and steps and slows the job {s:.2f}x "
            f"({100 * common['waste']:.0f}% wasted), spread over {len(sharing)} of {len(r.workers)} workers and "
            f"{len(slowed_steps)} of {len(r.steps)} steps: a data / sequence-length imbalance, not one bad worker "
            f"(equal micro-batch compute within each stage and step {removed_words(r.fix_microbatch)}; fixing the "
            f"worst workers {removed_words(r.fix_workers)}; the last stage {removed_words(r.fix_last_stage)})"
        ),
        evidence=_top_types(r),
        metrics={**common, "workers_sharing": len(sharing), "steps_slowed": len(slowed_steps)},
        steps=slowed_steps,
        suggestion="balance tokens per micro-batch (sequence packing, length-aware batching) across DP ranks",
    )


# What a slow op type other than forward / backward compute usually means (Megatron on GPUs).
_TYPE_HINTS = {
    "gc": "Python garbage collection pauses: collect at the same step on every rank (Megatron --manual-gc)",
    "optimizer": "a slow optimizer step: check CPU offload, host memory bandwidth or a busy host",
    "optimizer-clip-main-grad": "the gradient-norm all-reduce: a slow link or a late rank at the end of the step",
    "forward-pp-comm": "slow pipeline sends/recvs: check the links between adjacent stages",
    "backward-pp-comm": "slow pipeline sends/recvs: check the links between adjacent stages",
    "grads-reduce-scatter": "slow data-parallel gradient communication: check the network (congestion, a bad link)",
    "params-all-gather": "slow data-parallel parameter gathering: check the network (congestion, a bad link)",
}


def _slow_op_type(r: WhatIf, common: dict[str, float], optype: str, value: float) -> Finding:
    s = common["slowdown"]
    return Finding(
        kind="slow_op_type",
        severity=_severity(s),
        summary=(
            f"{optype} ops carry the slowdown ({s:.2f}x, {100 * common['waste']:.0f}% wasted): with only "
            f"them as traced the job runs {value:.2f}x its ideal time"
        ),
        evidence=_top_types(r),
        metrics={**common, "optype": optype, "optype_slowdown": value},
        steps=[st for st, v in r.by_step.items() if v >= SLOWED],
        suggestion=_TYPE_HINTS.get(optype, "look at where these ops run long: which workers and steps"),
    )


def _top_types(r: WhatIf, n: int = 3) -> list[str]:
    top = sorted(r.by_optype.items(), key=lambda kv: -kv[1])[:n]
    return [f"op type {t}: S_t = {v:.3f} (only its ops as traced)" for t, v in top]
