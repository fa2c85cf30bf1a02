"""Operations and kernels of a run: how often each ran and how long, per profiled step of a rank.

Table `op_stats`: one row per (kind, name, parent) over every traced rank's profiled steps, with the
time per step averaged over all rank-steps (an op that runs on half the ranks counts half) and the
largest rank's figure beside it. `parent` is the CPU operator that launched a GPU kernel (the
innermost operator on the launching thread around its `cudaLaunchKernel`, found through the
kernel's correlation id): a kernel renamed by a new library version still has the same parent, which
is how `scope compare` matches it (TraceLens matches ops by call-tree position for the same reason).
CPU operators nest, so their time is inclusive (aten::conv2d holds aten::convolution).

Table `host_budget` (GPU ranks only): the step budget seen from the training thread, in the budget
table's long format (analyzers/budget.py) with timeline "host". The budget of a GPU rank says what the
GPU did; this says what the host thread did meanwhile: in order of precedence, the scopes of
analyzers/_budget.py (input pipeline, checkpoint, sync, optimizer, gc), then CUDA runtime calls
(`launch`: kernel launches; `runtime`: copies, allocations and the rest), then CPU operators' own time
(`cpu_ops`), and `unexplained`, time in no traced event (Python between ops). It is how `scope compare`
says where the time a faster data loader freed went on the host. CPU ranks need none: their budget
is the training thread's already.

Each rank is read once, by one task: its name-level counts, its kernels attributed to parents and
(a GPU rank) its host budget. The counts are folded into per-name totals as ranks finish, so no
process holds every event of every rank, nor a row per rank and name.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from scope.analysis import Context, Result
from scope.store import Store

TABLE = "op_stats"
HOST_TABLE = "host_budget"
HOST_SCOPES = ("input", "checkpoint", "sync", "optimizer", "gc")
LAUNCH_RE = re.compile(r"Launch|^cuLaunch|^hipLaunch|^hipExtLaunch", re.IGNORECASE)
# Store kinds (scope/ingest/tables_spec.py) worth comparing; python frames, steps and others are not ops.
OP_KINDS = ("cpu_op", "annotation", "runtime", "compute", "comm", "memcpy", "memset")
KERNEL_KINDS = ("compute", "comm", "memcpy", "memset")
GPU_KINDS = ("compute", "memcpy", "memset")  # a rank with these has a GPU timeline (gloo's comm is on CPU)
# From this many GPU ranks on, their reading runs in worker processes (below, starting them costs more).
PARALLEL_MIN_RANKS = 8
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


def analyze(ctx: Context) -> Result:
    if ctx.store is None or not ctx.store.ranks:
        return Result()
    table, host = op_tables(ctx.store, ctx.option("workers"), ctx.option("engine", "local"), ctx.option("scheduler"))
    tables = {name: df for name, df in ((TABLE, table), (HOST_TABLE, host)) if not df.empty}
    return Result(tables=tables)


def op_stats(store: Store, workers: int | None = None) -> pd.DataFrame:
    return op_tables(store, workers)[0]


def op_tables(
    store: Store, workers: int | None = None, engine: str = "local", scheduler: str | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(op_stats, host_budget). Each rank is read once, by one task (worker processes when there are
    many), and its counts are folded into the totals as it arrives: this process holds one row per
    (kind, name, parent), never one per rank and name (at 16,384 ranks, 3 million rows)."""
    from scope.engine import map_unordered

    steps = _steps_per_rank(store)
    if steps.empty:
        return pd.DataFrame(columns=COLUMNS), pd.DataFrame()
    jobs = [(str(store.root), int(r)) for r in steps.index]
    parallel = len(jobs) >= PARALLEL_MIN_RANKS
    done = map_unordered(rank_job, jobs, engine=engine, workers=workers if parallel else 1, scheduler=scheduler)
    totals, host = _Totals(), _Frames()
    for rank, counts, budget in done:
        totals.add(counts, int(steps[rank]))
        host.add(budget)
    host_budget = host.joined()
    host_budget = host_budget.sort_values(["rank", "step"]) if not host_budget.empty else host_budget
    return totals.table(steps), host_budget.reset_index(drop=True)


