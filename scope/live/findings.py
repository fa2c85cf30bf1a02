"""The live verdicts as `scope.finding.Finding`s, in the kinds and words of `scope analyze`.

A straggler is `straggler` (`slow_collective` for the communication path), a stage that bounds a pipeline
`pipeline_imbalance`, a hang `hang` naming its culprit: the kinds the post-mortem's stragglers, pipeline and
diagnose analyzers emit, so a live alert and the analysis of the same run read alike. Every live finding
carries metrics["live"] = True and the step it was first seen at (`since_step`).
"""

from __future__ import annotations

from scope.analyzers.stragglers_spec import STRAGGLER_SUGGESTIONS
from scope.finding import Finding
from scope.live.collective import GroupVerdict
from scope.live.hang import HangVerdict
from scope.live.straggle import RankVerdict

LABELS = {"compute": "compute", "input": "input (waiting for data)", "host": "host (waiting for a core)"}
INPUT_SUGGESTION = (
    "the rank waits for its next batch: look at its data loading (DataLoader workers, prefetch, the storage "
    "or the shard it reads)"
)
HOST_SUGGESTION = (
    "the rank's main thread waits for a core: other processes on its host (data workers, a stray job) take its "
    "CPU; pin or give it cores"
)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms"


def _suggestion(kind: str) -> str:
    """The post-mortem's advice for the same kind."""
    if kind == "input":
        return INPUT_SUGGESTION
    return STRAGGLER_SUGGESTIONS.get(kind, HOST_SUGGESTION if kind == "host" else "")


def straggler_finding(v: RankVerdict) -> Finding:
    label = LABELS[v.kind]
    return Finding(
        kind="straggler",
        severity="warning",
        summary=(
            f"rank {v.rank} is a persistent {v.kind} straggler: {label} {_ms(v.value_s)} per step vs "
            f"{_ms(v.others_s)} on the other ranks, costing about {_ms(v.loss_s)} per step"
        ),
        ranks=[v.rank],
        steps=[v.since_step] if v.since_step >= 0 else [],
        evidence=[
            f"slow since step {v.since_step} (live, the median of its last steps against its peers')",
            f"{v.ratio:.2f}x its peers' median {label} at step {v.step}",
        ],
        metrics={
            "live": True,
            "straggler_kind": v.kind,
            "score": v.others_s / v.value_s if v.value_s > 0 else 1.0,
            "step_ratio": v.ratio,
            "time_lost_us": v.loss_s * 1e6,
            "persistent": True,
            "value_median_us": v.value_s * 1e6,
            "others_median_us": v.others_s * 1e6,
            "since_step": v.since_step,
        },
        suggestion=_suggestion(v.kind),
    )


def collective_finding(v: GroupVerdict) -> Finding:
    who = ", ".join(str(r) for r in v.ranks)
    what = f"collectives on PG {v.group}" + (f" (mostly {v.op})" if v.op else "")
    if v.shape == "late":
        summary = (
            f"rank{'s' if len(v.ranks) > 1 else ''} {who}: persistent communication straggler, starting the "
            f"{what} late: the other ranks' time in them grew from {_ms(v.base_s)} to "
            f"{_ms(v.value_s)} per step"
        )
    elif v.shape == "group":
        summary = (
            f"{what} take {_ms(v.value_s)} per step on all its ranks vs {_ms(v.base_s)} before: a slow link on its path"
        )
    else:
        summary = f"{what} are slower on rank(s) {who}: {_ms(v.value_s)} per step vs {_ms(v.base_s)}"
    return Finding(
        kind="slow_collective",
        severity="warning",
        summary=summary,
        ranks=list(v.ranks),
        steps=[v.since_step] if v.since_step >= 0 else [],
        evidence=[f"slow since step {v.since_step} (live, against each rank's own first steps)"],
        metrics={
            "live": True,
            "straggler_kind": "communication",
            "group": v.group,
            "collective": v.op,
            "shape": v.shape,
            "time_lost_us": (v.value_s - v.base_s) * 1e6,
            "value_median_us": v.value_s * 1e6,
            "baseline_us": v.base_s * 1e6,
            "since_step": v.since_step,
        },
        suggestion=_suggestion("communication"),
    )


def stage_finding(stage: int, ranks: list[int], value_s: float, others_s: float, since: int) -> Finding:
    ratio = value_s / others_s if others_s > 0 else float("inf")
    return Finding(
        kind="pipeline_imbalance",
        severity="warning",
        summary=(
            f"pipeline stage {stage} on rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))} bounds the "
            f"step: {_ms(value_s)} of compute per step vs {_ms(others_s)} on the other stages ({ratio:.1f}x)"
        ),
        ranks=list(ranks),
        steps=[since] if since >= 0 else [],
        evidence=[f"every rank of stage {stage} is as slow as the others of its stage: an unequal stage, no straggler"],
        metrics={
            "live": True,
            "stage": stage,
            "imbalance_ratio": ratio,
            "time_lost_us": (value_s - others_s) * 1e6,
            "bound_compute_us": value_s * 1e6,
            "others_compute_us": others_s * 1e6,
            "since_step": since,
        },
        suggestion=f"move layers off stage {stage} to its neighbours so every stage computes about the same",
    )


def hang_finding(v: HangVerdict) -> Finding:
    rhythm = f"{v.limit_s:.0f} s, from the job's typical step of {v.typical_step_s:.2f} s" if v.typical_step_s else ""
    return Finding(
        kind="hang",
        severity="critical",
        summary=f"no rank completed a step for {v.stalled_s:.0f} s (limit {rhythm}); {v.detail}",
        ranks=list(v.culprits),
        steps=sorted(set(v.last_steps.values()))[:1],
        evidence=[f"last steps: {v.last_steps}"],
        metrics={
            "live": True,
            "culprit_rule": v.how,
            "stalled_s": v.stalled_s,
            "limit_s": v.limit_s,
            "typical_step_s": v.typical_step_s,
            "last_steps": {str(r): s for r, s in v.last_steps.items()},
        },
        suggestion="the dumps (stacks, Flight Recorder) taken at the verdict show where each rank stands: "
        "scope diagnose RUN",
    )
