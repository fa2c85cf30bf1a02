"""`--hta-compat`: HTA 0.5.0's temporal breakdown and comm-comp overlap, by HTA's own definitions.

Our own breakdown (analyzers/breakdown.py) is per step and splits communication; HTA's numbers are
per rank over the whole trace. This module reproduces HTA so the two tools can be compared:

- GPU events only (kernels, memcpy, memset; GPU user annotations have no stream in HTA), of which
  HTA keeps those whose CPU launch (same correlation id) started before the last ProfilerStep began,
  when the trace has two steps or more (`include_last_profiler_step=False`).
- ns-resolution timestamps are rounded to whole microseconds: start up, end down.
- Kernel classes by name: communication `^nccl`, memory `^(hip)?Memcpy|^(hip)?Memset|^dma`,
  computation every other kernel except `Sync`, `...LaunchKernel` and `runFunction` names.
- kernel_time = last end - first start; idle = kernel_time - |union of kernels|;
  compute = |union of compute kernels|; non_compute = kernel_time - idle - compute;
  comm-comp overlap = |union(comm) ∩ union(compute)| / |union(comm)|.
Percentages are rounded to 2 decimals, as HTA prints them.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from scope.analysis import Context, Result
from scope.ingest.classify import GPU_CATS
from scope.rankpass import intervals as iv

_COMM = re.compile(r"^nccl")
_MEMORY = re.compile(r"^(hip)?Memcpy|^(hip)?Memset|^dma")
_NOT_COMPUTE = re.compile(r"^nccl|.*Memcpy|.*Memset|.*dma|^.*Sync|cuda.*LaunchKernel|^runFunction")
_GPU_KINDS = ("compute", "comm", "memcpy", "memset")
COLUMNS = [
    "rank",
    "idle_pct",
    "compute_pct",
    "non_compute_pct",
    "comm_comp_overlap_pct",
    "idle_us",
    "compute_us",
    "non_compute_us",
    "kernel_time_us",
    "events",
]


def analyze(ctx: Context) -> Result:
    if not ctx.option("hta_compat", False) or ctx.store is None:
        return Result()
    rows = [
        row
        for rank in ctx.store.ranks
        if (
            row := hta_rank(
                ctx.store.read_events(
                    rank, columns=["name", "cat", "kind", "ts_ns", "dur_ns", "device", "correlation"]
                ).to_pandas(),
                rank,
            )
        )
    ]
    return Result(tables={"hta_compat": pd.DataFrame(rows, columns=COLUMNS)})


def _kept_gpu_events(df: pd.DataFrame) -> pd.DataFrame:
    """GPU kernels/copies whose launch precedes the last ProfilerStep (when there are >= 2 steps)."""
    gpu_mask = df["cat"].isin(GPU_CATS) & df["kind"].isin(_GPU_KINDS)
    gpu = df[gpu_mask]
    cpu = df[~gpu_mask & (df["device"] < 0)]
    steps = cpu[cpu["name"].astype(str).str.startswith("ProfilerStep#")]
    if len(steps) < 2:
        return gpu
    last_start = steps["ts_ns"].max()
    launched = cpu.loc[(cpu["ts_ns"] < last_start) & (cpu["correlation"] >= 0), "correlation"].unique()
    return gpu[gpu["correlation"].isin(launched)]


def _us_spans(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Whole-µs start (rounded up) and end (rounded down), as HTA rounds ns-resolution times."""
    ts = df["ts_ns"].to_numpy(dtype=np.int64)
    end = ts + df["dur_ns"].to_numpy(dtype=np.int64)
    return -((-ts) // 1000), end // 1000


def hta_rank(df: pd.DataFrame, rank: int) -> dict | None:
    gpu = _kept_gpu_events(df)
    if gpu.empty:
        return None
    names = gpu["name"].astype(str)
    start, end = _us_spans(gpu)
    is_comm = names.str.match(_COMM).to_numpy()
    is_compute = ~names.str.match(_NOT_COMPUTE).to_numpy()
    kernel_time = int(end.max() - start.min())
    busy = iv.union(start, end)
    comm = iv.union(start[is_comm], end[is_comm])
    compute = iv.union(start[is_compute], end[is_compute])
    idle = kernel_time - iv.total(busy)
    compute_us = iv.total(compute)
    non_compute = kernel_time - idle - compute_us
    comm_us = iv.total(comm)
    overlap = iv.total(iv.intersect(comm, compute))

    def pct(x: float) -> float:
        return round(100.0 * x / kernel_time, 2) if kernel_time > 0 else float("nan")

    return {
        "rank": rank,
        "idle_pct": pct(idle),
        "compute_pct": pct(compute_us),
        "non_compute_pct": pct(non_compute),
        "comm_comp_overlap_pct": round(100.0 * overlap / comm_us, 2) if comm_us > 0 else float("nan"),
        "idle_us": float(idle),
        "compute_us": float(compute_us),
        "non_compute_us": float(non_compute),
        "kernel_time_us": float(kernel_time),
        "events": len(gpu),
    }
