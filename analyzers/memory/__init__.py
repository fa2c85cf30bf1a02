"""Memory over time for every rank, from the profiler's "[memory]" events (profile_memory=True).

A pass over the ranks (a worker per rank when the run is big) reduces each rank's memory table to a few
rows (analyzers/memory/rank.py); the driver joins those and judges them (analyzers/memory/findings.py):
headroom against the device's capacity, growth at step boundaries (a leak), imbalance across ranks, and
memory reserved by the caching allocator but not allocated (fragmentation).
"""

from __future__ import annotations

import pandas as pd
from scope.analyzers.memory.attribution import ALLOCATOR_COLUMNS
from scope.analyzers.memory.findings import judge
from scope.analyzers.memory.fold import RankFold
from scope.analyzers.memory.nvml import nvml_memory
from scope.analyzers.memory.rank import RANK_COLUMNS, STEP_COLUMNS, TIMELINE_COLUMNS, MemoryJob, rank_memory_or_none

from scope.analysis import Context, Result
from scope.finding import Finding
from scope.store import Store

# Below this many ranks, worker processes cost more than the reads they spread.
PARALLEL_MIN_RANKS = 64


def analyze(ctx: Context) -> Result:
    from scope.analyzers.memory.snapshots import analyze_snapshots

    tables, findings, warnings = analyze_snapshots(ctx)
    traced = _from_traces(ctx)
    tables.update(traced.tables)
    oom_table, oom_findings = _oom_forensics(ctx)
    if not oom_table.empty:
        tables["oom_figures"] = oom_table
    findings += oom_findings
    return Result(findings=findings + traced.findings, tables=tables, warnings=[*warnings, *traced.warnings])


def _oom_forensics(ctx: Context) -> tuple[pd.DataFrame, list[Finding]]:
    """The OOM lines the diagnosis found (it runs first: scope.analyzers' order), read for their figures."""
    from scope.analyzers.diagnose import diagnosis_of
    from scope.analyzers.memory.oom import OOM_COLUMNS, oom_forensics

    from scope.errors import ScopeError

    try:  # the diagnose analyzer's, kept in the context (built here only when it did not run)
        diagnosis = diagnosis_of(ctx)
    except ScopeError:  # one trace file: nothing to diagnose
        return pd.DataFrame(columns=OOM_COLUMNS), []
    return oom_forensics(ctx.inputs.root, diagnosis)


def _from_traces(ctx: Context) -> Result:
    store = ctx.store
    if store is None or not store.ranks:
        return Result()
    parts = _rank_pass(ctx)
    devices = parts.devices.frame(RANK_COLUMNS)
    if devices.empty:
        return Result()
    steps = parts.steps.frame(STEP_COLUMNS)
    timeline = parts.timeline.frame(TIMELINE_COLUMNS)
    capacity = _capacities(ctx, devices)
    nvml_total, nvml_used = nvml_memory(ctx, devices)
    # NVML's capacity is the device's own: it wins over the trace header's and the option's
    devices["capacity"] = [t if t > 0 else c for t, c in zip(nvml_total, capacity, strict=True)]
    devices["stage"] = _stages(ctx, devices)
    # headroom: what the device had left at the rank's peak (reserved where recorded) net of the memory
    # outside PyTorch (NVML's used beyond the peak reserve), -1 where unknown
    used = devices["peak_reserved"].where(devices["peak_reserved"] > 0, devices["peak_allocated"])
    nvml = pd.Series(nvml_used, index=devices.index, dtype="int64")
    devices["non_pytorch"] = (nvml - used).clip(lower=0).where(nvml > 0, -1).astype("int64")
    net = devices["capacity"] - used - devices["non_pytorch"].clip(lower=0)
    devices["headroom"] = net.where(devices["capacity"] > 0, -1).astype("int64")
    findings = judge(devices, steps, ctx.option("memory_headroom_pct", 10.0))
    tables = {"memory_ranks": devices, "memory_steps": steps, "memory_timeline": timeline}
    allocators = parts.allocators.frame(ALLOCATOR_COLUMNS)
    if not allocators.empty:
        tables["memory_peak_allocators"] = allocators
    return Result(findings=findings, tables=tables, warnings=parts.notes())


def _rank_pass(ctx: Context) -> RankFold:
    """Every rank's memory rows, folded as they arrive (a rank without memory events sends nothing back)."""
    from scope.engine import map_unordered

    store = ctx.store
    assert store is not None
    ranks = [r for r in store.ranks if _may_hold_memory(store, r)]
    if not ranks:
        return RankFold()
    workers = ctx.option("workers") if len(ranks) >= PARALLEL_MIN_RANKS else 1
    jobs = (MemoryJob(str(store.root), r) for r in ranks)
    done = map_unordered(
        rank_memory_or_none,
        jobs,
        engine=ctx.option("engine", "local"),
        workers=workers,
        scheduler=ctx.option("scheduler"),
        count=len(ranks),
    )
    fold = RankFold()
    for part in done:
        fold.add(part)
    return fold


def _may_hold_memory(store: Store, rank: int) -> bool:
    """Whether the rank has "[memory]" rows, by ingest's count (a store written before it was counted: yes):
    a rank without any sends nothing back, and reading it cost a worker a read and a frame (at 1,024 ranks
    of the scale synth, none with memory events: ~5 s of the analysis' wall)."""
    return (store.meta.get("ranks", {}).get(str(rank)) or {}).get("n_memory", -1) != 0


def _stages(ctx: Context, devices: pd.DataFrame) -> list[int]:
    """Each row's pipeline stage (its first, for a rank running several), -1 outside a pipeline."""
    from scope.analyzers.pipeline import rank_stages

    stages = rank_stages(ctx)  # the pipeline analyzer's, computed once per analysis
    return [int(stages[r][0]) if stages.get(r) else -1 for r in devices["rank"].tolist()]


def _capacities(ctx: Context, devices: pd.DataFrame) -> list[int]:
    """Each row's device capacity in bytes: --device-memory-gib, else the rank's trace header
    (deviceProperties' totalGlobalMem); -1 where neither says (the CPU)."""
    given = ctx.option("device_memory_gib")
    ranks_meta = ctx.store.meta.get("ranks", {}) if ctx.store else {}
    out = []
    for rank, device in zip(devices["rank"].tolist(), devices["device"].tolist(), strict=True):
        if device == "cpu":
            out.append(-1)
        elif given:
            out.append(int(float(given) * 2**30))
        else:
            known = (ranks_meta.get(str(rank)) or {}).get("device_memory")
            out.append(int(known) if isinstance(known, int) else -1)
    return out
