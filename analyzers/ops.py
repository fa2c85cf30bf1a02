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

The name-level counts come from one DuckDB aggregate over the ranks' event partitions (streamed, so
no process holds every event of every rank); only ranks with GPU kernels are then read one at a time
to attribute their kernels to parents and to build their host budget.
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
    """(op_stats, host_budget). GPU ranks are read one per task (worker processes when there are many)."""
    from scope.engine import map_unordered

    steps = _steps_per_rank(store)
    if steps.empty:
        return pd.DataFrame(columns=COLUMNS), pd.DataFrame()
    per_rank = _name_counts(store, list(steps.index), workers)
    gpu_ranks = sorted(per_rank.loc[per_rank["kind"].isin(GPU_KINDS), "rank"].unique())
    host = []
    if gpu_ranks:
        jobs = [(str(store.root), int(r)) for r in gpu_ranks]
        parallel = len(jobs) >= PARALLEL_MIN_RANKS
        done = map_unordered(gpu_rank_job, jobs, engine=engine, workers=workers if parallel else 1, scheduler=scheduler)
        parented = []
        for kernels, budget in done:
            parented.append(kernels)
            host.append(budget)
        is_kernel_row = per_rank["kind"].isin(KERNEL_KINDS) & per_rank["rank"].isin(gpu_ranks)
        per_rank = pd.concat([per_rank[~is_kernel_row], *parented], ignore_index=True)
    host_budget = pd.concat(host, ignore_index=True).sort_values(["rank", "step"]) if host else pd.DataFrame()
    return _reduce(per_rank, steps), host_budget.reset_index(drop=True)


def gpu_rank_job(job: tuple[str, int]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A worker's task (picklable in and out): one GPU rank of the store at job[0]."""
    root, rank = job
    return _gpu_rank(Store(Path(root), {}), rank)


def _steps_per_rank(store: Store) -> pd.Series:
    steps = store.steps()
    if steps.empty:
        return pd.Series(dtype="int64")
    return steps.groupby("rank")["step"].nunique()


def _name_counts(store: Store, ranks: list[int], threads: int | None) -> pd.DataFrame:
    """Per rank, kind and name: calls and total ns inside profiled steps (one streamed DuckDB pass)."""
    import duckdb

    paths = [str(store.part_path("events", r)) for r in ranks if store.part_path("events", r).is_file()]
    if not paths:
        return pd.DataFrame(columns=["rank", "kind", "name", "parent", "calls", "ns"])
    con = duckdb.connect()
    if threads:
        con.execute(f"SET threads TO {int(threads)}")
    kinds = ", ".join(f"'{k}'" for k in OP_KINDS)
    df: pd.DataFrame = con.execute(
        f"""SELECT rank, CAST(kind AS VARCHAR) AS kind, CAST(name AS VARCHAR) AS name, '' AS parent,
                   count(*) AS calls, sum(dur_ns) AS ns
            FROM read_parquet(?) WHERE step >= 0 AND CAST(kind AS VARCHAR) IN ({kinds})
            GROUP BY ALL""",
        [paths],
    ).df()
    con.close()
    return df


def _gpu_rank(store: Store, rank: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One GPU rank, read once: its kernels by launching operator, and its host budget."""
    cols = ["kind", "name", "cat", "ts_ns", "dur_ns", "thread", "correlation", "step"]
    ev = store.read_events(rank, columns=cols).to_pandas()
    ev["kind"] = ev["kind"].astype(str)
    return _kernel_parents(ev, rank), host_budget(ev, rank, store.read_steps(rank))


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


def _reduce(per_rank: pd.DataFrame, steps: pd.Series) -> pd.DataFrame:
    """Across ranks: totals, per rank-step averages and the largest rank's time per step."""
    if per_rank.empty:
        return pd.DataFrame(columns=COLUMNS)
    per_rank = per_rank[per_rank["rank"].isin(steps.index)].copy()
    per_rank["rank_us_per_step"] = per_rank["ns"] / 1e3 / per_rank["rank"].map(steps).to_numpy()
    keys = ["kind", "name", "parent"]
    out = per_rank.groupby(keys, observed=True).agg(
        ranks=("rank", "nunique"),
        calls=("calls", "sum"),
        total_us=("ns", "sum"),
        max_rank_us_per_step=("rank_us_per_step", "max"),
    )
    out = out.reset_index()
    out["total_us"] = out["total_us"] / 1e3
    rank_steps = int(steps.sum())
    out["rank_steps"] = rank_steps
    out["calls_per_step"] = out["calls"] / rank_steps
    out["us_per_step"] = out["total_us"] / rank_steps
    out = out.sort_values("total_us", ascending=False).head(MAX_ROWS)
    return out[COLUMNS].reset_index(drop=True)


def read_op_stats(store_dir: Path) -> pd.DataFrame | None:
    """The table as a store holds it (None when the run was analyzed before this analyzer existed)."""
    path = Store(store_dir, {}).table_path(TABLE)
    return pd.read_parquet(path) if path.is_file() else None
