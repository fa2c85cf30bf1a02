"""A rank's operators and kernels counted, and the folding of every rank's counts into the ops tables
(analyzers/ops.py says what the tables hold). The per-rank pass (scope/rankpass/run.py) makes
these counts (tables/op_products.py) and folds them (tables/op_stats.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from scope.rankpass import intervals as iv
from scope.rankpass.arrays import Ev
from scope.rankpass.batches import ArrowBatches, as_batch
from scope.rankpass.budget import Claims, Columns, Host, budget_columns

HOST_SCOPES = ("input", "checkpoint", "sync", "optimizer", "gc")
LAUNCH_RE = re.compile(r"Launch|^cuLaunch|^hipLaunch|^hipExtLaunch", re.IGNORECASE)
# Store kinds (scope/ingest/tables_spec.py) worth comparing; python frames, steps and others are not ops.
OP_KINDS = ("cpu_op", "annotation", "runtime", "compute", "comm", "memcpy", "memset")
KERNEL_KINDS = ("compute", "comm", "memcpy", "memset")
GPU_KINDS = ("compute", "memcpy", "memset")  # a rank with these has a GPU timeline (gloo's comm is on CPU)
# The event columns a rank's products are made of (a fused per-rank pass reads them with its others').
OPS_EVENT_COLUMNS = ["kind", "name", "cat", "ts_ns", "dur_ns", "thread", "correlation", "step"]
# Beyond this many rows the smallest are dropped (a big GPU trace has thousands of kernel variants).
MAX_ROWS = 3000
COLUMNS = [
    "kind",
    "name",
    "parent",
    "ranks",
    "calls",
    "total_us",
    "rank_steps",
    "calls_per_step",
    "us_per_step",
    "max_rank_us_per_step",
]


def fold_rows(counts: pd.DataFrame, rank_steps: int) -> pd.DataFrame:
    """A rank's counts as OpFold takes them: with the rank counted once and its own time per step (made
    where the rank was read: in the coordinating process, 2 ms a rank, 33 s at 16,384 ranks)."""
    if counts.empty:
        return counts
    # set in place (the rank's own frame): assign copied it, 1-2 ms a rank
    counts["ranks"] = 1
    counts["max_rank_us_per_step"] = counts["ns"].to_numpy() / 1e3 / rank_steps
    return counts


class OpFold:
    """The two tables folded as ranks' products arrive (rank_products, then fold_rows; the ranks with
    profiled steps): one row per (kind, name, parent) and the host budget's rows, never a frame per rank."""

    def __init__(self) -> None:
        self.totals, self.host, self.rank_steps = OpTotals(), ArrowBatches(), 0

    def add(self, rows: pa.RecordBatch | None, host_budget: pa.RecordBatch | None, rank_steps: int) -> None:
        """A rank's fold_rows and host budget, as batches (_batches.as_batch)."""
        self.totals.add(rows)
        self.host.add(host_budget)
        self.rank_steps += rank_steps

    def tables(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """(op_stats, host_budget)."""
        if not self.rank_steps:
            return pd.DataFrame(columns=COLUMNS), pd.DataFrame()
        return self.totals.table(self.rank_steps), self.host.joined(["rank", "step"])


def rank_products(
    ev: pd.DataFrame, steps: pd.DataFrame, rank: int, host: Host | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One rank's (counts, host budget) from events already read (OPS_EVENT_COLUMNS at least, as the store
    gives them: names and kinds as categoricals; other columns are ignored, `ev` is left as it is) and
    its step windows (store.read_steps): calls and ns per (kind, name, parent) inside profiled steps,
    sorted by those texts, and (a GPU rank) the training thread's budget per step. `host`: Host.of(ev)
    (scope/rankpass/budget.py) where the caller has made it already (a pass that also makes the budget).

    All on arrays: events are grouped by integer keys made of their names' and kinds' places in sorted
    order, and only the output rows become text (a rank has ~27k events, a few hundred distinct names)."""
    host = host if host is not None else Host.of(ev)
    counts, gpu = rank_counts(ev["step"].to_numpy(), host)
    return counts, host_budget(host, rank, steps) if gpu else pd.DataFrame()


def fold_columns(counts: Columns, rank_steps: int) -> Columns | None:
    """fold_rows on rank_count_columns' columns (None: no rows), as the per-rank pass sends them."""
    n = len(counts["ns"])
    if not n:
        return None
    return {**counts, "ranks": np.ones(n, dtype=np.int64), "max_rank_us_per_step": counts["ns"] / 1e3 / rank_steps}


def rank_counts(step: np.ndarray, host: Host) -> tuple[pd.DataFrame, bool]:
    """rank_products' counts, and whether the rank has a GPU timeline (then it has a host budget);
    `step`: each event's profiled step (-1: none)."""
    text, blocks, gpu = _count(step, host)
    return text.table(blocks), gpu


def rank_count_columns(step: np.ndarray, host: Host) -> tuple[Columns, bool]:
    """rank_counts as columns (texts as object arrays)."""
    text, blocks, gpu = _count(step, host)
    return text.columns(blocks), gpu


def _count(step: np.ndarray, host: Host) -> tuple[_Text, list[Groups], bool]:
    arr = host.ev
    text = _Text.of(arr)
    dur = arr.end - arr.ts
    in_steps = (step >= 0) & arr.is_kind(*OP_KINDS)
    no_parent = np.full(arr.size, text.empty, dtype=np.int64)
    if not (in_steps & arr.is_kind(*GPU_KINDS)).any():
        return text, [text.groups(in_steps, no_parent, dur)], False
    # A GPU rank's kernels are counted by the CPU operator that launched them, after its operators and
    # runtime calls. A kernel without a name is not counted; elsewhere a missing name is a group of its
    # own, after every name.
    kernel = arr.is_kind(*KERNEL_KINDS)
    parent = no_parent.copy()
    parent[kernel] = _parents(arr, text, kernel)
    named = text.groups(in_steps & ~kernel, no_parent, dur)
    kernels = text.groups(in_steps & kernel & (arr.name >= 0), parent, dur)
    return text, [named, kernels], True


_KEYS = ["kind", "name", "parent"]


class OpTotals:
    """Per (kind, name, parent) over the ranks folded in so far: ranks, calls, total ns and the largest
    rank's time per step. Ranks' rows wait in a small batch, then fold into the totals."""

    # Folded every this many rows (about 100 ranks): the rows wait as Arrow batches, but each fold makes
    # frames of their few hundred texts a rank, and the totals grow fastest early (100k rows: a 28 MB
    # higher peak in a replay of the pass over 16,384 ranks, measured when they waited as DataFrames).
    FOLD_ROWS = 20_000

    def __init__(self) -> None:
        self.total: pd.DataFrame | None = None
        self.pending = ArrowBatches()
        self.rows = 0

    def add(self, rows: pa.RecordBatch | pd.DataFrame | None) -> None:
        """A rank's fold_rows (as a batch, or a frame)."""
        batch = as_batch(rows) if isinstance(rows, pd.DataFrame) else rows
        if batch is None or not batch.num_rows:
            return
        self.pending.add(batch)
        self.rows += batch.num_rows
        if self.rows >= self.FOLD_ROWS:
            self._fold(sort=False)

    def folded(self) -> pd.DataFrame | None:
        """The totals so far with every waiting row folded in, unsorted (a part another fold takes, as a
        dask batch's prefold sends it); None before any row."""
        if self.rows:
            self._fold(sort=False)
        return self.total

    def _fold(self, sort: bool) -> None:
        parts = ([self.total] if self.total is not None else []) + [self.pending.frame()]
        joined = pd.concat(parts, ignore_index=True)
        out = joined.groupby(_KEYS, observed=True, sort=sort).agg(
            ranks=("ranks", "sum"),
            calls=("calls", "sum"),
            ns=("ns", "sum"),
            max_rank_us_per_step=("max_rank_us_per_step", "max"),
        )
        self.total, self.rows = out.reset_index(), 0

    def table(self, rank_steps: int) -> pd.DataFrame:
        """Across ranks: totals, per rank-step averages and the largest rank's time per step."""
        if len(self.pending):
            self._fold(sort=True)
        elif self.total is not None:
            self.total = self.total.sort_values(_KEYS, kind="stable").reset_index(drop=True)
        if self.total is None or self.total.empty:
            return pd.DataFrame(columns=COLUMNS)
        out = self.total.rename(columns={"ns": "total_us"})
        out["total_us"] = out["total_us"].astype(float) / 1e3
        out["rank_steps"] = rank_steps
        out["calls_per_step"] = out["calls"] / rank_steps
        out["us_per_step"] = out["total_us"] / rank_steps
        out = out.sort_values("total_us", ascending=False).head(MAX_ROWS)
        return out[COLUMNS].reset_index(drop=True)


# The dtype pandas gives a column of text (str from pandas 3 on, object before): the tables' text columns.
_STR = pd.Series([""]).dtype
# (group keys, calls, ns) of one block of a rank's counts
Groups = tuple[np.ndarray, np.ndarray, np.ndarray]


@dataclass
class _Text:
    """A rank's kinds and names as their places in sorted order (ranks): grouping events by these integers
    sorts the groups as grouping by the text would. A missing one (code -1) sorts after every text."""

    kind: np.ndarray  # per event, the rank of its kind
    name: np.ndarray  # per event, the rank of its name
    kinds: np.ndarray  # the text of each kind rank (the last: missing)
    names: np.ndarray  # the text of each name rank, '' among them (the last: missing)
    empty: int  # the rank of '' among names: no parent

    @classmethod
    def of(cls, arr: Ev) -> _Text:
        kinds, kind_rank = _sorted_text(arr.kinds)
        names, name_rank = _sorted_text([*(str(n) for n in arr.names), ""])
        # code -1 (missing) takes the last entry of each rank table, which is past every text
        return cls(kind_rank[arr.kind], name_rank[arr.name], kinds, names, int(name_rank[len(arr.names)]))

    def groups(self, mask: np.ndarray, parent: np.ndarray, dur: np.ndarray) -> Groups:
        """Calls and total ns per (kind, name, parent rank) of the masked events, in key order."""
        width = len(self.names)
        parent, durs = parent[mask], dur[mask]
        if not parent.size:
            return _sorted_groups(parent, durs)
        # the parents present, numbered densely in their order: keys few enough to count, in the same order
        parents = iv.codes_present(parent)
        dense = np.zeros(width + 1, dtype=np.int64)
        dense[parents] = np.arange(parents.size)
        base = self.kind[mask] * width + self.name[mask]
        key = base * parents.size + dense[parent]
        space = int(key.max()) + 1
        if space > 8 * key.size + (1 << 16) or int(np.abs(durs).sum()) >= 1 << 53:
            return _sorted_groups(base * width + parent, durs)
        calls = np.bincount(key, minlength=space)
        found = np.flatnonzero(calls)
        # ns summed as floats: exact below 2**53 ns in all (104 days), checked above
        ns = np.bincount(key, weights=durs, minlength=space)[found].astype(np.int64)
        keys = (found // parents.size) * width + parents[found % parents.size]
        return keys, calls[found].astype(np.int64), ns

    def columns(self, blocks: list[Groups]) -> Columns:
        """The blocks' groups one after the other, as (kind, name, parent, calls, ns) columns (texts as
        object arrays, a missing one NaN)."""
        key, calls, ns = (np.concatenate(parts) for parts in zip(*blocks, strict=True))
        width = len(self.names)
        return {
            "kind": self.kinds[key // (width * width)],
            "name": self.names[key // width % width],
            "parent": self.names[key % width],
            "calls": calls,
            "ns": ns,
        }

    def table(self, blocks: list[Groups]) -> pd.DataFrame:
        """columns() as a frame, its texts as pandas' text type."""
        columns = self.columns(blocks)
        frame = {k: pd.Series(v, dtype=_STR) if v.dtype == object else v for k, v in columns.items()}
        return pd.DataFrame(frame)


def _sorted_groups(key: np.ndarray, dur: np.ndarray) -> Groups:
    """groups() by a sort of the keys, where they are too spread out to count."""
    order = np.argsort(key, kind="stable")
    key = key[order]
    first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if key.size else np.empty(0, dtype=np.int64)
    ns = np.add.reduceat(dur[order], first) if first.size else np.empty(0, dtype=np.int64)
    return key[first], np.diff(np.r_[first, key.size]).astype(np.int64), ns


def _sorted_text(labels: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct labels sorted, then NaN for a missing one; each label's index into that, then the
    missing one's)."""
    distinct, rank = np.unique(np.array(labels, dtype=object), return_inverse=True)
    return np.append(distinct, np.nan).astype(object), np.append(rank, distinct.size).astype(np.int64)


def _parents(arr: Ev, text: _Text, kernel: np.ndarray) -> np.ndarray:
    """Per kernel, the name rank of the CPU operator that launched it: the innermost operator around the
    first runtime call with its correlation id, on that call's thread ('' where none is found)."""
    empty = text.empty
    rt = arr.is_kind("runtime") & (arr.corr > 0)
    corr, first = iv.first_of_each(arr.corr[rt])
    launch = np.flatnonzero(rt)[first]
    launch_parent = np.full(launch.size, empty, dtype=np.int64)
    ops = np.flatnonzero(arr.is_kind("cpu_op"))
    # by thread, then start, longest first; equal ones keep the events' order
    ops = ops[iv.by_start(arr.ts[ops], arr.end[ops])]
    ops = ops[np.argsort(arr.thread[ops], kind="stable")]
    op_thread = arr.thread[ops]
    op_parent = np.where(arr.name[ops] >= 0, text.name[ops], empty)  # an operator without a name: ''
    launch_thread = arr.thread[launch]
    for thread in iv.distinct(launch_thread):
        lo, hi = np.searchsorted(op_thread, thread, side="left"), np.searchsorted(op_thread, thread, side="right")
        if lo == hi:
            continue
        on = ops[lo:hi]
        mine = launch_thread == thread
        idx = innermost(arr.ts[on], arr.end[on], arr.ts[launch[mine]])
        launch_parent[mine] = np.where(idx >= 0, op_parent[lo:hi][np.maximum(idx, 0)], empty)
    corr_k = arr.corr[kernel]
    if corr.size == 0:
        return np.full(corr_k.size, empty, dtype=np.int64)
    i = np.minimum(np.searchsorted(corr, corr_k), corr.size - 1)
    return np.where(corr[i] == corr_k, launch_parent[i], empty)


def host_budget(host: Host, rank: int, win: pd.DataFrame) -> pd.DataFrame:
    """The training thread's budget per step (see the module docstring), in the budget's long format."""
    columns = host_budget_columns(host, rank, win)
    return pd.DataFrame(columns) if columns is not None else pd.DataFrame()


def host_budget_columns(host: Host, rank: int, win: pd.DataFrame) -> Columns | None:
    """host_budget as columns (None: no profiled step), as the per-rank pass sends them."""
    win = win[win["step"] >= 0] if not win.empty else win
    if win.empty:
        return None
    claims = Claims()
    for bucket in HOST_SCOPES:
        claims.add(bucket, host.named[bucket].spans())
    main = host.main
    runtime = main.take(main.is_kind("runtime"))
    launch = runtime.named(LAUNCH_RE)  # a runtime call without a name is no launch
    claims.add("launch", runtime.spans(launch))
    claims.add("runtime", runtime.spans(~launch))
    claims.add("cpu_ops", main.spans(main.is_kind("cpu_op", "annotation")))
    return budget_columns(rank, "host", claims, win)


def innermost(op_start: np.ndarray, op_end: np.ndarray, points: np.ndarray) -> np.ndarray:
    """For each point, the index of the innermost op (ops sorted by start, longest first) that contains it
    (start <= point <= end), or -1: the last op starting at or before the point that has not ended
    before it (what a stack sweep over nested ops finds). Vectorized: a table of the ops' largest end
    over blocks of 2**p ops lets each point skip, from the last op started, the ops ended before it
    in log2(ops) steps."""
    out = np.full(points.size, -1, dtype=np.int64)
    if op_start.size == 0 or points.size == 0:
        return out
    pos = np.searchsorted(op_start, points, side="right")  # ops [0, pos) start at or before the point
    levels = [np.asarray(op_end)]  # levels[p][i]: the largest end of ops i .. i + 2**p - 1
    while 2 ** len(levels) <= op_start.size:
        half = 2 ** (len(levels) - 1)
        levels.append(np.maximum(levels[-1][:-half], levels[-1][half:]))
    for p in range(len(levels) - 1, -1, -1):
        start = pos - 2**p
        ended = (start >= 0) & (levels[p][np.maximum(start, 0)] < points)
        pos = np.where(ended, start, pos)
    last = np.maximum(pos - 1, 0)
    return np.where((pos > 0) & (op_end[last] >= points), pos - 1, out)
