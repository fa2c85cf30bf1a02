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
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scope.analyzers import _intervals as iv
from scope.analyzers._budget import _named, _spans, main_events

from scope.ingest.classify import GPU_CATS

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


def rank_evidence(rank: int, events: pd.DataFrame, win: pd.DataFrame) -> pd.DataFrame:
    order = np.argsort(win["start_ns"].to_numpy(dtype=np.int64), kind="stable")
    win = win.iloc[order]
    lo = win["start_ns"].to_numpy(dtype=np.int64)
    hi = win["end_ns"].to_numpy(dtype=np.int64)
    main = main_events(events)
    loader = _named(main, "input")
    names = loader["name"].astype(str)
    kind = "multi" if names.str.contains("MultiProcessing").any() else "single" if len(names) else ""
    gpu = events[events["cat"].isin(GPU_CATS)]
    copies = gpu[(gpu["kind"] == "memcpy") & gpu["name"].astype(str).str.contains("HtoD", regex=False)]
    copy_names = copies["name"].astype(str)
    kernels = gpu[gpu["kind"] == "compute"]
    k_ts = kernels["ts_ns"].to_numpy(dtype=np.int64)
    k_step = _step_of(k_ts, lo, hi)
    k_dur = kernels["dur_ns"].to_numpy(dtype=np.int64)
    medians = [float(np.median(k_dur[k_step == i])) / 1e3 if (k_step == i).any() else 0.0 for i in range(lo.size)]
    sync = _named(main, "sync")
    s_step = _step_of(sync["ts_ns"].to_numpy(dtype=np.int64), lo, hi)
    s_names = sync["name"].astype(str).to_numpy()
    tops = []
    for i in range(lo.size):
        here = pd.Series(s_names[s_step == i])
        tops.append(str(here.value_counts().index[0]) if len(here) else "")
    c_ts = copies["ts_ns"].to_numpy(dtype=np.int64)
    out = pd.DataFrame(
        {
            "rank": rank,
            "step": win["step"].to_numpy(),
            "dataloader_us": iv.lengths_in_windows(_spans(loader), lo, hi) / 1e3,
            "dataloader_calls": _count(loader["ts_ns"].to_numpy(dtype=np.int64), lo, hi).astype(np.int64),
            "dataloader_kind": kind,
            "htod_pageable": _count(c_ts[copy_names.str.contains("Pageable").to_numpy()], lo, hi).astype(np.int64),
            "htod_pinned": _count(c_ts[copy_names.str.contains("Pinned").to_numpy()], lo, hi).astype(np.int64),
            "htod_us": _count(c_ts, lo, hi, copies["dur_ns"].to_numpy(dtype=np.float64)) / 1e3,
            "kernels": _count(k_ts, lo, hi).astype(np.int64),
            "kernel_median_us": medians,
            "sync_calls": np.bincount(s_step[s_step >= 0], minlength=lo.size).astype(np.int64),
            "sync_top": tops,
            "checkpoint_us": iv.lengths_in_windows(_spans(_named(main, "checkpoint")), lo, hi) / 1e3,
        }
    )
    return out[EVIDENCE_COLUMNS]
