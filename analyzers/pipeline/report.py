"""Pipeline parallelism, reduce stage continued: tables, replays and findings for one pipeline.

Per step the pipeline is replayed three ways (analyzers/pipeline/replay.py), each from the observed
action order:
- measured: every action at its measured compute, inputs arriving after the measured hop latency;
- balanced: the same, with the bounding stage's actions at the median of the other stages' ones;
- ideal: every action at the median over all stages for its kind, no latency (the schedule the
  theory assumes; its bubble per phase is the reference for "where the bubble grows").
The bounding stage is the one with the most pipeline compute per step (median over steps); the
what-if gain from balancing it is measured makespan - balanced makespan.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scope.analyzers.pipeline.contention import Contention
from scope.analyzers.pipeline.findings import bubble_finding, imbalance_finding
from scope.analyzers.pipeline.replay import Replay, hop_latency_us, observed_delays, replay
from scope.analyzers.pipeline.structure import Pipeline
from scope.analyzers.pipeline_spec import PP_BUBBLE_MARGIN, PP_IMBALANCE_RATIO

from scope.finding import Finding

BUBBLE_MARGIN_PCT = float(PP_BUBBLE_MARGIN.default)  # points above theory before a bubble is reported
IMBALANCE_RATIO = float(PP_IMBALANCE_RATIO.default)  # bounding stage compute / median of the other stages
MIN_GAIN_FRACTION = 0.05  # of the median step, for an imbalance to be worth reporting


# The `pipeline` table as emitted (the phase lengths and per-phase progress-clock bubbles stay internal).
TABLE_COLUMNS = [
    "stage", "rank", "step", "bubble_us", "bubble_pct", "theory_pct", "warmup_us", "steady_us", "cooldown_us",
    "step_us", "compute_us", "p2p_wait_us", "other_comm_us", "bubble_uncontended_pct", "contention_pct",
    "pipeline", "bound",
]  # fmt: skip


def summary_frame(summary: dict[str, Any]) -> pd.DataFrame:
    """One row per (pipeline, metric): numbers in `value`, words in `text` (narrow, any reader)."""
    rows = []
    for key, val in summary.items():
        number = isinstance(val, (int, float, np.integer, np.floating)) and not isinstance(val, str)
        text = "" if number else (", ".join(map(str, val)) if isinstance(val, list) else str(val))
        rows.append(
            {"pipeline": summary["pipeline"], "metric": key, "value": float(val) if number else np.nan, "text": text}
        )
    return pd.DataFrame(rows)


@dataclass
class PipelineResult:
    findings: list[Finding] = field(default_factory=list)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)


@dataclass
class StepReplay:
    step: int
    latency_us: float
    measured_us: float
    balanced_us: float
    no_latency_us: float  # measured durations, no latency
    ideal_phases: dict[int, tuple[float, float, float]]
    ideal_pct: float  # bubble of the ideal replay (the schedule alone)
    imbalance_pts: float  # bubble the unequal measured durations add (no latency), in points
    latency_pts: float  # bubble the hop latency adds on top, in points


def _opt(options: dict[str, Any], name: str, default: float) -> float:
    value = options.get(name)
    return default if value is None else float(value)


def replay_step(acts: pd.DataFrame, heavy: int) -> StepReplay | None:
    acts = acts.reset_index(drop=True)
    dur = acts["compute_us"].to_numpy(dtype=float)
    lat = hop_latency_us(acts)
    per_op = acts.groupby("op")["compute_us"].median()
    others = acts[acts["rank"] != heavy].groupby("op")["compute_us"].median()
    mine = (acts["rank"] == heavy).to_numpy()
    balanced = np.where(mine, acts["op"].map(others).fillna(acts["op"].map(per_op)).to_numpy(dtype=float), dur)
    ideal_dur = acts["op"].map(per_op).to_numpy(dtype=float)
    delays = observed_delays(acts)
    measured, bal, ideal, no_lat = (
        replay(acts, dur, delays=delays),
        replay(acts, balanced, delays=delays),
        replay(acts, ideal_dur),
        replay(acts, dur),
    )
    if measured is None or bal is None or ideal is None or no_lat is None:
        return None
    step = int(acts["step"].iloc[0])
    ideal_pct, no_lat_pct, measured_pct = (_bubble_pct(ideal), _bubble_pct(no_lat), _bubble_pct(measured))
    return StepReplay(
        step,
        lat,
        measured.makespan_us,
        bal.makespan_us,
        no_lat.makespan_us,
        ideal.phases_us,
        ideal_pct,
        no_lat_pct - ideal_pct,
        measured_pct - no_lat_pct,
    )


def _bubble_pct(rep: Replay) -> float:
    """Mean over the ranks of the replay's idle share of its makespan."""
    if rep.makespan_us <= 0:
        return 0.0
    return 100.0 * float(np.mean([1.0 - b / rep.makespan_us for b in rep.busy_us.values()]))


