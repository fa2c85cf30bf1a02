"""What the budget's findings cite from one rank's trace, per step (the map stage beside _budget.py).

Table `budget_evidence`, one row per (rank, step):

    rank, step             as in `budget`
    dataloader_us          time the training thread spent in DataLoader __next__ in the step
    dataloader_calls       how many __next__ calls
    dataloader_kind        single (num_workers=0: _SingleProcessDataLoaderIter) | multi (worker processes:
                           _MultiProcessingDataLoaderIter) | '' (no DataLoader traced)
    htod_pageable          host-to-device copies from pageable memory (pin_memory off) in the step
    htod_pinned            host-to-device copies from pinned memory
    htod_us                GPU time of the host-to-device copies
    kernels                compute kernels that start in the step
    kernel_median_us       their median length
    sync_calls             synchronizing calls (SCOPES 'sync') on the training thread in the step
    sync_top               the most frequent of them
    checkpoint_us          time in checkpoint save/load spans on the training thread
    unexplained_gap_us     the longest stretch of the step no bucket explains
    unexplained_gap_at_us  where it starts, after the step's start
    inferred_comm          JSON list of the rank's kernels counted as communication by inference
                           (scope/rankpass/comm_infer.py): [name, op, launches, why]; the same on every step
"""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd

from scope.rankpass import intervals as iv
from scope.rankpass.budget import Columns, Host

# Kineto's copy names: "Memcpy HtoD (Pageable -> Device)", "Memcpy HtoD (Pinned -> Device)".
_HTOD = re.compile(r"HtoD")
_PAGEABLE = re.compile(r"Pageable")
_PINNED = re.compile(r"Pinned")
_MULTI = re.compile(r"MultiProcessing")

EVIDENCE_COLUMNS = [
    "rank",
    "step",
    "dataloader_us",
    "dataloader_calls",
    "dataloader_kind",
    "htod_pageable",
    "htod_pinned",
    "htod_us",
    "kernels",
    "kernel_median_us",
    "sync_calls",
    "sync_top",
    "checkpoint_us",
    "unexplained_gap_us",
    "unexplained_gap_at_us",
    "inferred_comm",
]


def _step_of(ts: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Index of the step window holding each timestamp, -1 for none (windows sorted, disjoint)."""
    i = np.searchsorted(lo, ts, side="right") - 1
    ok = (i >= 0) & (ts < hi[np.maximum(i, 0)])
    return np.where(ok, i, -1)


def _count(ts: np.ndarray, lo: np.ndarray, hi: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    idx = _step_of(ts, lo, hi)
    keep = idx >= 0
    return np.bincount(idx[keep], weights=None if weights is None else weights[keep], minlength=lo.size)


def _most_frequent(names: np.ndarray, step: np.ndarray, n: int) -> list[str]:
    """Per step index, the most frequent name in it ('' for none)."""
    out = []
    for i in range(n):
        here = names[step == i]
        if here.size == 0:
            out.append("")
            continue
        values, counts = np.unique(here, return_counts=True)
        out.append(str(values[np.argmax(counts)]))
    return out


def rank_evidence(rank: int, events: pd.DataFrame, win: pd.DataFrame, host: Host | None = None) -> pd.DataFrame:
    return pd.DataFrame(evidence_columns(rank, events, win, host))[EVIDENCE_COLUMNS]


def evidence_columns(rank: int, events: pd.DataFrame | None, win: pd.DataFrame, host: Host | None = None) -> Columns:
    """`events`: None where `host` is given (the per-rank pass's)."""
    order = np.argsort(win["start_ns"].to_numpy(dtype=np.int64), kind="stable")
    win = win.iloc[order]
    lo = win["start_ns"].to_numpy(dtype=np.int64)
    hi = win["end_ns"].to_numpy(dtype=np.int64)
    if host is None:
        if events is None:
            raise ValueError("the budget's evidence needs the rank's events or its Host")
        host = Host.of(events)
    loader = host.named["input"]
    kind = "multi" if loader.named(_MULTI).any() else "single" if loader.size else ""
    gpu = host.gpu
    memcpy = gpu.take(gpu.is_kind("memcpy"))
    copies = memcpy.take(memcpy.named(_HTOD))
    kernels = gpu.take(gpu.is_kind("compute"))
    k_step = _step_of(kernels.ts, lo, hi)
    k_dur = (kernels.end - kernels.ts) / 1e3
    medians = np.array([float(np.median(k_dur[k_step == i])) if (k_step == i).any() else 0.0 for i in range(lo.size)])
    sync = host.named["sync"]
    s_step = _step_of(sync.ts, lo, hi)
    tops = _most_frequent(sync.names[np.maximum(sync.name, 0)].astype(str), s_step, lo.size)
    n = lo.size
    inferred = json.dumps([[k, *v] for k, v in sorted(host.inferred.items())]) if host.inferred else ""
    return {
        "rank": np.full(n, rank, dtype=np.int64),
        "step": win["step"].to_numpy(),
        "dataloader_us": iv.lengths_in_windows(loader.spans(), lo, hi) / 1e3,
        "dataloader_calls": _count(loader.ts, lo, hi).astype(np.int64),
        "dataloader_kind": np.full(n, kind, dtype=object),
        "htod_pageable": _count(copies.ts[copies.named(_PAGEABLE)], lo, hi).astype(np.int64),
        "htod_pinned": _count(copies.ts[copies.named(_PINNED)], lo, hi).astype(np.int64),
        "htod_us": _count(copies.ts, lo, hi, (copies.end - copies.ts).astype(np.float64)) / 1e3,
        "kernels": _count(kernels.ts, lo, hi).astype(np.int64),
        "kernel_median_us": medians,
        "sync_calls": np.bincount(s_step[s_step >= 0], minlength=lo.size).astype(np.int64),
        "sync_top": np.array(tops, dtype=object),
        "checkpoint_us": iv.lengths_in_windows(host.named["checkpoint"].spans(), lo, hi) / 1e3,
        "unexplained_gap_us": np.array([host.gaps.get(int(st), (0.0, 0.0))[1] for st in win["step"]]),
        "unexplained_gap_at_us": np.array([host.gaps.get(int(st), (0.0, 0.0))[0] for st in win["step"]]),
        "inferred_comm": np.full(n, inferred, dtype=object),
    }
