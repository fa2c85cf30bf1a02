"""The memory analyzer's judgements over the joined per-rank rows (one row per rank and device).

Thresholds are named here, with why; each finding carries the figures it was judged on.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from scope.finding import Finding

MIB = 2**20
GIB = 2**30
# A leak: the level at step ends grows at this share of the boundaries at least, over at least this many
# steps, by more than GROWTH_MIN_SHARE of the peak (or GROWTH_MIN_BYTES) in all. Caches that warm up in
# the first step and then hold still do not qualify.
GROWTH_MIN_STEPS = 3
GROWTH_MIN_FRACTION = 0.75
GROWTH_MIN_SHARE = 0.02
GROWTH_MIN_BYTES = 1 * MIB
# Imbalance: the highest peak above the median by this share and by at least this many bytes.
IMBALANCE_MIN_SHARE = 0.20
IMBALANCE_MIN_BYTES = 8 * MIB
# Fragmentation: reserved but unallocated at the allocation peak, at least this share of the reserve and
# this much: cached blocks the peak could not (or did not) use, which a request of another size cannot use.
FRAGMENT_MIN_SHARE = 0.25
FRAGMENT_MIN_BYTES = 1 * GIB
EXPANDABLE = "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"


def judge(devices: pd.DataFrame, steps: pd.DataFrame, headroom_pct: float) -> list[Finding]:
    gpu = devices[devices["device"] != "cpu"]
    rows = gpu if not gpu.empty else devices
    out = []
    for found in (headroom(gpu, headroom_pct), growth(devices), imbalance(rows), fragmentation(gpu)):
        out += found
    return out


def _gib(x: float) -> str:
    return f"{x / GIB:.2f} GiB" if abs(x) >= GIB / 4 else f"{x / MIB:.1f} MiB"


def _outside_line(row: pd.Series) -> str:
    """The memory outside PyTorch as its own line of the headroom, where NVML counted it."""
    outside = int(row.get("non_pytorch", -1))
    if outside < 0:
        return ""
    return (
        f"; outside PyTorch {_gib(outside)} (CUDA context, NCCL buffers, other processes: NVML's used "
        "beyond PyTorch's reserved), counted in the headroom"
    )


def headroom(gpu: pd.DataFrame, pct: float) -> list[Finding]:
    known = gpu[gpu["capacity"] > 0]
    if known.empty:
        return []
    used = np.where(known["peak_reserved"] >= 0, known["peak_reserved"], known["peak_allocated"])
    outside = known["non_pytorch"].clip(lower=0).to_numpy() if "non_pytorch" in known.columns else 0
    free = known["capacity"].to_numpy() - used - outside
    share = 100.0 * free / known["capacity"].to_numpy()
    low = share < pct
    if not low.any():
        return []
    tight = known[low].assign(free=free[low], share=share[low], pt=used[low]).sort_values("free")
    worst = tight.iloc[0]
    ranks = sorted({int(r) for r in tight["rank"]})
    return [
        Finding(
            kind="memory_headroom_low",
            severity="critical" if worst["share"] < 2 else "warning",
            summary=(
                f"{len(ranks)} rank(s) peaked within {pct:g}% of device memory: rank {int(worst['rank'])} "
                f"{worst['device']} reserved {_gib(worst['pt'])} of "
                f"{_gib(worst['capacity'])} ({_gib(worst['free'])} left, {worst['share']:.1f}%)" + _outside_line(worst)
            ),
            ranks=ranks,
            steps=[int(worst["peak_step"])] if worst["peak_step"] >= 0 else [],
            metrics={
                "headroom_bytes": {f"{int(r.rank)}:{r.device}": int(r.free) for r in tight.itertuples()},
                "min_headroom_bytes": int(worst["free"]),
                "min_headroom_pct": round(float(worst["share"]), 2),
                "capacity_bytes": int(worst["capacity"]),
                "non_pytorch_bytes": int(worst.get("non_pytorch", -1)),
            },
            suggestion="Lower the micro-batch or activation memory (activation checkpointing), shard more "
            "state (FSDP / ZeRO), or leave the fragmentation finding's reserve to expandable segments.",
        )
    ]


def growth(devices: pd.DataFrame) -> list[Finding]:
    grows = devices[
        (devices["steps"] >= GROWTH_MIN_STEPS)
        & (devices["growing_steps"] >= GROWTH_MIN_FRACTION * (devices["steps"] - 1))
        & (
            devices["growth_per_step"] * (devices["steps"] - 1)
            > np.maximum(GROWTH_MIN_BYTES, GROWTH_MIN_SHARE * devices["peak_allocated"])
        )
    ]
    if grows.empty:
        return []
    top = grows.sort_values("growth_per_step", ascending=False).iloc[0]
    ranks = sorted({int(r) for r in grows["rank"]})
    capacity = int(top.get("capacity", -1))
    left = capacity - max(int(top["peak_reserved"]), int(top["peak_allocated"])) if capacity > 0 else -1
    steps_left = int(left // top["growth_per_step"]) if left > 0 else -1
    when = f"; at this rate it fills the device in about {steps_left} more steps" if steps_left >= 0 else ""
    return [
        Finding(
            kind="memory_growth",
            severity="warning",
            summary=(
                f"Memory grows step after step on {len(ranks)} rank(s): rank {int(top['rank'])} {top['device']} "
                f"holds {_gib(top['growth_per_step'])} more at each step's end ({int(top['growing_steps'])} of "
                f"{int(top['steps']) - 1} step boundaries grew){when}"
            ),
            ranks=ranks,
            metrics={
                "growth_bytes_per_step": {
                    f"{int(r.rank)}:{r.device}": round(float(r.growth_per_step)) for r in grows.itertuples()
                },
                "max_growth_bytes_per_step": round(float(top["growth_per_step"])),
                "steps_to_capacity": steps_left,
            },
            suggestion="Something keeps a reference each step: a loss or output appended to a list without "
            ".item() / .detach(), a growing cache, or a graph kept alive (retain_graph). Compare two steps' "
            "memory snapshots (torch.cuda.memory._record_memory_history) to see which allocations stay.",
        )
    ]


def imbalance(rows: pd.DataFrame) -> list[Finding]:
    """The highest peak against the median of the ranks' peaks (per kind of device)."""
    per_rank = rows.groupby("rank")["peak_allocated"].max()
    if len(per_rank) < 2:
        return []
    median = float(per_rank.median())
    high = per_rank[(per_rank - median > IMBALANCE_MIN_SHARE * median) & (per_rank - median > IMBALANCE_MIN_BYTES)]
    if high.empty:
        return []
    top = int(high.idxmax())
    where, by_stage = "", {}
    if "stage" in rows.columns and (rows["stage"] >= 0).any():
        staged = rows[rows["stage"] >= 0]
        by_stage = {int(s): int(v) for s, v in staged.groupby("stage")["peak_allocated"].max().items()}
        stage = staged.loc[staged["rank"] == top, "stage"]
        where = f" (pipeline stage {int(stage.iloc[0])})" if not stage.empty else ""
    return [
        Finding(
            kind="memory_imbalance",
            severity="warning",
            summary=(
                f"Peak memory is uneven across ranks: rank {top}{where} peaked at {_gib(high[top])}, "
                f"{100 * (high[top] - median) / max(median, 1):.0f}% above the median rank's {_gib(median)}; "
                f"the job's memory limit is set by {len(high)} rank(s)"
            ),
            ranks=sorted(int(r) for r in high.index),
            metrics={
                "peak_allocated_bytes": {int(r): int(v) for r, v in per_rank.items()},
                "median_peak_bytes": int(median),
                "max_peak_bytes": int(high[top]),
                "spread_bytes": int(per_rank.max() - per_rank.min()),
                **({"peak_by_stage": by_stage} if by_stage else {}),
            },
            suggestion="Balance what each rank holds: pipeline stages with more layers or the embedding / "
            "loss head, uneven sequence lengths, or rank 0 doing extra work (logging, evaluation).",
        )
    ]


