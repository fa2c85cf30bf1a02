"""The critical_path analyzer: per step, the chain of work across ranks that set its length.

Kineto traces: each rank's part (kineto.py) joined per step at the matched collectives (assemble.py).
Operation-level timelines (store layout "optrace"): the what-if engine's dependency model (optrace.py).

Tables: `critical_path` (per step, the path's segments), `critical_path_shares` (per step, the path's
time by rank, stage, op class, op and rank waited on), `critical_path_steps` (per step: replayed and
measured step, clock conflicts), `critical_path_whatif` (the top segments halved: the step's gain
against the naive sum along the path). Finding `critical_path`: the few segments that set the steps.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from scope.analyzers.critical_path.core import conflicts, solve
from scope.analyzers.critical_path.kineto import RankPart
from scope.analyzers.critical_path.path import segments, shares, what_if
from scope.analyzers.critical_path.step_path import StepPath

from scope.analysis import Context, Result
from scope.finding import Finding
from scope.units import clip

if TYPE_CHECKING:
    from scope.store import Store

TOP_SEGMENTS = 3
STEP_COLUMNS = ["step", "replay_us", "measured_us", "fidelity", "nodes", "edges", "conflicts", "conflict_us"]


def analyze(ctx: Context) -> Result:
    store = ctx.store
    if store is None:
        return Result()
    if store.meta.get("layout") == "optrace":
        from scope.analyzers.critical_path.timeline import optrace_paths

        paths = optrace_paths(store)
    else:
        from scope.rankpass.run import total_events

        limit = int(ctx.option("critical_path_max_events", 5_000_000) or 0)
        if limit and total_events(ctx.store) > limit:
            return Result(
                warnings=[
                    f"critical path not built: {total_events(ctx.store):,} trace events exceed "
                    f"--critical-path-max-events {limit:,} (about 15 µs of CPU each; raise it, or 0 for no limit)"
                ]
            )
        paths = kineto_paths(ctx)
    if not paths:
        return Result()
    tables = path_tables(paths)
    # One rank's path (HTA's single-rank view) stays in the tables: the finding is about work across ranks.
    across = len({int(r) for p in paths for r in np.unique(p.graph.rank) if r >= 0}) > 1
    finding = path_finding(tables, paths) if across else None
    return Result(findings=[finding] if finding else [], tables=tables)


def kineto_paths(ctx: Context) -> list[StepPath]:
    from scope.analyzers.critical_path.assemble import (
        P2P_COLUMNS,
        PARTICIPANT_COLUMNS,
        StepGraphs,
        p2p_pairs,
        participants,
    )

    store = ctx.store
    assert store is not None
    steps = store.steps()
    if steps.empty:
        return []
    parts = _rank_parts(ctx)
    from scope.analyzers.critical_path.stages import STAGE_COLUMNS, rank_stages

    coll = _collectives(store, sorted({"end_ns", *P2P_COLUMNS, *STAGE_COLUMNS}))
    who = participants(ctx.matched, coll) if not coll.empty else pd.DataFrame(columns=PARTICIPANT_COLUMNS)
    stages: dict[int, int] = {}
    if not coll.empty:
        who = pd.concat([who, p2p_pairs(coll)], ignore_index=True)
        stages = rank_stages(coll, len(store.ranks))
    out = []
    graphs = StepGraphs(parts, who, stages)
    del parts
    for step, window in steps.groupby("step", sort=True):
        g = graphs.graph(int(step))
        if not g.n_nodes:
            continue
        measured = float(window["end_ns"].max() - window["start_ns"].min()) / 1e3
        out.append(StepPath(int(step), g, solve(g), measured, {r: f"rank {r}" for r in store.ranks}))
    return out


def _collectives(store: Store, columns: list[str]) -> pd.DataFrame:
    """The collectives table's columns; `peer` as -1 (unknown) in a store written before it existed
    (a column the parts lack is left out of the read)."""
    coll = store.collectives(columns)
    return coll if coll.empty or "peer" in coll else coll.assign(peer=-1)


def _rank_parts(ctx: Context) -> list[RankPart]:
    """Every rank's part, in rank order; in worker processes when the run is big (as the per-rank pass)."""
    from scope.analyzers.critical_path.kineto import rank_part_job

    from scope.engine import map_unordered
    from scope.rankpass.run import PARALLEL_MIN_EVENTS, total_events

    store = ctx.store
    assert store is not None
    jobs = [(str(store.root), r) for r in store.ranks]
    workers = ctx.option("workers") if total_events(ctx.store) >= PARALLEL_MIN_EVENTS else 1
    done = map_unordered(
        rank_part_job, jobs, engine=ctx.option("engine", "local"), workers=workers, scheduler=ctx.option("scheduler")
    )
    return sorted(done, key=lambda part: part.rank)


