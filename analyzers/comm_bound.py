"""Communication-bound steps: exposed communication above a share of the step (30% by default).

Per rank and step the share splits into waiting for peers, transfer, and (CPU traces) launching.
Per step, the cause is the largest of the three (median over ranks), and the step counts as
communication-bound when
- transfer: every rank's exposed communication exceeds the threshold (the bandwidth bill is paid by
  all; one rank's long collective alone is usually waiting, see REFERENCE "exposed is not blocking")
  and transfer alone exceeds it on the median rank, the transfer counted at the bandwidth the job
  typically reaches (a step's slow outlier of a transfer is a hiccup of the link or the host, not the
  job's bandwidth bill);
- waiting or launching: the median rank's exposure exceeds it and the straggler analysis names the
  rank(s) the others wait for (without a culprit, skew between ranks is scheduling noise).
A finding needs this in at least half of the steps and at least 1 ms of exposure (a relative and an
absolute margin). Transfer-bound steps compare bus bandwidth with the job's own best for that op and
with the nominal link bandwidth (`--link-gbps`). A process group whose bus bandwidth is under half
the best group's for the same op is reported as `slow_collective`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scope.analyzers.comm_bound_spec import COMM_BOUND_THRESHOLD
from scope.analyzers.stragglers import find_stragglers

from scope.analysis import Context, Result
from scope.finding import Finding

DEFAULT_THRESHOLD = COMM_BOUND_THRESHOLD.default
MIN_EXPOSED_US = 1000.0
# Transfer alone (after the last rank arrived) must exceed the threshold too, not only the exposure: what
# a healthy step exposes is mostly waiting on arrival skew. Measured on the 4-rank gloo demos (2 cores,
# quiet and with two CPU burners beside): healthy transfer 10-19% of the step, comm-bound 33-46%, so
# the threshold itself sits between them; the earlier extra margin (x1.25) missed 3 of 5 loaded runs.
TRANSFER_MARGIN = 1.0
# A step's transfer is judged at the job's typical bus bandwidth (the median over its steps) when it ran
# slower: on a host whose cores the ranks share, a gloo collective (moved by the ranks' own CPU threads)
# waits for a core. A healthy 4-rank gloo run on 2 cores under load 14-19 read 0.085 GB/s in the step whose
# transfer neared the threshold (29.6%; median step 0.15 GB/s: 16% at it), while comm-bound runs held
# 0.20-0.71 GB/s. A run starved evenly (every step 0.05-0.09) keeps its shares: this removes slow outliers,
# not the host's load. Only steps below the median are judged lower, at most half (a finding needs half),
# so a run whose every step is transfer-bound stays flagged (a comm-bound run read 28% at it in 1 of 5
# steps, bound in 4).
SLOW_GROUP_FRACTION = 0.5
# Exposed communication at least this much in partly traced groups: its cause is unknown.
UNKNOWN_SHARE = 0.5
# Messages this small measure latency, not bandwidth: left out of bandwidth comparisons.
MIN_BW_BYTES = 1 << 20


def step_table(
    bd: pd.DataFrame,
    threshold: float,
    culprits: list[int],
    unknown: pd.Series | None = None,
    bandwidth: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Per step: shares of exposed comm (median / min over ranks), cause, and the verdict. `unknown`: per
    step, the median rank's share (%) of exposed communication whose wait/transfer split is unknown;
    `bandwidth`: bandwidth_by_step's table (the transfer verdict then counts a slow step's transfer at the
    job's typical bandwidth)."""
    df = bd.assign(
        exposed=bd["exposed_comm_us"] / bd["step_us"],
        wait=bd["exposed_comm_wait_us"] / bd["step_us"],
        launch=bd["comm_launch_us"] / bd["step_us"],
        transfer=(bd["exposed_comm_transfer_us"] - bd["comm_launch_us"]) / bd["step_us"],
    )
    g = df.groupby("step")
    out = pd.DataFrame(
        {
            "ranks": g["rank"].nunique(),
            "step_us": g["step_us"].median(),
            "exposed_comm_pct": 100 * g["exposed"].median(),
            "exposed_comm_min_pct": 100 * g["exposed"].min(),
            "wait_pct": 100 * g["wait"].median(),
            "transfer_pct": 100 * g["transfer"].median(),
            "launch_pct": 100 * g["launch"].median(),
            "exposed_comm_us": g["exposed_comm_us"].median(),
        }
    ).reset_index()
    causes = out[["wait_pct", "transfer_pct", "launch_pct"]].to_numpy()
    out["cause"] = np.array(["waiting", "transfer", "launch"])[np.argmax(causes, axis=1)]
    out = _typical_transfer(out, bandwidth)
    if unknown is not None:
        # Exposed communication mostly in collectives whose group is only partly traced: from the traced
        # side, waiting for the untraced peers inside the kernel cannot be told from transfer.
        out["unknown_pct"] = out["step"].map(unknown).fillna(0.0).to_numpy()
        out.loc[out["unknown_pct"] >= UNKNOWN_SHARE * out["exposed_comm_pct"], "cause"] = "unknown"
    else:
        out["unknown_pct"] = 0.0
    limit = 100 * threshold
    transfer_bound = (
        (out["cause"] == "transfer")
        & (out["exposed_comm_min_pct"] > limit)
        & (out["transfer_typical_pct"] > TRANSFER_MARGIN * limit)
    )
    unknown_bound = (out["cause"] == "unknown") & (out["exposed_comm_min_pct"] > limit)
    waiting_bound = out["cause"].isin(["waiting", "launch"]) & (out["exposed_comm_pct"] > limit) & bool(culprits)
    bound = transfer_bound | waiting_bound | unknown_bound
    out["comm_bound"] = bound & (out["exposed_comm_us"] >= MIN_EXPOSED_US)
    out["waiting_for"] = [list(culprits) if c in ("waiting", "launch") else [] for c in out["cause"]]
    return out


