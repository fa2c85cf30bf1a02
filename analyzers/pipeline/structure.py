"""Pipeline parallelism, reduce stage: which rank runs which stage, micro-batches, schedule, theory.

- Stages: the stage index of `PP:` actions; else `--pp-stages` (ranks in stage order); else the
  chain of sends and recvs that name their peer (critical_path.stages); else the order in which the
  ranks finish their first forward compute in each step (activations flow stage to stage, so stage s
  finishes micro-batch 0 before stage s + 1 does), the majority over steps.
- Pipelines: ranks holding the same stage belong to different pipelines (data parallel replicas);
  the k-th rank of each stage, in rank order, forms pipeline k.
- Micro-batches m: distinct forward micro-batches per stage and step (the most common count).
- Schedule: `--pp-schedule`; else `zero-bubble` when split backwards (I/W) appear, `interleaved`
  when a rank holds several stages, `gpipe` when every forward precedes every backward on every
  stage (or torch's ScheduleGPipe annotations are present), else `1f1b`.
- Theory (bubble fraction of the step): GPipe and 1F1B (p-1)/(m+p-1); interleaved with v stages per
  rank (p-1)/(v*m+p-1); zero-bubble (ZB-H1, F = B = W) about (p-1)/(3m).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scope.analyzers.pipeline.rank import BACKWARD_OPS

from scope.errors import EXIT_USAGE, ScopeError


@dataclass
class Pipeline:
    """One pipeline: its ranks in stage order and how its structure was found."""

    ranks: list[int]  # ranks[pos] is the device at pipeline position pos
    rank_stages: dict[int, list[int]]  # rank -> stage indices it runs
    p: int
    v: int
    m: int
    schedule: str
    theory: float
    how: dict[str, str] = field(default_factory=dict)  # what each fact was inferred from

    def stage_of(self, rank: int) -> int:
        return self.rank_stages[rank][0]

    def peer(self, rank: int, direction: str) -> int | None:
        """The rank on the other end of a transfer in this direction."""
        pos = self.ranks.index(rank)
        step = -1 if direction in ("recv_fwd", "send_bwd") else 1
        other = pos + step
        if self.v > 1:
            other %= self.p
        return self.ranks[other] if 0 <= other < self.p else None


def theory_fraction(schedule: str, p: int, m: int, v: int = 1) -> float:
    if p <= 1 or m <= 0:
        return 0.0
    if schedule == "interleaved":
        return (p - 1) / (v * m + p - 1)
    if schedule == "zero-bubble":
        return min(1.0, (p - 1) / (3 * m))
    return (p - 1) / (m + p - 1)


def parse_rank_order(text: str | None) -> list[int] | None:
    if not text:
        return None
    try:
        ranks = [int(x) for x in str(text).replace(" ", "").split(",") if x != ""]
    except ValueError:
        raise ScopeError(f"--pp-stages: expected ranks in stage order like 0,1,2,3, got {text!r}", EXIT_USAGE) from None
    if len(set(ranks)) != len(ranks) or not ranks:
        raise ScopeError(f"--pp-stages: each rank once, got {text!r}", EXIT_USAGE)
    return ranks


def _stages_by_timing(actions: pd.DataFrame) -> dict[int, int]:
    """Stage of each rank from when it finishes its first forward compute, per step (majority)."""
    fwd = actions[actions["op"] == "F"]
    first = fwd.sort_values("mb").groupby(["step", "rank"])["cend_ns"].first().reset_index()
    votes: dict[int, list[int]] = {}
    for _, grp in first.groupby("step"):
        for pos, rank in enumerate(grp.sort_values("cend_ns")["rank"]):
            votes.setdefault(int(rank), []).append(pos)
    ranked = sorted(votes, key=lambda r: (float(np.median(votes[r])), r))
    return {r: i for i, r in enumerate(ranked)}


def assign_stages(
    actions: pd.DataFrame, order: list[int] | None, p2p: dict[int, int] | None = None
) -> tuple[pd.DataFrame, str]:
    """Fill the stage column where the trace lacks it (`p2p`: rank -> stage from the send/recv chain)."""
    if (actions["stage"] >= 0).all():
        return actions, "PP: annotations"
    ranks = sorted(int(r) for r in actions["rank"].unique())
    if order is not None:
        missing = sorted(set(ranks) - set(order))
        if missing:
            raise ScopeError(
                f"--pp-stages {','.join(map(str, order))} lacks ranks {missing} that run a pipeline", EXIT_USAGE
            )
        stage_of, how = {r: order.index(r) for r in ranks}, "--pp-stages"
    elif p2p and set(ranks) <= set(p2p):
        stage_of, how = {r: p2p[r] for r in ranks}, "send/recv chain (the peers the trace names)"
    else:
        stage_of, how = _stages_by_timing(actions), "order of first forward per step"
    out = actions.copy()
    unknown = out["stage"] < 0
    out.loc[unknown, "stage"] = out.loc[unknown, "rank"].map(stage_of).fillna(-1).astype(int)
    return out, how


def split_pipelines(actions: pd.DataFrame) -> list[list[int]]:
    """Ranks of each pipeline in position order (the k-th rank of each first stage forms pipeline k)."""
    first_stage = actions.groupby("rank")["stage"].min()
    by_stage: dict[int, list[int]] = {}
    for rank, stage in first_stage.items():
        by_stage.setdefault(int(stage), []).append(int(rank))
    counts = {len(v) for v in by_stage.values()}
    if len(counts) != 1:  # uneven: treat as one pipeline, ordered by stage then rank
        return [sorted(first_stage.index.astype(int), key=lambda r: (int(first_stage[r]), r))]
    n = counts.pop()
    stages = sorted(by_stage)
    return [[sorted(by_stage[s])[k] for s in stages] for k in range(n)]


def infer_schedule(actions: pd.DataFrame, v: int) -> tuple[str, str]:
    ops = set(actions["op"])
    if ops & {"I", "W"}:
        return "zero-bubble", "split backward actions (I/W)"
    if v > 1:
        return "interleaved", f"{v} stages per rank"
    if (actions["source"] == "gpipe").any():
        return "gpipe", "ScheduleGPipe annotations (Forward i / Backward i)"
    bwd = actions[actions["op"].isin(BACKWARD_OPS)].groupby(["rank", "step"])["cstart_ns"].min()
    fwd = actions[actions["op"] == "F"].groupby(["rank", "step"])["cend_ns"].max()
    both = pd.concat([fwd.rename("last_f"), bwd.rename("first_b")], axis=1).dropna()
    if not both.empty and (both["last_f"] <= both["first_b"]).all():
        return "gpipe", "every forward before every backward"
    return "1f1b", "forwards and backwards interleave"


def build_pipelines(
    actions: pd.DataFrame, options: dict[str, object], p2p_stages: dict[int, int] | None = None
) -> tuple[list[Pipeline], pd.DataFrame]:
    """The pipelines in the run, and the actions with every stage filled in."""
    order = parse_rank_order(options.get("pp_stages"))  # type: ignore[arg-type]
    actions, stage_how = assign_stages(actions, order, p2p_stages)
    actions = actions[actions["stage"] >= 0]
    pipelines = []
    for ranks in split_pipelines(actions):
        acts = actions[actions["rank"].isin(ranks)]
        rank_stages = {r: sorted(int(s) for s in acts.loc[acts["rank"] == r, "stage"].unique()) for r in ranks}
        v = max(len(s) for s in rank_stages.values())
        v = int(options.get("pp_chunks") or v)  # type: ignore[call-overload]
        per = acts[acts["op"] == "F"].groupby(["rank", "stage", "step"])["mb"].nunique()
        m_seen = int(per.mode().iloc[0]) if not per.empty else 0
        m = int(options.get("pp_microbatches") or m_seen)  # type: ignore[call-overload]
        schedule, sched_how = infer_schedule(acts, v)
        if options.get("pp_schedule"):
            schedule, sched_how = str(options["pp_schedule"]), "--pp-schedule"
        p = len(ranks)
        how = {
            "stages": stage_how,
            "schedule": sched_how,
            "microbatches": "--pp-microbatches" if options.get("pp_microbatches") else "forwards per stage and step",
        }
        pipelines.append(Pipeline(ranks, rank_stages, p, v, m, schedule, theory_fraction(schedule, p, m, v), how))
    return pipelines, actions