def path_tables(paths: list[StepPath]) -> dict[str, pd.DataFrame]:
    segs, shared, rows, gains = [], [], [], []
    for p in paths:
        seg = segments(p.graph, p.solution)
        segs.append(seg.assign(step=p.step))
        shared.append(shares(seg).assign(step=p.step))
        c = conflicts(p.graph)
        replay = p.solution.length
        rows.append([p.step, replay, p.measured_us, replay / p.measured_us if p.measured_us else np.nan,
                     p.graph.n_nodes, len(p.graph.src), c.count, c.total_us])  # fmt: skip
        gains.append(_top_whatifs(p, seg))
    return {
        "critical_path": pd.concat(segs, ignore_index=True),
        "critical_path_shares": pd.concat(shared, ignore_index=True),
        "critical_path_steps": pd.DataFrame(rows, columns=STEP_COLUMNS),
        "critical_path_whatif": pd.concat(gains, ignore_index=True),
    }


def _top_whatifs(p: StepPath, seg: pd.DataFrame) -> pd.DataFrame:
    """Each of the step's top segments (rank, op) at half its time: the gain, and the naive sum."""
    rows = []
    real = seg[~seg["cls"].isin(("gap", "offset"))]
    top = real.groupby(["rank", "op"], sort=False)["us"].sum().sort_values(ascending=False).head(TOP_SEGMENTS)
    base = p.solution
    for rank, op in top.index:
        mask = (p.graph.rank == rank) & (p.graph.name == op)
        gain = what_if(p.graph, mask, 0.5, base)
        rows.append([p.step, int(rank), p.names.get(int(rank), str(rank)), op, gain.base_us, gain.new_us,
                     gain.gain_us, gain.naive_us])  # fmt: skip
    cols = ["step", "rank", "where", "op", "base_us", "new_us", "gain_us", "naive_us"]
    return pd.DataFrame(rows, columns=cols)


def short_op(name: str, limit: int = 60) -> str:
    """A kernel's or op's name without its return type, template and argument lists (for summaries)."""
    if name.startswith("void ") or "<" in name:  # a kernel's signature
        name = name.removeprefix("void ")
        for cut in ("(", "<"):
            head = name.split(cut, 1)[0]
            name = head if head else name
    return clip(name, limit)


def path_finding(tables: dict[str, pd.DataFrame], paths: list[StepPath]) -> Finding | None:
    seg = tables["critical_path"]
    real = seg[~seg["cls"].isin(("gap", "offset"))]
    if real.empty:
        return None
    names = paths[0].names
    total = float(seg["us"].sum())
    top = real.groupby(["rank", "lane", "op"], sort=False)["us"].sum().sort_values(ascending=False)
    by_rank = seg[seg["rank"] >= 0].groupby("rank")["us"].sum().sort_values(ascending=False)
    lead = int(by_rank.index[0])
    parts = [
        # the op in quotes: a kernel or autograd name has its own '::' and ': ' (never read as a label)
        f"{names.get(int(r), r)} {lane} '{short_op(op)}' ({us / total:.0%})"
        for (r, lane, op), us in top.head(3).items()
    ]
    steps = tables["critical_path_steps"]
    fidelity = float(steps["fidelity"].median())
    waited = seg[seg["waiting_on"] >= 0].groupby("waiting_on")["us"].sum()
    summary = (
        f"the steps' critical path is set by {', '.join(parts)}; {names.get(lead, lead)} carries "
        f"{by_rank.iloc[0] / total:.0%} of it"
    )
    evidence = [
        f"step {r.step}: path {r.replay_us / 1e3:.1f} ms replayed vs {r.measured_us / 1e3:.1f} ms measured, "
        f"{r.conflicts} clock conflict{'' if r.conflicts == 1 else 's'}"
        for r in steps.head(5).itertuples()
    ]
    return Finding(
        kind="critical_path",
        severity="info",
        summary=summary,
        ranks=[lead],
        steps=[int(s) for s in steps["step"]],
        evidence=evidence,
        metrics={
            "path_share_by_rank": {str(k): float(v / total) for k, v in by_rank.head(8).items()},
            "waiting_on_rank": {str(k): float(v / total) for k, v in waited.items()},
            "replay_fidelity_median": fidelity,
            "clock_conflicts": int(steps["conflicts"].sum()),
        },
        suggestion="shorten the top segments first: critical_path_whatif gives what halving each would gain",
    )