def _typical_transfer(out: pd.DataFrame, bandwidth: pd.DataFrame | None) -> pd.DataFrame:
    """The step table with its bandwidth columns and `transfer_typical_pct`: the transfer share the step
    would have had at the job's typical (median) bus bandwidth, where it ran slower; the share itself
    where it ran as fast or faster, or moved no large collective (no bandwidth to judge by)."""
    if bandwidth is None or bandwidth.empty:
        bandwidth = pd.DataFrame(columns=["step", "busbw_gbps", "busbw_best_gbps"])
    out = out.merge(bandwidth, on="step", how="left")
    bw = pd.to_numeric(out["busbw_gbps"], errors="coerce")
    slower = (bw / bw.median()).where(bw > 0).clip(upper=1.0).fillna(1.0)
    # At the typical bandwidth the transfer takes `slower` of its time and the step shrinks by the rest:
    # share p becomes p*s / (1 - p*(1 - s)), never below what the median step itself would read.
    share = out["transfer_pct"] / 100.0
    out["transfer_typical_pct"] = 100.0 * share * slower / (1.0 - share * (1.0 - slower))
    return out


def bandwidth_by_step(inst: pd.DataFrame) -> pd.DataFrame:
    """Per step: bus bandwidth of its large collectives, and the job's best for the same op."""
    big = inst[(inst["bytes"] >= MIN_BW_BYTES) & inst["busbw_gbps"].notna() & ~inst["p2p"]]
    if big.empty:
        return pd.DataFrame(columns=["step", "busbw_gbps", "busbw_best_gbps"])
    best = big.groupby("op")["busbw_gbps"].max()
    big = big.assign(best=big["op"].map(best))
    g = big.groupby("step")
    return pd.DataFrame({"busbw_gbps": g["busbw_gbps"].median(), "busbw_best_gbps": g["best"].max()}).reset_index()


def analyze(ctx: Context) -> Result:
    if ctx.store is None:
        return Result()
    bd = ctx.table("breakdown")
    if bd.empty:
        return Result()
    threshold = float(ctx.option("comm_bound_threshold", DEFAULT_THRESHOLD))
    culprits = [v.rank for v in find_stragglers(ctx).verdicts]
    inst = ctx.matched.instances
    unknown = _unknown_by_step(ctx.table("budget"))
    table = step_table(bd, threshold, culprits, unknown, bandwidth_by_step(inst))
    nominal = ctx.option("link_gbps")
    table["link_gbps"] = float(nominal) if nominal else np.nan
    traced = sorted(int(r) for r in bd["rank"].unique())
    findings = [f for f in (_finding(table, threshold, traced, _untraced(inst, traced)),) if f]
    findings += _slow_groups(inst)
    return Result(findings=findings, tables={"comm_bound_steps": table})


def _unknown_by_step(budget: pd.DataFrame) -> pd.Series | None:
    """Per step, the median over ranks of the budget's comm_unknown share of the step (%)."""
    if budget.empty or "bucket" not in budget.columns:
        return None
    steps = budget.drop_duplicates(["rank", "step"]).set_index(["rank", "step"])["step_us"]
    unk = budget[budget["bucket"] == "comm_unknown"].groupby(["rank", "step"])["us"].sum()
    share = (100 * unk.reindex(steps.index, fill_value=0.0) / steps.where(steps > 0)).fillna(0.0)
    return share.groupby(level="step").median()


