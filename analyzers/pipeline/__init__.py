"""Pipeline parallelism: per-stage bubbles by phase, waits per peer, theory, the bounding stage.

Map (analyzers/pipeline/rank.py, phases.py): per rank, its micro-batch actions and per step
the bubble = step window - compute - exposed non-pipeline communication, split into warm-up, steady
and cool-down, plus the time waiting on sends and receives by direction.
Reduce (structure.py, replay.py): stages, micro-batches and schedule; the
theoretical bubble fraction beside the measured one; a replay of each step from the observed
action order, to find the stage that bounds the step and what balancing it would gain.

Tables: `pipeline` (stage, rank, step: bubble and its phases, theory), `pipeline_p2p` (waits per
peer and direction), `pipeline_summary` (one row per pipeline). Findings: `pipeline_imbalance` (the
heavier stage and its rank) and `pipeline_bubble` (measured bubble well above theory, with the phase
where it grows and what explains it). A run without micro-batch actions or point-to-point traffic
has no pipeline: nothing is reported.
"""

from __future__ import annotations

import pandas as pd
from scope.analyzers.pipeline import report as report
from scope.analyzers.pipeline.contention import apply_contention
from scope.analyzers.pipeline.rank import STEP_COLUMNS, WAIT_COLUMNS, RankJob, RankPipeline, rank_pipeline
from scope.analyzers.pipeline.structure import build_pipelines

from scope.analysis import Context, Result
from scope.finding import Finding
from scope.rankpass.run import PARALLEL_MIN_EVENTS, total_events


def rank_parts(ctx: Context) -> list[RankPipeline]:
    """The map stage over the ranks that may run a pipeline schedule (the pass over every rank's events
    looked: the pipeline_candidates table; worker processes when the run is big): the parts of the ranks
    that run pipeline actions, in rank order. A rank without any is let go as it arrives (its part is
    three empty frames, ~8 KB, which every reader skipped: 125 MB held at 16,384 ranks)."""

    def build() -> list[RankPipeline]:
        from scope.engine import map_unordered

        store = ctx.store
        assert store is not None
        candidates = ctx.table("pipeline_candidates")["rank"]
        jobs = [RankJob(str(store.root), int(r), candidate=True) for r in sorted(candidates)]
        workers = ctx.option("workers") if total_events(store) >= PARALLEL_MIN_EVENTS else 1
        parts = map_unordered(
            rank_pipeline,
            jobs,
            engine=ctx.option("engine", "local"),
            workers=workers,
            scheduler=ctx.option("scheduler"),
        )
        return sorted((p for p in parts if not p.actions.empty), key=lambda p: p.rank)

    return ctx.memo("pipeline_parts", build)


def _concat(frames: list[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
    frames = [f for f in frames if not f.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def p2p_stages(ctx: Context) -> dict[int, int]:
    """Rank -> stage from who sends to whom (critical_path.stages: the chain of transfers that name
    their peer); empty when the trace names no peers."""

    def build() -> dict[int, int]:
        from scope.analyzers.critical_path.stages import STAGE_COLUMNS
        from scope.analyzers.critical_path.stages import rank_stages as stages_of

        store = ctx.store
        if store is None or not store.ranks:
            return {}
        coll = store.collectives(STAGE_COLUMNS)
        if coll.empty or "peer" not in coll:  # a store written before the peer column
            return {}
        return stages_of(coll, len(store.ranks))

    return ctx.memo("pipeline_p2p_stages", build)


def rank_stages(ctx: Context) -> dict[int, tuple[int, ...]]:
    """Rank -> the pipeline stages it runs, for the ranks of a pipeline-parallel run (empty otherwise).
    Ranks of different stages do different work: other analyzers compare a rank only with its stage's."""

    def build() -> dict[int, tuple[int, ...]]:
        if ctx.store is None or not ctx.store.ranks:  # no traces
            return {}
        parts = rank_parts(ctx)
        if len(parts) < 2 or not any(p.has_p2p for p in parts):
            return {}
        actions = pd.concat([p.actions for p in parts], ignore_index=True)
        pipelines, _ = build_pipelines(actions, ctx.options, p2p_stages(ctx))
        return {int(r): tuple(pl.rank_stages[r]) for pl in pipelines if pl.p >= 2 for r in pl.ranks}

    return ctx.memo("pipeline_rank_stages", build)


def analyze(ctx: Context) -> Result:
    if ctx.store is None or not ctx.store.ranks:
        return Result()
    parts = [p for p in rank_parts(ctx) if not p.actions.empty]
    # A pipeline needs micro-batch actions on at least two ranks that talk point to point.
    if len(parts) < 2 or not any(p.has_p2p for p in parts):
        return Result()
    actions = pd.concat([p.actions for p in parts], ignore_index=True)
    steps = _concat([p.steps for p in parts], STEP_COLUMNS)
    waits = _concat([p.waits for p in parts], WAIT_COLUMNS)
    pipelines, actions = build_pipelines(actions, ctx.options, p2p_stages(ctx))
    pipelines = [pl for pl in pipelines if pl.p >= 2]
    if not pipelines or steps.empty:
        return Result()
    ranks = ctx.store.ranks_table()
    host_of = (
        dict(zip(ranks["rank"].astype(int), ranks["host_name"].fillna("").astype(str), strict=True))
        if "host_name" in ranks
        else {}
    )
    contention = apply_contention(parts, actions, steps, host_of)
    findings: list[Finding] = []
    tables: dict[str, list[pd.DataFrame]] = {"pipeline": [], "pipeline_p2p": [], "pipeline_summary": []}
    for index, pl in enumerate(pipelines):
        out = report.analyze_pipeline(index, pl, contention, waits, ctx.options)
        findings += out.findings
        for name, df in out.tables.items():
            tables[name].append(df)
    frames = {name: pd.concat(dfs, ignore_index=True) for name, dfs in tables.items() if dfs}
    return Result(findings=findings, tables=frames)