def _stage_table(index: int, pl: Pipeline, steps: pd.DataFrame, heavy: int) -> pd.DataFrame:
    df = steps.copy()
    df.insert(0, "stage", df["rank"].map(pl.stage_of))
    df["bubble_pct"] = 100.0 * df["bubble_us"] / df["step_us"].where(df["step_us"] > 0)
    df["bubble_uncontended_pct"] = (
        100.0 * df["bubble_uncontended_us"] / df["step_uncontended_us"].where(df["step_uncontended_us"] > 0)
    )
    df["contention_pct"] = 100.0 * df["contention_us"] / df["step_us"].where(df["step_us"] > 0)
    df["theory_pct"] = 100.0 * pl.theory
    df["pipeline"], df["bound"] = index, df["rank"] == heavy
    return df.sort_values(["stage", "rank", "step"]).reset_index(drop=True)


def _p2p_table(index: int, pl: Pipeline, waits: pd.DataFrame) -> pd.DataFrame:
    df = waits[waits["rank"].isin(pl.ranks)].copy()
    if df.empty:
        return pd.DataFrame(columns=["pipeline", "stage", "rank", "step", "peer", "direction", "wait_us", "transfers"])
    df["peer"] = [
        pl.peer(int(r), str(d)) if d != "other" else None for r, d in zip(df["rank"], df["direction"], strict=True)
    ]
    df["peer"] = df["peer"].astype("Int64")
    df.insert(0, "stage", df["rank"].map(pl.stage_of))
    df.insert(0, "pipeline", index)
    return df[["pipeline", "stage", "rank", "step", "peer", "direction", "wait_us", "transfers"]]


def analyze_pipeline(
    index: int, pl: Pipeline, contention: Contention, waits: pd.DataFrame, options: dict[str, Any]
) -> PipelineResult:
    acts = contention.actions[contention.actions["rank"].isin(pl.ranks)]
    st = contention.steps[contention.steps["rank"].isin(pl.ranks)]
    # Steps every rank of the pipeline traced, with actions in them.
    common = set.intersection(
        *(set(st.loc[st["rank"] == r, "step"]) & set(acts.loc[acts["rank"] == r, "step"]) for r in pl.ranks)
    )
    st, acts = st[st["step"].isin(common)], acts[acts["step"].isin(common)]
    if st.empty:
        return PipelineResult()
    work = acts.groupby(["rank", "step"])["compute_us"].sum().unstack("step")
    heavy = int(work.median(axis=1).idxmax())
    replays = [r for s in sorted(common) if (r := replay_step(acts[acts["step"] == s], heavy)) is not None]
    table = _stage_table(index, pl, st, heavy)
    contended = any(contention.contended.get(r, False) for r in pl.ranks)
    summary = _summary_row(index, pl, table, work, heavy, replays)
    # The progress clock shrinks contended compute but not waits and transfer latency (themselves inflated
    # by wake-ups on a shared host), so it can read above the wall clock: the wall clock then bounds it.
    uncontended = summary["bubble_uncontended_pct"]
    measured = min(uncontended, summary["bubble_pct"]) if contended else summary["bubble_pct"]
    summary |= {
        "contended": contended,
        "uncontended_above_wall": bool(contended and uncontended > summary["bubble_pct"]),
        "action_compute_us": float(acts["compute_us"].median()),
        "cpu_rate": float(np.median([contention.rate.get(r, 1.0) for r in pl.ranks])),
        "measured_pct": measured,
        # What the schedule itself leaves: the measured bubble less what the replay attributes
        # to unequal action durations and to delays between actions.
        "schedule_pct": measured - summary["imbalance_pts"] - summary["latency_pts"],
        # Measured minus the replay as it ran: near 0 when the dependency model explains the step.
        "residual_pts": measured - summary["replay_ideal_pct"] - summary["imbalance_pts"] - summary["latency_pts"],
    }
    result = PipelineResult(
        tables={
            "pipeline": table[TABLE_COLUMNS],
            "pipeline_p2p": _p2p_table(index, pl, waits),
            "pipeline_summary": summary_frame(summary),
        }
    )
    ratio_min = _opt(options, "pp_imbalance_ratio", IMBALANCE_RATIO)
    if (f := imbalance_finding(pl, table, work, heavy, summary, ratio_min, MIN_GAIN_FRACTION)) is not None:
        result.findings.append(f)
    margin = _opt(options, "pp_bubble_margin", BUBBLE_MARGIN_PCT)
    if (f := bubble_finding(pl, table, replays, summary, margin)) is not None:
        result.findings.append(f)
    return result