def rank_job(job: tuple[str, int]) -> tuple[int, pd.DataFrame, pd.DataFrame]:
    """A worker's task (picklable in and out): one rank of the store at job[0], read once: its calls and
    time per (kind, name, parent) inside profiled steps, and (a GPU rank) its host budget."""
    root, rank = job
    store = Store(Path(root), {})
    cols = ["kind", "name", "cat", "ts_ns", "dur_ns", "thread", "correlation", "step"]
    ev = store.read_events(rank, columns=cols).to_pandas()
    ev["kind"] = ev["kind"].astype(str)
    in_steps = ev[(ev["step"] >= 0) & ev["kind"].isin(OP_KINDS)]
    if not in_steps["kind"].isin(GPU_KINDS).any():
        return rank, _name_counts(in_steps), pd.DataFrame()
    # A GPU rank's kernels are counted by the CPU operator that launched them.
    named = _name_counts(in_steps[~in_steps["kind"].isin(KERNEL_KINDS)])
    counts = pd.concat([named, _kernel_parents(ev, rank).drop(columns="rank")], ignore_index=True)
    return rank, counts, host_budget(ev, rank, store.read_steps(rank))


def _steps_per_rank(store: Store) -> pd.Series:
    steps = store.steps()
    if steps.empty:
        return pd.Series(dtype="int64")
    return steps.groupby("rank")["step"].nunique()


def _name_counts(events: pd.DataFrame) -> pd.DataFrame:
    """Calls and total ns per (kind, name) of one rank's events, parent '' (no launching operator)."""
    names = events.assign(name=events["name"].astype(str))
    out = names.groupby(["kind", "name"], dropna=False, observed=True).agg(
        calls=("dur_ns", "size"), ns=("dur_ns", "sum")
    )
    out = out.reset_index()
    out.insert(2, "parent", "")
    return out


class _Frames:
    """Small per-rank frames joined in batches as they arrive (a DataFrame per rank costs more than
    its rows: 16,384 of them held apart weigh ~100 MB)."""

    BATCH = 256

    def __init__(self) -> None:
        self.joined_parts: list[pd.DataFrame] = []
        self.pending: list[pd.DataFrame] = []

    def add(self, frame: pd.DataFrame) -> None:
        if frame.empty:
            return
        self.pending.append(frame)
        if len(self.pending) >= self.BATCH:
            self.joined_parts.append(pd.concat(self.pending, ignore_index=True))
            self.pending = []

    def joined(self) -> pd.DataFrame:
        parts = self.joined_parts + self.pending
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


_KEYS = ["kind", "name", "parent"]


class _Totals:
    """Per (kind, name, parent) over the ranks folded in so far: ranks, calls, total ns and the largest
    rank's time per step. Ranks' rows wait in a small batch, then fold into the totals."""

    FOLD_ROWS = 100_000

    def __init__(self) -> None:
        self.total: pd.DataFrame | None = None
        self.pending: list[pd.DataFrame] = []
        self.rows = 0

    def add(self, counts: pd.DataFrame, rank_steps: int) -> None:
        if counts.empty:
            return
        rank_us_per_step = counts["ns"] / 1e3 / rank_steps
        self.pending.append(counts.assign(ranks=1, max_rank_us_per_step=rank_us_per_step))
        self.rows += len(counts)
        if self.rows >= self.FOLD_ROWS:
            self._fold(sort=False)

    def _fold(self, sort: bool) -> None:
        parts = ([self.total] if self.total is not None else []) + self.pending
        joined = pd.concat(parts, ignore_index=True)
        out = joined.groupby(_KEYS, observed=True, sort=sort).agg(
            ranks=("ranks", "sum"),
            calls=("calls", "sum"),
            ns=("ns", "sum"),
            max_rank_us_per_step=("max_rank_us_per_step", "max"),
        )
        self.total, self.pending, self.rows = out.reset_index(), [], 0

    def table(self, steps: pd.Series) -> pd.DataFrame:
        """Across ranks: totals, per rank-step averages and the largest rank's time per step."""
        if self.pending:
            self._fold(sort=True)
        elif self.total is not None:
            self.total = self.total.sort_values(_KEYS, kind="stable").reset_index(drop=True)
        if self.total is None or self.total.empty:
            return pd.DataFrame(columns=COLUMNS)
        out = self.total.rename(columns={"ns": "total_us"})
        out["total_us"] = out["total_us"].astype(float) / 1e3
        rank_steps = int(steps.sum())
        out["rank_steps"] = rank_steps
        out["calls_per_step"] = out["calls"] / rank_steps
        out["us_per_step"] = out["total_us"] / rank_steps
        out = out.sort_values("total_us", ascending=False).head(MAX_ROWS)
        return out[COLUMNS].reset_index(drop=True)