def _untraced(inst: pd.DataFrame, traced: list[int]) -> tuple[int, list[int]]:
    """(size of the largest partly traced group, the ranks of it to trace as well)."""
    if inst.empty:
        return 0, []
    partial = inst[(inst["group_size"] > inst["n_ranks"]) & ~inst["p2p"]]
    if partial.empty:
        return 0, []
    size = int(partial["group_size"].max())
    named = sorted({int(r) for m in partial["missing_ranks"] for r in (m if m is not None else [])})
    if not named and set(traced) <= set(range(size)):
        known = set(traced)  # a set: a list scanned for each of the group's ranks is quadratic in the ranks
        named = [r for r in range(size) if r not in known]  # the default group: global ranks 0..size-1
    return size, named


def _finding(
    table: pd.DataFrame, threshold: float, traced: list[int], untraced: tuple[int, list[int]] = (0, [])
) -> Finding | None:
    bound = table[table["comm_bound"]]
    if bound.empty or len(bound) * 2 < len(table):
        return None
    cause = bound["cause"].mode().iloc[0]
    rows = bound[bound["cause"] == cause]
    share = float(rows["exposed_comm_pct"].median())
    steps = [int(s) for s in rows["step"]]
    lost = float((rows["exposed_comm_us"]).median())
    waited: list[int] = []
    counted_in = ""
    if cause == "transfer":
        summary, suggestion = _transfer_text(rows, share, threshold)
        ranks: list[int] = []
    elif cause == "unknown":
        summary, suggestion = _unknown_text(rows, share, threshold, traced, untraced)
        ranks = []
    else:
        # The finding's ranks are the communication-bound ones (those that wait); the rank they wait for
        # is named in the words and in metrics.waiting_for, and has its own finding.
        waited = sorted({r for w in rows["waiting_for"] for r in w})
        ranks = [r for r in traced if r not in waited]
        what = "waiting for" if cause == "waiting" else "slowed by the communication path of"
        summary = (
            f"{_ranks_words(ranks, len(traced)).capitalize()} communication-bound in {len(bound)} of "
            f"{len(table)} steps ({share:.0f}% of the step in exposed communication), {what} "
            f"{_ranks_words(waited)}" + (f" in {len(rows)} of them" if len(rows) < len(bound) else "")
        )
        # The waiting is the time the waited-for rank's own finding counts as lost (it comes first):
        # counted there only, and said so, so no view shows this effect costing nothing.
        lost = 0.0
        counted_in = f"the finding of {_ranks_words(waited)}"
        summary += f"; its time lost is counted in {counted_in}"
        suggestion = "fix the straggler (see its finding); the others' communication time is waiting for it"
    evidence = [
        f"step {int(r['step'])}: exposed comm {r['exposed_comm_pct']:.0f}% (min over ranks "
        f"{r['exposed_comm_min_pct']:.0f}%), "
        + (
            f"waiting/transfer unknown {r['unknown_pct']:.0f}%"
            if cause == "unknown"
            else f"waiting {r['wait_pct']:.0f}%, transfer {r['transfer_pct']:.0f}%"
        )
        + (f", launch {r['launch_pct']:.0f}%" if r["launch_pct"] >= 1 else "")
        for _, r in rows.iterrows()
    ]
    return Finding(
        kind="comm_bound",
        severity="warning",
        summary=summary,
        ranks=ranks,
        steps=steps,
        evidence=evidence,
        metrics={
            "cause": cause,
            "exposed_comm_pct": share,
            "threshold_pct": 100 * threshold,
            "steps_bound": len(bound),
            "steps_of_cause": len(rows),
            "steps": len(table),
            "time_lost_us": lost,
            "time_lost_counted_in": counted_in,
            "busbw_gbps": _num(rows["busbw_gbps"].median()),
            "busbw_best_gbps": _num(rows["busbw_best_gbps"].max()),
            "waiting_for": waited,
            "untraced_ranks": untraced[1] if cause == "unknown" else [],
        },
        suggestion=suggestion,
    )


