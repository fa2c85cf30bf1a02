"""Pipeline findings: the stage that bounds the step (`pipeline_imbalance`) and a bubble well above
what the schedule should leave (`pipeline_bubble`), each with its evidence and numbers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from scope.finding import Finding

if TYPE_CHECKING:
    from scope.analyzers.pipeline.report import StepReplay
    from scope.analyzers.pipeline.structure import Pipeline

PHASES = ("warmup", "steady", "cooldown")
PHASE_WORDS = {"warmup": "warm-up (filling)", "steady": "steady state", "cooldown": "cool-down (draining)"}


def _ms(us: float) -> str:
    return f"{us / 1e3:.1f} ms"


def imbalance_finding(
    pl: Pipeline,
    table: pd.DataFrame,
    work: pd.DataFrame,
    heavy: int,
    summary: dict[str, Any],
    ratio_min: float,
    min_gain: float,
) -> Finding | None:
    ratio, gain_pct = summary["imbalance_ratio"], summary["balance_gain_pct"]
    # Ranks that share their host's cores (cpu_rate < 1: actions ran at that share of their uncontended pace)
    # stretch unevenly: a balanced 4-rank gloo pipeline on 2 cores read stage 1 at 1.3x its peers at cpu_rate
    # 0.8. The bar rises by the lost share, so a stage is named for its own work, not the host's scheduling.
    cpu_rate = summary.get("cpu_rate", 1.0)
    if np.isfinite(cpu_rate) and 0 < cpu_rate < 1:
        ratio_min /= cpu_rate
    if not (np.isfinite(ratio) and ratio >= ratio_min and np.isfinite(gain_pct) and gain_pct >= 100 * min_gain):
        return None
    stage = pl.stage_of(heavy)
    others = work.drop(index=heavy)
    evidence = [
        f"step {int(s)}: stage {stage} (rank {heavy}) computes {_ms(work.at[heavy, s])} vs "
        f"{_ms(float(others[s].median()))} on the other stages (median)"
        for s in work.columns
    ]
    bubble = table.groupby("rank")["bubble_pct"].median()
    evidence.append(
        "bubble per stage (median % of step): "
        + ", ".join(f"stage {pl.stage_of(int(r))} (rank {int(r)}) {b:.0f}%" for r, b in bubble.items())
    )
    evidence.append(
        f"replay: {_ms(summary['replay_step_us'])} per step as measured, "
        f"{_ms(summary['balanced_step_us'])} with stage {stage} at its peers' compute"
    )
    summary_text = (
        f"pipeline stage {stage} on rank {heavy} bounds the step: {_ms(summary['bound_compute_us'])} of compute "
        f"per step vs {_ms(summary['others_compute_us'])} on the other stages ({ratio:.1f}x); balancing it would "
        f"save about {_ms(summary['balance_gain_us'])} per step ({gain_pct:.0f}%)"
    )
    return Finding(
        kind="pipeline_imbalance",
        severity="warning",
        summary=summary_text,
        ranks=[heavy],
        steps=[int(s) for s in work.columns],
        evidence=evidence,
        metrics={
            "stage": stage,
            "rank": heavy,
            "imbalance_ratio": ratio,
            "time_lost_us": summary["balance_gain_us"],
            "gain_pct": gain_pct,
            "bound_compute_us": summary["bound_compute_us"],
            "others_compute_us": summary["others_compute_us"],
            "schedule": pl.schedule,
            "stages": pl.p,
            "microbatches": pl.m,
        },
        suggestion=f"move layers off stage {stage} (rank {heavy}) to its neighbours so every stage computes about "
        "the same per micro-batch (e.g. split by measured time, not layer count)",
    )


def _phase_excess(table: pd.DataFrame, replays: list[StepReplay], suffix: str) -> dict[str, float]:
    """Measured minus ideal bubble per phase, summed over the stages (median over steps, us)."""
    measured = table.groupby("step")[[f"{p}{suffix}" for p in PHASES]].sum()
    ideal = {r.step: np.sum([list(v) for v in r.ideal_phases.values()], axis=0) for r in replays}
    out = {}
    for i, phase in enumerate(PHASES):
        diffs = [measured.at[s, f"{phase}{suffix}"] - ideal[s][i] for s in measured.index if s in ideal]
        out[phase] = float(np.median(diffs)) if diffs else float("nan")
    return out


def _contention_note(summary: dict[str, Any]) -> str:
    note = (
        f"the stages shared their host's CPU cores: actions ran at {summary['cpu_rate']:.0%} of their "
        f"undisturbed speed (median); {summary['contention_pct']:.0f}% of the step was compute stretched by "
        f"contention. Bubble on the progress clock (contention removed) {summary['bubble_uncontended_pct']:.0f}%,"
        f" on the wall clock {summary['bubble_pct']:.0f}%"
    )
    if summary.get("uncontended_above_wall"):
        note += (
            " (the progress clock shrinks compute but not waits and transfer latency, which sharing cores inflates"
            " too: the wall-clock figure is reported)"
        )
    return note


# Delays between actions (transfers, wake-ups) that explain this share of the excess make it a latency bubble.
LATENCY_SHARE = 0.5


def latency_cause(summary: dict[str, Any], excess: float) -> tuple[str, str] | None:
    """(sentence, remedy) when point-to-point latency, not the schedule, makes most of the excess bubble."""
    latency_pts, hop = summary.get("latency_pts", np.nan), summary.get("hop_latency_us", np.nan)
    action = summary.get("action_compute_us", np.nan)
    if not (np.isfinite(latency_pts) and np.isfinite(hop) and excess > 0 and latency_pts >= LATENCY_SHARE * excess):
        return None
    ratio = hop / action if np.isfinite(action) and action > 0 else np.nan
    sentence = (
        f"most of the excess ({latency_pts:.0f} of {excess:.0f} points) is point-to-point latency, not the schedule: "
        f"{_ms(hop)} from a send to its consumer starting vs {_ms(action)} of compute per micro-batch action"
        + (f" ({ratio:.1f}x)" if np.isfinite(ratio) else "")
    )
    remedy = (
        "make each micro-batch's compute large next to a transfer: larger micro-batches (fewer of them), fewer "
        "stages, and sends and receives overlapped with compute (batched or asynchronous p2p)"
    )
    return sentence, remedy


def bubble_finding(
    pl: Pipeline, table: pd.DataFrame, replays: list[StepReplay], summary: dict[str, Any], margin: float
) -> Finding | None:
    measured, theory, contended = summary["measured_pct"], summary["theory_pct"], summary["contended"]
    excess = measured - theory
    if not np.isfinite(excess) or excess < margin:
        return None
    # The progress clock's figures, unless they read above the wall clock's (see _contention_note).
    progress = contended and not summary.get("uncontended_above_wall")
    suffix = "_uncontended_us" if progress else "_us"
    growth = _phase_excess(table, replays, suffix)
    phase = max(growth, key=lambda k: growth[k] if np.isfinite(growth[k]) else -np.inf)
    step = summary["step_us"]
    imbalance_pts, latency_pts = summary["imbalance_pts"], summary["latency_pts"]
    pct = "bubble_uncontended_pct" if progress else "bubble_pct"
    per_stage = table.groupby("rank")[[pct, *(f"{p}{suffix}" for p in PHASES)]].median()
    evidence = [
        f"stage {pl.stage_of(int(r))} (rank {int(r)}): bubble {row[pct]:.0f}% of the step; warm-up "
        f"{_ms(row['warmup' + suffix])}, steady {_ms(row['steady' + suffix])}, cool-down "
        f"{_ms(row['cooldown' + suffix])}"
        for r, row in per_stage.iterrows()
    ]
    if contended:
        evidence.append(_contention_note(summary))
    evidence.append(
        "bubble above the ideal schedule per phase (all stages): "
        + ", ".join(f"{p} {_ms(v)}" for p, v in growth.items() if np.isfinite(v))
    )
    evidence.append(f"hop latency (send to the consumer starting) {_ms(summary['hop_latency_us'])}")
    clock = " (CPU contention removed)" if progress else ""
    text = (
        f"pipeline bubble is {measured:.0f}% of the step{clock} vs {theory:.0f}% in theory ({pl.schedule}, p={pl.p}, "
        f"m={pl.m}{f', v={pl.v}' if pl.v > 1 else ''}): {excess:.0f} points more, growing most in the "
        f"{PHASE_WORDS[phase]}; unequal stage compute explains about {imbalance_pts:.0f} points, delays between "
        f"actions (transfers, wake-ups) about {latency_pts:.0f}, leaving {summary['schedule_pct']:.0f}% to the "
        "schedule itself"
    )
    suggestion = (
        "raise the micro-batch count (the bubble falls as (p-1)/(m+p-1)), use an interleaved or "
        "zero-bubble schedule, balance the stages, and overlap sends and receives with compute"
    )
    latency = latency_cause(summary, excess)
    if latency is not None:
        text += f"; {latency[0]}"
        suggestion = latency[1]
    return Finding(
        kind="pipeline_bubble",
        severity="warning",
        summary=text,
        ranks=list(pl.ranks),
        steps=sorted(int(s) for s in table["step"].unique()),
        evidence=evidence,
        metrics={
            "bubble_pct": measured,
            "wall_bubble_pct": summary["bubble_pct"],
            "contended": contended,
            "theory_pct": theory,
            "excess_pct": excess,
            "phase": phase,
            "phase_excess_us": growth,
            "imbalance_pts": imbalance_pts,
            "latency_pts": latency_pts,
            "time_lost_us": excess / 100 * step,
            "schedule": pl.schedule,
            "stages": pl.p,
            "microbatches": pl.m,
            "chunks": pl.v,
            "hop_latency_us": summary.get("hop_latency_us"),
            "action_compute_us": summary.get("action_compute_us"),
            "latency_bound": latency is not None,
        },
        suggestion=suggestion,
    )
