"""Who held a rank's peak, from its trace: the allocations still live at the peak "Total Allocated", each
placed in the op and the nn.Module that were running when it was made.

Live at the peak: the "[memory]" events up to the peak, an allocation (Bytes > 0) ended by a later free
(Bytes < 0) at its Addr. Each live allocation's time is then looked up among the rank's intervals:
  - op: the outermost CPU op open at that time (what the model's code called: aten::linear, or
    "autograd::engine::evaluate_function: AddmmBackward0" in backward), and the innermost one (the op
    that allocated: aten::empty, aten::mm, ...);
  - module: the nn.Module events open at that time (traces recorded with_stack=True carry
    "nn.Module: Linear_0" python_function events), outermost to innermost, joined by '/'.
A memory event carries no thread in the store, so every thread's intervals are swept at once and the
latest-opened interval open at the time wins (one thread runs a model's ops at a time, in practice).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from scope.store import part_path

ALLOCATOR_COLUMNS = ["rank", "device", "module", "op", "leaf_op", "bytes", "blocks"]
TOP_ALLOCATORS = 10
MODULE_PREFIX = "nn.Module: "
OUTSIDE = "(no module)"


def live_at_peak(addr: np.ndarray, nbytes: np.ndarray, peak: int) -> np.ndarray:
    """Indices of the allocation events up to PEAK not freed by then (empty where no event has an Addr)."""
    if (addr[: peak + 1] < 0).all():
        return np.zeros(0, dtype=np.int64)
    live: dict[int, int] = {}
    for i, (a, b) in enumerate(zip(addr[: peak + 1].tolist(), nbytes[: peak + 1].tolist(), strict=True)):
        if b > 0:
            live[a] = i
        elif b < 0:
            live.pop(a, None)
    return np.array(sorted(live.values()), dtype=np.int64)


def read_intervals(root: str | Path, rank: int, lo: int, hi: int) -> pd.DataFrame:
    """The rank's CPU ops and nn.Module events that overlap [LO, HI] (ns)."""
    import pyarrow.parquet as pq

    path = part_path(Path(root), "events", rank)
    if not path.is_file():
        return pd.DataFrame(columns=["ts_ns", "dur_ns", "name", "kind", "thread"])
    cols = ["ts_ns", "dur_ns", "name", "kind", "thread"]
    ev = pq.read_table(path, columns=cols, filters=[("kind", "in", ["cpu_op", "python"])]).to_pandas()
    ev = ev[(ev["ts_ns"] <= hi) & (ev["ts_ns"] + ev["dur_ns"] >= lo)]
    ev["name"] = ev["name"].astype(str)
    is_module = ev["name"].str.startswith(MODULE_PREFIX)
    return ev[(ev["kind"] == "cpu_op") | is_module].sort_values(["ts_ns", "dur_ns"], ascending=[True, False])


def open_at(intervals: pd.DataFrame, times: np.ndarray) -> list[list[str]]:
    """For each time (sorted or not): the names of the intervals open then, outermost first, on the
    thread whose latest-opened interval is the latest. One sweep, per-thread stacks."""
    order = np.argsort(times, kind="stable")
    starts = intervals["ts_ns"].to_numpy(dtype=np.int64)
    ends = starts + intervals["dur_ns"].to_numpy(dtype=np.int64)
    names = intervals["name"].tolist()
    threads = intervals["thread"].to_numpy(dtype=np.int64)
    stacks: dict[int, list[int]] = {}
    out: list[list[str]] = [[] for _ in range(len(times))]
    j = 0
    for q in order.tolist():
        t = int(times[q])
        while j < len(starts) and starts[j] <= t:
            stack = stacks.setdefault(int(threads[j]), [])
            while stack and ends[stack[-1]] < starts[j]:
                stack.pop()
            stack.append(j)
            j += 1
        best: list[int] = []
        for stack in stacks.values():
            while stack and ends[stack[-1]] < t:
                stack.pop()
            if stack and (not best or starts[stack[-1]] > starts[best[-1]]):
                best = stack
        out[q] = [names[k] for k in best]
    return out


def attribute(names: list[str]) -> tuple[str, str, str]:
    """(module path, outermost op, innermost op) from the intervals open at an allocation."""
    modules = [n.removeprefix(MODULE_PREFIX) for n in names if n.startswith(MODULE_PREFIX)]
    ops = [n for n in names if not n.startswith(MODULE_PREFIX)]
    return ("/".join(modules) or OUTSIDE, ops[0] if ops else "(no op)", ops[-1] if ops else "(no op)")


def peak_allocators(
    root: str | Path, rank: int, device: str, rows: pd.DataFrame, peak: int, top: int = TOP_ALLOCATORS
) -> pd.DataFrame:
    """The live bytes at the peak grouped by (module, op), largest first; the innermost op of the largest
    allocation in each group is named beside it."""
    addr = rows["addr"].to_numpy(dtype=np.int64)
    nbytes = rows["bytes"].to_numpy(dtype=np.int64)
    live = live_at_peak(addr, nbytes, peak)
    if not len(live):
        return pd.DataFrame(columns=ALLOCATOR_COLUMNS)
    ts = rows["ts_ns"].to_numpy(dtype=np.int64)[live]
    intervals = read_intervals(root, rank, int(ts.min()), int(ts.max()))
    found = [attribute(n) for n in open_at(intervals, ts)]
    table = pd.DataFrame(found, columns=["module", "op", "leaf_op"])
    table["bytes"] = nbytes[live]
    grouped = (
        table.sort_values("bytes", ascending=False)
        .groupby(["module", "op"], sort=False)
        .agg(leaf_op=("leaf_op", "first"), bytes=("bytes", "sum"), blocks=("bytes", "size"))
        .reset_index()
        .sort_values("bytes", ascending=False, kind="stable")
        .head(top)
    )
    grouped.insert(0, "device", device)
    grouped.insert(0, "rank", rank)
    return grouped[ALLOCATOR_COLUMNS].reset_index(drop=True)
