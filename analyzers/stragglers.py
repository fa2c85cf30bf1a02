"""Stragglers: which rank slows the job down, how (compute, host, communication), how often, and
what it costs per step.

Per rank and step, from the breakdown: compute, host time (idle: launch or data-loading gaps) and
the communication path (CPU traces: time spent launching collectives, e.g. in a comm hook).

- score: the fastest rank's median compute over this rank's median compute (NVIDIA resiliency-ext's
  straggler score; communication is excluded because it contains waiting). Reported for every rank.
- ratio to the other ranks (`step_ratio`; "2.41× the other ranks" in every view: text, Markdown, the
  dashboard's cards and heat-map): the rank's median value over the profiled steps, over the median over
  the same steps of the other ranks' median in each step (steps slow for everyone, a noisy host, cancel
  out). Host and communication-path times are near 0 on healthy ranks: 1% of the median step is added to
  both sides so their ratios stay finite. Per step, the same quotient in that step (`ratio` in
  straggler_steps) decides which steps were slow.
- time lost per step (what the user reads as "time lost"): how much shorter the step would be with this
  rank at its peers' pace. Replay the step with the rank's value at the other ranks' median. A step lasts
  as long as its busiest rank's non-waiting time (step - waiting for peers), so the loss is that
  maximum minus the maximum after the replay. Where collectives were matched, what the other ranks
  measurably waited for this rank bounds the replay (`measured_loss`): on CPU ranks sharing a host's
  cores, busy times are inflated both ways, and the replay alone names healthy ranks that held
  nobody up, and underestimates a real straggler. "Held up" is that wait itself: the time the other
  ranks waited at collectives for this rank alone; it is evidence, not a cost (part of it the step
  would not save).

A rank is flagged for a kind when its ratio to the other ranks exceeds 1/threshold
(threshold 0.75 by default: 33% slower than its peers; for compute the NVIDIA score must be below the
threshold too) *and* its median time lost is at least 15% of the median step (and 1 ms): a relative
and an absolute margin, so scheduling noise on a shared host is not reported. A ratio over
2/threshold (2.7x its peers' compute) needs only a third of that loss. Persistent: slow so in at least half
the steps; transient: slow in fewer, but 2.7x slower with twice the loss in at least two of them
(a single slow step is as often an OS hiccup).
Communication-kind stragglers are reported as `slow_collective`, the others as `straggler`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scope.analyzers.stragglers_spec import STRAGGLER_MIN_LOSS, STRAGGLER_SUGGESTIONS, STRAGGLER_THRESHOLD

from scope import units
from scope.analysis import Context, Result
from scope.finding import Finding
from scope.rankpass.arrivals import arrival_lag, held_up, last_arrivals

DEFAULT_THRESHOLD = STRAGGLER_THRESHOLD.default
DEFAULT_MIN_LOSS = STRAGGLER_MIN_LOSS.default  # of the median step time
MIN_LOSS_US = 1000.0
STRONG = 2.0  # a ratio over STRONG / threshold is a strong deviation (see _slow)
MIN_TRANSIENT_STEPS = 2
# kind -> breakdown column
KIND_COLUMNS = {"compute": "compute_us", "host": "idle_us", "communication": "comm_launch_us"}


@dataclass
class KindStats:
    kind: str
    ratio: pd.DataFrame  # rank x step: value / median of the other ranks
    loss: pd.DataFrame  # rank x step: time lost (us)
    value: pd.DataFrame  # rank x step: the value itself (us)
    others: pd.DataFrame  # rank x step: median of the other ranks (us)
    rank_ratio: pd.Series  # rank: the ratio to the other ranks (peer_ratio), the one every view prints
    pad: float  # what the ratios add to both sides (ratio_pad), us


def _pivot(bd: pd.DataFrame, col: str) -> pd.DataFrame:
    return bd.pivot_table(index="rank", columns="step", values=col, aggfunc="first").sort_index()


def peer_ratio(value: pd.DataFrame, pad: float = 0.0, others: pd.DataFrame | None = None) -> pd.Series:
    """Per rank (rows of a rank x step table): its median over the steps over the median, over the steps
    it has, of the other ranks' median in each step (`others`, computed when not given); `pad` is added
    to both (see the module docstring). The one ratio every view prints as "N× the other ranks"."""
    others = (others_median(value) if others is None else others).where(value.notna())
    mine, theirs = value.median(axis=1) + pad, others.median(axis=1) + pad
    return mine / theirs.where(theirs > 0)


def ratio_pad(column: str, step_us: pd.DataFrame | pd.Series) -> float:
    """What peer_ratio adds to both sides for this breakdown column: 1% of the median step for host and
    communication-path times (near 0 on healthy ranks, where a ratio would swing widely), else 0."""
    if column == KIND_COLUMNS["compute"] or column not in KIND_COLUMNS.values():
        return 0.0
    return 0.01 * float(np.nanmedian(np.asarray(step_us, dtype=float)))


def rank_ratios(breakdown: pd.DataFrame, column: str) -> pd.Series:
    """peer_ratio of one column of a long (rank, step, ...) table: what the heat-map names its hottest
    rank by, so that it prints the number the straggler finding prints."""
    value = breakdown.pivot_table(index="rank", columns="step", values=column, aggfunc="first").sort_index()
    step = breakdown["step_us"] if "step_us" in breakdown.columns else pd.Series(dtype=float)
    return peer_ratio(value, ratio_pad(column, step) if len(step) else 0.0)


def others_median(x: pd.DataFrame) -> pd.DataFrame:
    """Per cell: the median of the same step on the other ranks (leave-one-out)."""
    arr = x.to_numpy(dtype=float)
    if len(x) > 16:  # one rank barely moves the median of many
        out = np.broadcast_to(np.nanmedian(arr, axis=0), arr.shape)
    else:
        out = np.stack([np.nanmedian(np.delete(arr, i, axis=0), axis=0) for i in range(len(arr))])
    return pd.DataFrame(out, index=x.index, columns=x.columns)


def _replay_loss(busy: pd.DataFrame, excess: pd.DataFrame) -> pd.DataFrame:
    """Per rank and step: max busy - max busy with this rank's busy reduced by its excess.

    A what-if replay of the step as ranks working side by side until the step's closing collective
    (analyzers/whatif/replay.py with no edges): no rank waits for another, so a step lasts as long as
    its busiest rank, and the what-if of one rank is the larger of its reduced time and the busiest
    of the others. That needs each step's two largest times, not a rank x rank table of what-ifs
    (which at 4,096 ranks held 400 MB, at 16,384 ranks 6 GB). A rank absent from a step (or whose
    excess is unknown) takes no part in that step's what-if for it.
    """
    arr = busy.to_numpy(dtype=float)
    n_ranks = arr.shape[0]
    present = np.where(np.isnan(arr), -np.inf, arr)
    reduced_arr = arr - excess.to_numpy(dtype=float)
    reduced = np.where(np.isnan(reduced_arr), -np.inf, reduced_arr)
    top = present.max(axis=0) if n_ranks else np.zeros(arr.shape[1])
    replayed = np.maximum(reduced, _others_max(present))
    if n_ranks == 1:  # a lone rank's step still starts at 0
        replayed = np.maximum(replayed, 0.0)
    with np.errstate(invalid="ignore"):
        loss = np.where(np.isfinite(replayed) & np.isfinite(top), top[None, :] - replayed, 0.0)
    return pd.DataFrame(loss, index=busy.index, columns=busy.columns)


def _others_max(x: np.ndarray) -> np.ndarray:
    """Per cell: the largest value of the same column on the other rows (-inf where there is none)."""
    n_rows, n_cols = x.shape
    if n_rows < 2:
        return np.full(x.shape, -np.inf)
    first = x.argmax(axis=0)
    top = x[first, np.arange(n_cols)]
    without = x.copy()
    without[first, np.arange(n_cols)] = -np.inf
    second = without.max(axis=0)
    out = np.broadcast_to(top, x.shape).copy()
    out[first, np.arange(n_cols)] = second
    return out


def measured_loss(
    replay: pd.DataFrame, excess: pd.DataFrame, held: pd.DataFrame | None, lag: pd.DataFrame | None
) -> pd.DataFrame:
    """The replayed loss, bounded by what the other ranks were seen to wait for this rank.

    Above: they cannot have lost more than they waited for it alone (`held_up`) or, when several
    slow ranks arrive together (one slow host), half its lag behind the others' median arrival, so
    this bound never vetoes such a group (the replay, one rank at a time, still underrates one).
    Below: they lost at least half of what they waited for it alone (half, because on shared cores
    the straggler computes faster while the others wait), but never more than the excess of the
    kind being judged, so a rank's waits are not credited to a kind it is not slow in. Steps
    without matched collectives keep the replay."""
    if held is None or lag is None or held.empty:
        return replay
    h = held.reindex(index=replay.index, columns=replay.columns).to_numpy(dtype=float)
    g = lag.reindex(index=replay.index, columns=replay.columns).to_numpy(dtype=float)
    r, x = replay.to_numpy(dtype=float), excess.to_numpy(dtype=float)
    with np.errstate(invalid="ignore"):
        bounded = np.fmax(np.fmin(r, np.fmax(h, g / 2)), np.fmin(h / 2, x))
    out = np.where(np.isnan(h), r, bounded)
    return pd.DataFrame(out, index=replay.index, columns=replay.columns)


def kind_stats(
    bd: pd.DataFrame, held: pd.DataFrame | None = None, lag: pd.DataFrame | None = None
) -> dict[str, KindStats]:
    """Per kind: ratio to the others, loss, value and the others' median (rank x step). held / lag:
    rank x step waits measured at collectives (`scope.rankpass.arrivals`), when collectives matched."""
    busy = _pivot(bd.assign(busy=bd["step_us"] - bd["exposed_comm_wait_us"]), "busy")
    step = _pivot(bd, "step_us")
    out = {}
    for kind, col in KIND_COLUMNS.items():
        value = _pivot(bd, col)
        others = others_median(value)
        excess = (value - others).clip(lower=0)
        pad = ratio_pad(col, step.to_numpy())  # host/comm values can be ~0 on healthy ranks
        ratio = (value + pad) / (others + pad).where(others + pad > 0)
        loss = measured_loss(_replay_loss(busy, excess), excess, held, lag)
        out[kind] = KindStats(kind, ratio, loss, value, others, peer_ratio(value, pad, others), pad)
    return out


@dataclass
class Verdict:
    rank: int
    kind: str
    persistent: bool
    slow_steps: list[int]
    step_ratio: float  # peer_ratio: the ratio to the other ranks
    loss_us: float  # median over steps
    value_us: float  # the rank's median over the steps (the numerator of step_ratio, without pad)
    others_us: float  # the other ranks' median, median over the same steps (its denominator)
    pad_us: float = 0.0  # added to both (ratio_pad): host and communication-path times only


def _slow(
    ratio: np.ndarray, loss: np.ndarray, margin: np.ndarray | float, threshold: float, strong_tier: bool
) -> np.ndarray:
    """Slower than the threshold with the full loss margin, or (compute) STRONG times that with a
    third of it: a rank computing three times as long as its peers is no scheduling noise, even where
    communication dominates the step. Host and communication-path times are small on healthy ranks,
    so their ratios swing widely and always need the full margin."""
    slow = (ratio > 1 / threshold) & (loss >= margin)
    if strong_tier:
        slow |= (ratio > STRONG / threshold) & (loss >= margin / 3)
    return slow


def judge(stats: KindStats, margin: pd.Series, threshold: float, score: pd.Series) -> list[Verdict]:
    """Verdicts of one kind for all ranks at once (rank x step arrays)."""
    ratio = stats.ratio.to_numpy(dtype=float)
    loss = stats.loss.to_numpy(dtype=float)
    m = margin.reindex(stats.ratio.columns).to_numpy(dtype=float)
    with np.errstate(invalid="ignore"):
        slow = _slow(ratio, loss, m, threshold, stats.kind == "compute")
        strong = (ratio > STRONG / threshold) & (loss >= 2 * m)
    med_ratio = stats.rank_ratio.reindex(stats.ratio.index).to_numpy(dtype=float)
    med_loss = np.nanmedian(loss, axis=1)
    med_value = stats.value.median(axis=1).to_numpy(dtype=float)
    med_others = stats.others.where(stats.value.notna()).median(axis=1).to_numpy(dtype=float)
    relative = _slow(med_ratio, med_loss, float(np.nanmedian(m)), threshold, stats.kind == "compute")
    if stats.kind == "compute":
        relative &= score.reindex(stats.ratio.index).to_numpy() < threshold
    n_steps = np.sum(~np.isnan(ratio), axis=1)
    persistent = relative & (slow.sum(axis=1) * 2 >= n_steps)
    verdicts = []
    # One slow step is an OS hiccup as often as a straggler: a transient one needs two strong steps.
    for i in np.flatnonzero(persistent | (strong.sum(axis=1) >= MIN_TRANSIENT_STEPS)):
        steps = [int(s) for s in stats.ratio.columns[slow[i] | strong[i]]]
        verdicts.append(
            Verdict(
                int(stats.ratio.index[i]),
                stats.kind,
                bool(persistent[i]),
                steps,
                float(med_ratio[i]),
                float(med_loss[i]),
                float(med_value[i]),
                float(med_others[i]),
                stats.pad,
            )
        )
    return verdicts


def _rank_by_step(df: pd.DataFrame, col: str) -> pd.DataFrame:
    return df.pivot_table(index="rank", columns="step", values=col, aggfunc="first") if not df.empty else df


@dataclass
class StragglerReport:
    scores: pd.DataFrame
    steps: pd.DataFrame
    verdicts: list[Verdict]


def find_stragglers(ctx: Context) -> StragglerReport:
    return ctx.memo("stragglers", lambda: _find(ctx))


def peer_groups(ranks: list[int], stages: dict[int, tuple[int, ...]]) -> list[list[int]]:
    """Ranks that do the same work, each group judged on its own: in a pipeline-parallel run the ranks of
    one stage (its data-parallel replicas; a stage with one rank has no peer), otherwise all ranks. The
    last stage computing the loss is no straggler; an unequal stage is the pipeline analyzer's imbalance."""
    if not stages:
        return [sorted(ranks)]
    groups: dict[tuple[int, ...], list[int]] = {}
    for r in sorted(ranks):
        groups.setdefault(stages.get(r, ()), []).append(r)
    return list(groups.values())


