"""Memory outside PyTorch, from the NVML counters the sidecar samples (hosts/<host>/counters/gpu): the
device's used bytes count every process's memory and the CUDA context, NCCL's buffers included, which
PyTorch's own counters (Total Reserved) never see. Per rank and device: NVML's capacity and the highest
used it sampled on that GPU over the run; what it holds beyond the rank's peak reserve is memory outside
PyTorch, and the headroom is taken net of it.

The rank's cuda:N is NVML's GPU N on the rank's host (run.json says the host; a run with counters from
one host alone is that host's). CUDA_VISIBLE_DEVICES remapping is not undone.
"""

from __future__ import annotations

import pandas as pd

from scope.analysis import Context


def nvml_memory(ctx: Context, devices: pd.DataFrame) -> tuple[list[int], list[int]]:
    """Per row of DEVICES: NVML's total and highest used bytes of its GPU (-1 where no counter says)."""
    from scope import counter_signals

    unknown = [-1] * len(devices)
    gpu = counter_signals.read_counters(ctx.inputs, "gpu")
    if gpu.empty or "mem_used_bytes" not in gpu.columns:
        return unknown, unknown
    peaks = gpu.groupby(["host", "gpu"]).agg(total=("mem_total_bytes", "max"), used=("mem_used_bytes", "max"))
    hosts = counter_signals.hosts_of_ranks(ctx.inputs.path)
    only = str(gpu["host"].iloc[0]) if gpu["host"].nunique() == 1 else None
    totals, used = [], []
    for rank, device in zip(devices["rank"].tolist(), devices["device"].tolist(), strict=True):
        host = hosts.get(int(rank), only)
        key = (host, int(device.split(":")[1])) if str(device).startswith("cuda:") and host else None
        if key is None or key not in peaks.index:
            totals.append(-1)
            used.append(-1)
            continue
        row = peaks.loc[key]
        totals.append(int(row["total"]) if pd.notna(row["total"]) else -1)
        used.append(int(row["used"]) if pd.notna(row["used"]) else -1)
    return totals, used
