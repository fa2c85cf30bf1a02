"""Host CPU contention: ranks that outnumber their host's cores, or a host CPU-saturated while profiled.

CPU (gloo) ranks that share too few cores are descheduled in turn: every rank's compute stretches, one
rank at a time falls behind, pipeline stages start late. Such a host inflates bubbles and makes
healthy ranks look like stragglers; the cause is the host, not a rank or the schedule. One
`host_contention` finding per contended host, from
- run.json: the ranks launched on the host and the cores its launcher could use (`hosts[].cpus`), else
  the sidecar's `n_cpus`;
- the sidecar's host table: CPU busy % over the profiled steps (saturated at SATURATED_PCT or more).

The finding is a note (severity info) on its own; the link rule in its record (contention_explains in
analyzers/contention_spec.py) makes it the root of the bubbles and apparent stragglers it explains, and it
then takes their severity.
It never explains a failure, nor a rank persistently far slower than its peers: even sharing evenly
slows every rank alike.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from scope.analysis import Context, Result
from scope.finding import Finding

SATURATED_PCT = 90.0  # median CPU busy % over the profiled steps: the host had no spare core


def host_cores(run: dict[str, Any], sidecar_cpus: dict[str, int]) -> dict[str, tuple[list[int], int | None]]:
    """Host -> (ranks on it, usable cores or None)."""
    out: dict[str, tuple[list[int], int | None]] = {}
    for h in run.get("hosts") or []:
        if not isinstance(h, dict) or not h.get("name"):
            continue
        cpus = h.get("cpus") or sidecar_cpus.get(str(h["name"]))
        out[str(h["name"])] = (sorted(int(r) for r in h.get("ranks") or []), int(cpus) if cpus else None)
    return out


def _sidecar(ctx: Context, steps: pd.DataFrame) -> tuple[dict[str, int], dict[str, float]]:
    """(host -> n_cpus, host -> median CPU busy % during the profiled steps), empty without counters; the
    chunks are those the run's inventory lists (scope.inputs)."""
    from scope import counter_signals

    try:
        host = counter_signals.read_counters(ctx.inputs, "host")
    except Exception:  # counters are optional evidence; a damaged chunk never costs the analysis
        return {}, {}
    if host.empty or "n_cpus" not in host.columns:
        return {}, {}
    cpus = {str(k): int(v) for k, v in host.groupby("host")["n_cpus"].max().items() if pd.notna(v)}
    util = counter_signals.host_utilization(host)
    busy: dict[str, float] = {}
    if not util.empty and not steps.empty and {"start_ns", "end_ns"} <= set(steps.columns):
        lo, hi = int(steps["start_ns"].min()), int(steps["end_ns"].max())
        inside = util[(util["ts_ns"] > lo) & (util["start_ns"] < hi)]
        busy = {str(k): float(v) for k, v in inside.groupby("host")["cpu_busy_pct"].median().items()}
    return cpus, busy


def contention_findings(
    hosts: dict[str, tuple[list[int], int | None]], busy: dict[str, float], traced: set[int]
) -> list[Finding]:
    findings = []
    for name, (ranks, cpus) in sorted(hosts.items()):
        ranks = [r for r in ranks if r in traced] or ranks
        over = cpus is not None and len(ranks) > cpus
        load = busy.get(name, float("nan"))
        saturated = np.isfinite(load) and load >= SATURATED_PCT
        if not ranks or not (over or saturated):
            continue
        why = []
        if over:
            why.append(f"{len(ranks)} ranks share {cpus} CPU core{'s' if cpus != 1 else ''}")
        if saturated:
            why.append(f"the CPUs were {load:.0f}% busy during the profiled steps")
        findings.append(
            Finding(
                kind="host_contention",
                severity="info",
                summary=f"host {name} is CPU-contended: {' and '.join(why)}; its ranks are descheduled in turn, "
                "so their compute and waits are inflated and a rank can look slow without being so",
                ranks=ranks,
                evidence=[f"run.json: ranks {ranks} on host {name}, {cpus or 'unknown'} usable cores"]
                + ([f"sidecar: median CPU busy {load:.0f}% over the profiled steps"] if np.isfinite(load) else []),
                metrics={
                    "host": name,
                    "ranks_on_host": len(ranks),
                    "cpus": cpus,
                    "oversubscription": len(ranks) / cpus if cpus else None,
                    "cpu_busy_pct": load if np.isfinite(load) else None,
                },
                suggestion="give each rank a core of its own (fewer ranks per host, or more cores), or read its "
                "timings as those of a shared host: bubbles and small rank differences are inflated",
            )
        )
    return findings


def analyze(ctx: Context) -> Result:
    if ctx.store is None:
        return Result()
    steps = ctx.store.steps()
    sidecar_cpus, busy = _sidecar(ctx, steps)
    hosts = host_cores(ctx.store.run, sidecar_cpus)
    traced = set(ctx.store.ranks)
    return Result(findings=contention_findings(hosts, busy, traced))