def _find(ctx: Context) -> StragglerReport:
    from scope.analyzers.pipeline import rank_stages

    bd = ctx.table("breakdown")
    empty = StragglerReport(pd.DataFrame(), pd.DataFrame(), [])
    if bd.empty or bd["rank"].nunique() < 2:
        return empty
    matched = ctx.matched
    arrivals, held, lag = last_arrivals(matched), held_up(matched), arrival_lag(matched)
    reports = [
        _find_among(ctx, bd[bd["rank"].isin(group)], arrivals, held, lag)
        for group in peer_groups([int(r) for r in bd["rank"].unique()], rank_stages(ctx))
        if len(group) >= 2
    ]
    reports = [r for r in reports if not r.scores.empty]
    if not reports:
        return empty
    return StragglerReport(
        pd.concat([r.scores for r in reports], ignore_index=True).sort_values("rank").reset_index(drop=True),
        pd.concat([r.steps for r in reports], ignore_index=True),
        sorted((v for r in reports for v in r.verdicts), key=lambda v: v.rank),
    )


def _find_among(
    ctx: Context, bd: pd.DataFrame, arrivals: pd.DataFrame, held: pd.DataFrame, lag: pd.DataFrame
) -> StragglerReport:
    """The verdicts among one group of peer ranks."""
    threshold = float(ctx.option("straggler_threshold", DEFAULT_THRESHOLD))
    frac = float(ctx.option("straggler_min_loss", DEFAULT_MIN_LOSS))
    stats = kind_stats(bd, _rank_by_step(held, "held_up_us"), _rank_by_step(lag, "lag_us"))
    step_med = _pivot(bd, "step_us").median(axis=0)
    margin = (step_med * frac).clip(lower=MIN_LOSS_US)
    comp = stats["compute"].value.median(axis=1)
    fastest = comp.idxmin()
    score = (comp.min() / comp.where(comp > 0)).fillna(1.0)
    best: dict[int, Verdict] = {}
    for st in stats.values():
        for v in judge(st, margin, threshold, score):
            current = best.get(v.rank)
            if current is None or (v.persistent, v.loss_us) > (current.persistent, current.loss_us):
                best[v.rank] = v
    verdicts = [best[r] for r in sorted(best)]
    scores = _scores_table(stats, comp, score, int(fastest), arrivals, held, verdicts)
    return StragglerReport(scores, _steps_table(stats, held), verdicts)


