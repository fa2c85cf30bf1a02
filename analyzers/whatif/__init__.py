"""What-if analysis (OSDI'25 method): how much faster the job would run without stragglers, and whose fault.

Runs on operation-level timelines in the store (events carrying dp_rank and stage). `model` holds the
metrics, `graph` the dependency model, `replay` the replay, `findings` the cause classes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scope.analysis import Context, Result

if TYPE_CHECKING:
    import pandas as pd
    from scope.analyzers.whatif.model import WhatIf

_READ = ["ts_ns", "dur_ns", "name", "step", "dp_rank", "stage", "seq_id", "model_chunk", "micro_batch"]


def analyze(ctx: Context) -> Result:
    store = ctx.store
    if store is None or store.meta.get("layout") != "optrace":
        return Result()
    from scope.analyzers.whatif.findings import whatif_findings
    from scope.analyzers.whatif.model import analyze_ops

    ops = read_ops(store)
    if ops.empty:
        return Result()
    pp = (store.run.get("timeline") or {}).get("pp_size")
    result = analyze_ops(ops, pp=pp)
    return Result(findings=whatif_findings(result), tables=tables(result))


def read_ops(store: Any) -> pd.DataFrame:
    """The operation timeline back from the store: seconds from each step's start, per worker."""
    import pandas as pd

    steps = store.steps()
    start_of = steps.groupby("step")["start_ns"].min() if not steps.empty else pd.Series(dtype="int64")
    frames = []
    for rank in store.ranks:
        ev = store.read_events(rank, columns=_READ).to_pandas()
        if ev.empty:
            continue
        frames.append(
            pd.DataFrame(
                {
                    "dp_rank": ev["dp_rank"].astype("int64"),
                    "stage": ev["stage"].astype("int64"),
                    "rank": rank,
                    "step": ev["step"].astype("int64"),
                    "optype": ev["name"].astype(str),
                    "start_ts": (ev["ts_ns"] - start_of.reindex(ev["step"]).to_numpy()) / 1e9,
                    "duration": ev["dur_ns"] / 1e9,
                    "seq_id": ev["seq_id"].astype("int64"),
                    "mc": ev["model_chunk"],
                    "mb_id": ev["micro_batch"],
                }
            )
        )
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def tables(r: WhatIf) -> dict[str, pd.DataFrame]:
    import pandas as pd

    summary = pd.DataFrame(
        [
            {
                "slowdown": r.slowdown,
                "waste": r.waste,
                "launch_slowdown": r.launch_slowdown,
                "t_nodelay_s": sum(r.t_nodelay.values()) / len(r.t_nodelay),
                "t_ideal_s": sum(r.t_ideal.values()) / len(r.t_ideal),
                "m_w": r.fix_workers.get("explained_by_removal"),
                "m_w_workers": ", ".join(
                    f"{r.workers[w].dp_rank}/{r.workers[w].stage}" for w in r.fix_workers["workers"]
                ),
                "m_s": r.fix_last_stage.get("explained_by_removal"),
                "m_d": r.fix_microbatch.get("explained_by_removal"),
                "steps": len(r.steps),
                "workers": len(r.workers),
            }
        ]
    )
    workers = pd.DataFrame(
        [{"dp_rank": w.dp_rank, "stage": w.stage, "rank": w.rank, "slowdown": r.by_worker[w.id]} for w in r.workers]
    )
    by: list[tuple[str, object, float]] = [("dp_rank", k, v) for k, v in r.by_dp_rank.items()]
    by += [("stage", k, v) for k, v in r.by_stage.items()]
    by += [("optype", k, v) for k, v in r.by_optype.items()]
    attribution = pd.DataFrame([{"by": b, "key": str(k), "slowdown": v} for b, k, v in by])
    steps = pd.DataFrame(
        [
            {
                "step": s,
                "t_base_s": r.t_base[s],
                "t_nodelay_s": r.t_nodelay[s],
                "t_ideal_s": r.t_ideal[s],
                "slowdown": r.by_step[s],
            }
            for s in r.steps
        ]
    )
    per_step = [
        {"by": by, "key": str(k), "step": st, "slowdown": v}
        for by, table in (("dp_rank", r.by_dp_rank_per_step), ("stage", r.by_stage_per_step))
        for k, values in table.items()
        for st, v in values.items()
    ]
    return {
        "whatif_summary": summary,
        "whatif_workers": workers,
        "whatif_attribution": attribution,
        "whatif_attribution_steps": pd.DataFrame(per_step),
        "whatif_steps": steps,
    }