def _median(values: list[float]) -> float:
    return float(np.median(values)) if values else float("nan")


def _summary_row(
    index: int, pl: Pipeline, table: pd.DataFrame, work: pd.DataFrame, heavy: int, replays: list[StepReplay]
) -> dict[str, Any]:
    per_rank = work.median(axis=1)
    others = per_rank.drop(index=heavy)
    step_med = float(table.groupby("step")["step_us"].max().median())
    # Without a replay (actions the dependency model cannot order), the bounding stage's extra
    # compute is the gain: the step runs its m micro-batches at the heavy stage's pace.
    gain = (
        _median([r.measured_us - r.balanced_us for r in replays])
        if replays
        else float(per_rank.loc[heavy] - others.median())
        if not others.empty
        else float("nan")
    )
    measured = table.groupby("step")["bubble_pct"].mean()
    uncontended = table.groupby("step")["bubble_uncontended_pct"].mean()
    return {
        "pipeline": index,
        "ranks": list(pl.ranks),
        "schedule": pl.schedule,
        "stages": pl.p,
        "microbatches": pl.m,
        "chunks": pl.v,
        "theory_pct": 100.0 * pl.theory,
        "bubble_pct": float(measured.median()),
        "bubble_uncontended_pct": float(uncontended.median()),
        "contention_pct": float(table["contention_pct"].median()),
        "bubble_pct_max_stage": float(table.groupby("rank")["bubble_pct"].median().max()),
        "step_us": step_med,
        "bound_rank": heavy,
        "bound_stage": pl.stage_of(heavy),
        "bound_compute_us": float(per_rank.loc[heavy]),
        "others_compute_us": float(others.median()) if not others.empty else float("nan"),
        "imbalance_ratio": float(per_rank.loc[heavy] / others.median())
        if not others.empty and others.median() > 0
        else float("nan"),
        "replay_step_us": _median([r.measured_us for r in replays]),
        "replay_ideal_pct": _median([r.ideal_pct for r in replays]),
        "imbalance_pts": _median([r.imbalance_pts for r in replays]),
        "latency_pts": _median([r.latency_pts for r in replays]),
        "balanced_step_us": float(np.median([r.balanced_us for r in replays])) if replays else float("nan"),
        "balance_gain_us": gain,
        "balance_gain_pct": 100.0 * gain / step_med if step_med > 0 else float("nan"),
        "hop_latency_us": float(np.median([r.latency_us for r in replays])) if replays else float("nan"),
        "how": "; ".join(f"{k}: {v}" for k, v in pl.how.items()),
    }