def _scores_table(
    stats: dict[str, KindStats],
    comp: pd.Series,
    score: pd.Series,
    fastest: int,
    arrivals: pd.DataFrame,
    held: pd.DataFrame,
    verdicts: list[Verdict],
) -> pd.DataFrame:
    by_rank = {v.rank: v for v in verdicts}
    df = pd.DataFrame(
        {
            "rank": comp.index.astype(int),
            "score": score.to_numpy(),
            "compute_median_us": comp.to_numpy(),
            "reference_rank": fastest,
        }
    )
    for kind, st in stats.items():
        df[f"{kind}_step_ratio"] = st.rank_ratio.to_numpy()
        df[f"{kind}_loss_us"] = st.loss.median(axis=1).to_numpy()
    df["host_median_us"] = stats["host"].value.median(axis=1).to_numpy()
    df["comm_launch_median_us"] = stats["communication"].value.median(axis=1).to_numpy()
    df = df.merge(arrivals, on="rank", how="left")
    held_median = held.groupby("rank")["held_up_us"].median() if not held.empty else pd.Series(dtype=float)
    df["held_up_median_us"] = df["rank"].map(held_median)
    for col in ("collectives", "last_count", "last_share", "late_median_us", "held_up_median_us"):  # NaN, never pd.NA
        df[col] = pd.to_numeric(df[col], errors="coerce").astype(float)
    df["flagged"] = df["rank"].isin(by_rank)
    df["kind"] = [by_rank[r].kind if r in by_rank else None for r in df["rank"]]
    df["persistent"] = [by_rank[r].persistent if r in by_rank else None for r in df["rank"]]
    df["slow_steps"] = [by_rank[r].slow_steps if r in by_rank else [] for r in df["rank"]]
    return df