def host_budget(events: pd.DataFrame, rank: int, win: pd.DataFrame) -> pd.DataFrame:
    """The training thread's budget per step (see the module docstring), in the budget's long format."""
    from scope.analyzers._budget import Claims, _named, _spans, budget_rows, main_events

    win = win[win["step"] >= 0] if not win.empty else win
    if win.empty:
        return pd.DataFrame()
    main = main_events(events)
    claims = Claims()
    for bucket in HOST_SCOPES:
        claims.add(bucket, _spans(_named(main, bucket)))
    runtime = main[main["kind"] == "runtime"]
    launch = runtime["name"].astype(str).map(lambda n: bool(LAUNCH_RE.search(n))).to_numpy(dtype=bool)
    claims.add("launch", _spans(runtime[launch]))
    claims.add("runtime", _spans(runtime[~launch]))
    claims.add("cpu_ops", _spans(main[main["kind"].isin(("cpu_op", "annotation"))]))
    return budget_rows(rank, "host", claims, win)


def _kernel_parents(ev: pd.DataFrame, rank: int) -> pd.DataFrame:
    """One rank's GPU kernels by (kind, name, launching CPU operator): calls and total ns."""
    kernels = ev[ev["kind"].isin(KERNEL_KINDS) & (ev["step"] >= 0)]
    launches = ev[(ev["kind"] == "runtime") & (ev["correlation"] > 0)]
    launches = launches.drop_duplicates("correlation").set_index("correlation")
    parent = pd.Series("", index=launches.index, dtype=object)
    ops = ev[ev["kind"] == "cpu_op"]
    for thread, lt in launches.groupby("thread"):
        to = ops[ops["thread"] == thread]
        if to.empty:
            continue
        order = np.lexsort((-to["dur_ns"].to_numpy(), to["ts_ns"].to_numpy()))
        to = to.iloc[order]
        lt = lt.sort_values("ts_ns")
        idx = innermost(to["ts_ns"].to_numpy(), (to["ts_ns"] + to["dur_ns"]).to_numpy(), lt["ts_ns"].to_numpy())
        names = to["name"].astype(str).to_numpy()
        parent.loc[lt.index] = np.where(idx >= 0, names[np.maximum(idx, 0)], "")
    kernels = kernels.assign(
        parent=kernels["correlation"].map(parent).astype(object).fillna("").astype(str),
        name=kernels["name"].astype(str),
    )
    out = kernels.groupby(["kind", "name", "parent"], observed=True).agg(calls=("dur_ns", "size"), ns=("dur_ns", "sum"))
    return out.reset_index().assign(rank=rank)


def innermost(op_start: np.ndarray, op_end: np.ndarray, points: np.ndarray) -> np.ndarray:
    """For each point (sorted), the index of the innermost op (sorted by start, longest first) that
    contains it, or -1. Ops on one thread nest, so a stack sweep finds it in one pass."""
    out = np.full(len(points), -1, dtype=np.int64)
    stack: list[int] = []
    i, n = 0, len(op_start)
    for j, t in enumerate(points.tolist()):
        while i < n and op_start[i] <= t:
            while stack and op_end[stack[-1]] < op_start[i]:
                stack.pop()
            stack.append(i)
            i += 1
        while stack and op_end[stack[-1]] < t:
            stack.pop()
        if stack:
            out[j] = stack[-1]
    return out


def read_op_stats(store_dir: Path) -> pd.DataFrame | None:
    """The table as a store holds it (None when the run was analyzed before this analyzer existed)."""
    path = Store(store_dir, {}).table_path(TABLE)
    return pd.read_parquet(path) if path.is_file() else None