def fragmentation(gpu: pd.DataFrame) -> list[Finding]:
    held = gpu[gpu["unallocated_at_peak"] >= 0]
    frag = held[
        (held["unallocated_at_peak"] >= FRAGMENT_MIN_BYTES)
        & (held["unallocated_at_peak"] >= FRAGMENT_MIN_SHARE * held["reserved_at_peak"])
    ]
    if frag.empty:
        return []
    top = frag.sort_values("unallocated_at_peak", ascending=False).iloc[0]
    return [
        Finding(
            kind="fragmentation",
            severity="warning"
            if top.get("capacity", -1) > 0 and top["peak_reserved"] > 0.9 * top["capacity"]
            else "info",
            summary=(
                f"The caching allocator held memory it could not use: rank {int(top['rank'])} {top['device']} had "
                f"{_gib(top['unallocated_at_peak'])} reserved but unallocated at its allocation peak "
                f"({_gib(top['peak_allocated'])} allocated, {_gib(top['reserved_at_peak'])} reserved)"
            ),
            ranks=sorted({int(r) for r in frag["rank"]}),
            metrics={
                "unallocated_bytes": {
                    f"{int(r.rank)}:{r.device}": int(r.unallocated_at_peak) for r in frag.itertuples()
                },
                "reserved_at_peak_bytes": int(top["reserved_at_peak"]),
                "peak_allocated_bytes": int(top["peak_allocated"]),
                "source": "trace",
            },
            suggestion=f"Set {EXPANDABLE}: segments then grow in place instead of leaving gaps between "
            "cached blocks of odd sizes.",
        )
    ]