def _steps_table(stats: dict[str, KindStats], held: pd.DataFrame) -> pd.DataFrame:
    parts = []
    for kind, st in stats.items():
        long = pd.DataFrame(
            {
                "value_us": st.value.stack(),
                "others_median_us": st.others.stack(),
                "ratio": st.ratio.stack(),
                "loss_us": st.loss.stack(),
            }
        ).reset_index()
        long.insert(2, "kind", kind)
        parts.append(long)
    out = pd.concat(parts, ignore_index=True)
    # The same per-step held-up time on each kind's row: it is the rank's, not a kind's.
    out = out.merge(held.astype({"rank": int, "step": int}), on=["rank", "step"], how="left")
    out["held_up_us"] = out["held_up_us"].astype(float)
    return out.sort_values(["rank", "step", "kind"]).reset_index(drop=True)


def analyze(ctx: Context) -> Result:
    if ctx.store is None:
        return Result()
    report = find_stragglers(ctx)
    if report.scores.empty:
        return Result()
    findings = [_finding(v, report) for v in report.verdicts]
    return Result(findings=findings, tables={"straggler_scores": report.scores, "straggler_steps": report.steps})


MAX_STEP_EVIDENCE = 3  # the slow steps listed (those that lost the most), the rest counted


def _finding(v: Verdict, report: StragglerReport) -> Finding:
    row = report.scores.set_index("rank").loc[v.rank]
    steps = report.steps[(report.steps["rank"] == v.rank) & (report.steps["kind"] == v.kind)]
    share = float(row.get("last_share", np.nan))
    how = "persistent" if v.persistent else f"transient (steps {v.slow_steps})"
    label = {"compute": "compute", "host": "host (idle) time", "communication": "communication path"}[v.kind]
    ratio = units.quantity("step_ratio", v.step_ratio)
    times = f"{label} {v.value_us / 1e3:.1f} ms per step, {ratio} the other ranks ({v.others_us / 1e3:.1f} ms)"
    if v.pad_us > 0:  # the quotient of the two times shown is not the ratio: say why
        times = (
            f"{label} {v.value_us / 1e3:.1f} ms per step vs {v.others_us / 1e3:.1f} ms on the other ranks, "
            f"{ratio} the other ranks with {v.pad_us / 1e3:.1f} ms (1% of the step) added to both, as times "
            "near 0 need"
        )
    summary = (
        f"rank {v.rank} is a {how} {v.kind} straggler: {times}; time lost: about {v.loss_us / 1e3:.1f} ms per "
        "step, what the step would shorten with this rank at its peers' pace"
    )
    evidence = _step_evidence(steps, v, label)
    held_median = float(row.get("held_up_median_us", np.nan))
    if np.isfinite(held_median) and held_median > 0:
        evidence.append(
            f"held up: the other ranks waited {held_median / 1e3:.1f} ms per step (median) at collectives for "
            f"this rank alone; time lost counts only what the step would shorten, {v.loss_us / 1e3:.1f} ms"
        )
    if np.isfinite(share):
        evidence.append(f"last to arrive at {int(row['last_count'])} of {int(row['collectives'])} collectives")
    evidence.append(
        f"straggler score {row['score']:.2f}: the fastest rank's ({int(row['reference_rank'])}) median compute "
        "over this rank's"
    )
    kind = "slow_collective" if v.kind == "communication" else "straggler"
    return Finding(
        kind=kind,
        severity="warning",
        summary=summary,
        ranks=[v.rank],
        steps=v.slow_steps,
        evidence=evidence,
        metrics={
            "straggler_kind": v.kind,
            "score": float(row["score"]),
            "step_ratio": v.step_ratio,
            "time_lost_us": v.loss_us,
            "persistent": v.persistent,
            "last_arriver_share": share,
            "held_up_us": held_median,
            "value_median_us": v.value_us,
            "others_median_us": v.others_us,
        },
        suggestion=STRAGGLER_SUGGESTIONS[v.kind],
    )


def _step_evidence(steps: pd.DataFrame, v: Verdict, label: str) -> list[str]:
    """The steps that support the verdict: those it was slow in and lost time (the most first kept),
    never a step where the rank cost nothing."""
    slow = steps[steps["step"].isin(v.slow_steps) & (steps["loss_us"] > 0)]
    shown = slow.nlargest(MAX_STEP_EVIDENCE, "loss_us").sort_values("step")
    lines = [f"slow, and costing time, in {len(slow)} of {steps['value_us'].notna().sum()} profiled steps"]
    lines += [
        f"step {int(s['step'])}: {label} {s['value_us'] / 1e3:.1f} ms vs {s['others_median_us'] / 1e3:.1f} ms "
        f"on the other ranks (median), {s['loss_us'] / 1e3:.1f} ms lost"
        for _, s in shown.iterrows()
    ]
    return lines