def _ranks_words(ranks: list[int], of: int = 0) -> str:
    """'rank 2 is', 'ranks 0, 1, 3 are', 'all 8 ranks are' (with `of`, the traced count); without a
    count the verb is left out ('rank 2', 'ranks 2, 5')."""
    verb = of > 0
    if of and len(ranks) == of and of > 2:
        return f"all {of} ranks are"
    if len(ranks) == 1:
        return f"rank {ranks[0]}" + (" is" if verb else "")
    shown = ", ".join(str(r) for r in ranks[:12]) + (f" ... ({len(ranks)} ranks)" if len(ranks) > 12 else "")
    return f"ranks {shown}" + (" are" if verb else "")


def _num(value: float) -> float | None:
    return float(value) if pd.notna(value) else None


def _unknown_text(
    rows: pd.DataFrame, share: float, threshold: float, traced: list[int], untraced: tuple[int, list[int]]
) -> tuple[str, str]:
    """One side of a collective cannot split its time: say so, and which ranks to trace (no bandwidth
    verdict, no interconnect advice from one rank's view)."""
    size, missing = untraced
    steps = f"{len(rows)} steps are" if len(rows) > 1 else "1 step is"
    group = f"{len(traced)} of the group's {size} ranks traced" if size else "the group only partly traced"
    summary = (
        f"{steps} communication-bound: {share:.0f}% of each step is exposed communication (threshold "
        f"{100 * threshold:.0f}%); with {group}, time inside the collectives spent waiting for the untraced "
        "peers cannot be told from transfer, so whether the network or a late peer holds the step is unknown"
    )
    who = f"ranks {_ranks_words(missing)[6:]}" if len(missing) > 1 else _ranks_words(missing) if missing else ""
    suggestion = (
        f"trace {who or 'every rank of the group'} as well (the same profiler schedule on every rank) and "
        "analyze them together: the cross-rank matching then splits waiting from transfer"
    )
    return summary, suggestion


def _transfer_text(rows: pd.DataFrame, share: float, threshold: float) -> tuple[str, str]:
    bw, best, link = rows["busbw_gbps"].median(), rows["busbw_best_gbps"].max(), rows["link_gbps"].max()
    steps = f"{len(rows)} steps are" if len(rows) > 1 else "1 step is"
    parts = [
        f"{steps} communication-bound: {share:.0f}% of each step is exposed communication, mostly "
        f"transfer, on every traced rank (threshold {100 * threshold:.0f}%)"
    ]
    if pd.notna(bw):
        parts.append(
            f"bus bandwidth {bw:.2f} GB/s ({100 * bw / best:.0f}% of the job's best {best:.2f} GB/s"
            + (f", {100 * bw / link:.0f}% of the {link:.0f} GB/s link)" if pd.notna(link) else ")")
        )
    low = pd.notna(bw) and ((pd.notna(link) and bw < 0.5 * link) or bw < 0.5 * best)
    suggestion = (
        "bandwidth is below what this job/link reaches: check the network (NCCL_DEBUG=INFO "
        "transport, congestion, a degraded link)"
        if low
        else "overlap communication with compute (DDP bucket_cap_mb, FSDP prefetch), communicate less "
        "(gradient accumulation, compression, larger per-rank batch) or use a faster interconnect"
    )
    return "; ".join(parts), suggestion


def _slow_groups(inst: pd.DataFrame) -> list[Finding]:
    """Process groups whose bus bandwidth is well under the best group's for the same op."""
    big = inst[(inst["bytes"] >= MIN_BW_BYTES) & inst["busbw_gbps"].notna() & ~inst["p2p"]]
    findings = []
    for op, sub in big.groupby("op"):
        per_pg = sub.groupby("pg")["busbw_gbps"].median()
        if len(per_pg) < 2:
            continue
        best_pg, best = per_pg.idxmax(), per_pg.max()
        for pg, bw in per_pg.items():
            if bw >= SLOW_GROUP_FRACTION * best:
                continue
            ranks = sorted({r for rs in sub.loc[sub["pg"] == pg, "ranks"] for r in rs})
            findings.append(
                Finding(
                    kind="slow_collective",
                    severity="warning",
                    summary=(
                        f"{op} on process group {pg!r} reaches {bw:.2f} GB/s bus bandwidth, "
                        f"{100 * bw / best:.0f}% of group {best_pg!r} ({best:.2f} GB/s)"
                    ),
                    ranks=ranks,
                    evidence=[
                        f"pg {pg!r}: median bus bandwidth {bw:.2f} GB/s over "
                        f"{int((sub['pg'] == pg).sum())} {op} instances"
                    ],
                    metrics={"pg": pg, "op": op, "busbw_gbps": float(bw), "best_busbw_gbps": float(best)},
                    suggestion="a link or NIC on this group's path is slow: check its ranks' hosts and links",
                )
            )
    return findings
