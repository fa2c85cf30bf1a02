"""Pipeline parallelism, map stage: one rank's micro-batch actions and per-step bubble accounting.

Reads one rank's events, never more. Three sources of micro-batch actions, most specific first:
- `PP:{stage}{F|B|I|W}{mb}`: torch's runtime schedules (Interleaved1F1B, ZBV, ...) and the sample
  workload's own annotations; they carry the stage index.
- `Forward i` / `Backward i`: torch's ScheduleGPipe; no stage index (the reduce stage infers it).
- neither (plain Schedule1F1B): the training thread's work between point-to-point ops, a segment
  with autograd ops being a backward (see `infer_actions`).

Time of a step window W on the training thread (CPU/gloo traces) splits into
- compute: inside a non-communication operator, or inside a compute action while no transfer is in
  flight (the action's own Python; while a transfer is in flight the gap is taken as waiting);
- exposed non-pipeline communication: other collectives (a data-parallel all-reduce) outside compute;
- bubble: the rest (waiting on sends and receives, idle between actions).
On GPU traces compute is the compute kernels and communication the comm kernels, the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from scope.analyzers.pipeline.columns import (
    ACTION_COLUMNS,
    BACKWARD_OPS,
    COMPUTE_OPS,
    STEP_COLUMNS,
    WAIT_COLUMNS,
    RankSets,
)
from scope.analyzers.pipeline.phases import step_rows, wait_rows

from scope.ingest.classify import GPU_CATS
from scope.rankpass import intervals as iv
from scope.rankpass.tables.pipeline_candidates import GPIPE_ACTION as _GPIPE
from scope.rankpass.tables.pipeline_candidates import P2P_OPS as P2P_OPS
from scope.rankpass.tables.pipeline_candidates import looks_pipelined
from scope.rankpass.timeline import main_thread
from scope.store import Store

EVENT_COLUMNS = ["name", "cat", "kind", "ts_ns", "dur_ns", "thread", "coll_op", "step", "correlation"]
_RUNTIME = re.compile(r"^PP:(\d+)(F|B|I|W)(\d+)$")
_OVERLAP = re.compile(r"^PP:\((.*)\)OVERLAP_F_B$")
_SUB = re.compile(r"^(\d+)(F|B|I|W)(\d+)$")
_AUTOGRAD = "autograd::engine::evaluate_function"
__all__ = ["ACTION_COLUMNS", "BACKWARD_OPS", "COMPUTE_OPS", "STEP_COLUMNS", "WAIT_COLUMNS", "RankSets"]


@dataclass
class RankJob:
    store_root: str
    rank: int
    # The pass over every rank's events found it may run a pipeline (scope/rankpass/tables/pipeline_candidates.py):
    # no second look at its names.
    candidate: bool = False


@dataclass
class RankPipeline:
    """What one rank contributes: its actions, its per-step accounting, its waits per direction."""

    rank: int
    actions: pd.DataFrame  # ACTION_COLUMNS
    steps: pd.DataFrame  # STEP_COLUMNS
    waits: pd.DataFrame  # WAIT_COLUMNS
    has_p2p: bool
    timeline: str = "cpu"  # "cpu" | "gpu"
    compute: iv.Spans = iv.EMPTY
    busy: iv.Spans = iv.EMPTY  # compute and exposed non-pipeline communication


def _spans(df: pd.DataFrame) -> iv.Spans:
    ts = df["ts_ns"].to_numpy(dtype=np.int64)
    return iv.union(ts, ts + df["dur_ns"].to_numpy(dtype=np.int64))


def _ops(df: pd.DataFrame) -> pd.Series:
    return df["coll_op"].astype(object).fillna("")


def parse_actions(events: pd.DataFrame, thread: int | None) -> pd.DataFrame:
    """Compute actions recorded as annotations: PP:{stage}{op}{mb} first, else Forward/Backward i."""
    ann = events[(events["kind"] == "annotation") & ((events["thread"] == thread) | (thread is None))]
    names = ann["name"].astype(str)
    rows = []
    for idx, name in names[names.str.startswith("PP:")].items():
        if m := _RUNTIME.match(name):
            rows.append((idx, int(m[1]), m[2], int(m[3]), "runtime"))
        elif m := _OVERLAP.match(name):
            rows += [
                (idx, int(s[1]), s[2], int(s[3]), "runtime")
                for part in m[1].split(";")
                if (s := _SUB.match(part.strip()))
            ]
    if not rows:
        for idx, name in names[names.str.match(r"^(Forward|Backward) \d+$")].items():
            m = _GPIPE.match(name)
            assert m is not None  # the names were picked by the same pattern
            rows.append((idx, -1, "F" if m[1] == "Forward" else "B", int(m[2]), "gpipe"))
    if not rows:
        return pd.DataFrame(columns=ACTION_COLUMNS)
    idx, stage, op, mb, source = zip(*rows, strict=True)
    sel = ann.loc[list(idx)]
    start = sel["ts_ns"].to_numpy(dtype=np.int64)
    return pd.DataFrame(
        {
            "step": sel["step"].to_numpy(),
            "stage": stage,
            "op": op,
            "mb": mb,
            "start_ns": start,
            "end_ns": start + sel["dur_ns"].to_numpy(dtype=np.int64),
            "source": source,
        }
    )


def infer_actions(events: pd.DataFrame, thread: int | None, work: iv.Spans) -> pd.DataFrame:
    """No annotations: the work on the training thread between point-to-point ops, per step.

    Work is cut at every point-to-point op, step boundary and Optimizer.* annotation. A piece
    holding autograd engine ops is a backward, and the work before its first autograd op a forward
    when it is substantial (the last stage runs forward, loss and backward with no transfer
    between); any other piece is a forward. Micro-batch indices count forwards and backwards
    separately within the step.
    """
    main = events[events["thread"] == thread]
    p2p = main[(main["kind"] == "cpu_op") & _ops(main).isin(P2P_OPS)]
    if p2p.empty:
        return pd.DataFrame(columns=ACTION_COLUMNS)
    names = main["name"].astype(str)
    optim = main[(main["kind"] == "annotation") & names.str.startswith("Optimizer.")]
    steps = main[main["kind"] == "step"].sort_values("ts_ns")
    cuts = np.sort(np.concatenate([_edges(frame) for frame in (p2p, optim, steps)]))
    segs = iv.subtract(work, _spans(optim))
    autograd = np.sort(main.loc[names.str.startswith(_AUTOGRAD), "ts_ns"].to_numpy(dtype=np.int64))
    seg_id = np.searchsorted(cuts, segs[0], side="right")
    rows = []
    for sid in np.unique(seg_id):
        s, e = segs[0][seg_id == sid], segs[1][seg_id == sid]
        rows += _split_segment(s, e, autograd)
    df = pd.DataFrame(rows, columns=["start_ns", "end_ns", "busy", "op"])
    df["step"] = _step_of(df["start_ns"].to_numpy(), steps)
    df = df[df["step"] >= 0]
    # Tiny pieces (bookkeeping between two p2p ops) are not micro-batch work.
    floor = 0.2 * df.groupby("op")["busy"].transform("median")
    df = df[df["busy"] >= floor].sort_values("start_ns").copy()
    df["mb"] = df.groupby(["step", "op"]).cumcount()
    df["stage"], df["source"] = -1, "inferred"
    return df.drop(columns=["busy"])


def _edges(frame: pd.DataFrame) -> np.ndarray:
    ts = frame["ts_ns"].to_numpy(dtype=np.int64)
    return np.concatenate([ts, ts + frame["dur_ns"].to_numpy(dtype=np.int64)])


def _split_segment(s: np.ndarray, e: np.ndarray, autograd: np.ndarray) -> list[tuple[int, int, int, str]]:
    lo, hi = int(s.min()), int(e.max())
    busy = int((e - s).sum())
    i = int(np.searchsorted(autograd, lo, side="left"))
    if i >= autograd.size or autograd[i] >= hi:
        return [(lo, hi, busy, "F")]
    first = int(autograd[i])
    before = int((np.minimum(e, first) - s).clip(min=0).sum())
    if before < 0.1 * busy:
        return [(lo, hi, busy, "B")]
    return [(lo, first, before, "F"), (first, hi, busy - before, "B")]


def _step_of(ts: np.ndarray, steps: pd.DataFrame) -> np.ndarray:
    if steps.empty:
        return np.full(ts.size, -1)
    lo = steps["ts_ns"].to_numpy(dtype=np.int64)
    hi = lo + steps["dur_ns"].to_numpy(dtype=np.int64)
    nums = steps["name"].astype(str).str.extract(r"#(\d+)")[0].astype(int).to_numpy()
    i = np.searchsorted(lo, ts, side="right") - 1
    inside = (i >= 0) & (ts < hi[np.maximum(i, 0)])
    return np.where(inside, nums[np.maximum(i, 0)], -1)


def cpu_rank_sets(events: pd.DataFrame, thread: int | None, actions: pd.DataFrame) -> tuple[RankSets, iv.Spans]:
    """Interval sets of a CPU (gloo) rank; also returns the work-op spans (for inferred actions)."""
    main = events[events["thread"] == thread]
    cpu = main[main["kind"] == "cpu_op"]
    is_comm = (_ops(cpu) != "").to_numpy()
    work, comm_ops = _spans(cpu[~is_comm]), _spans(cpu[is_comm])
    transfers = events[(events["kind"] == "comm") & ~events["cat"].isin(GPU_CATS)]
    inflight = iv.join(_spans(transfers), comm_ops)
    action_spans = iv.union(actions["start_ns"].to_numpy(dtype=np.int64), actions["end_ns"].to_numpy(dtype=np.int64))
    waiting = iv.subtract(inflight, work)
    compute = iv.subtract(iv.join(work, action_spans), iv.join(comm_ops, waiting))
    other = pd.concat([cpu[is_comm & ~_ops(cpu).isin(P2P_OPS).to_numpy()], transfers[~_ops(transfers).isin(P2P_OPS)]])
    p2p = pd.concat([transfers[_ops(transfers).isin(P2P_OPS)], cpu[_ops(cpu).isin(P2P_OPS).to_numpy()]])
    return _finish_sets(compute, _spans(other), p2p), work


def gpu_rank_sets(events: pd.DataFrame) -> RankSets:
    gpu = events[events["cat"].isin(GPU_CATS)]
    compute = _spans(gpu[gpu["kind"] == "compute"])
    comm = gpu[gpu["kind"] == "comm"]
    ops = _ops(comm)
    p2p = comm[ops.isin(P2P_OPS) | (ops == "send_recv")]
    return _finish_sets(compute, _spans(comm[~ops.isin((*P2P_OPS, "send_recv"))]), p2p)


def _finish_sets(compute: iv.Spans, other: iv.Spans, p2p: pd.DataFrame) -> RankSets:
    p2p = p2p.sort_values("ts_ns")
    start = p2p["ts_ns"].to_numpy(dtype=np.int64)
    return RankSets(
        compute,
        iv.subtract(other, compute),
        start,
        start + p2p["dur_ns"].to_numpy(dtype=np.int64),
        np.where(_ops(p2p).to_numpy() == "send", "send", "recv"),
        (p2p["kind"] == "comm").to_numpy(),
    )


def action_compute(actions: pd.DataFrame, compute: iv.Spans, waits: iv.Spans) -> pd.DataFrame:
    """Compute inside each action, and the first and last instants of its main compute: what runs
    after the last wait for a transfer inside the action (torch's `Forward i` spans its receive)."""
    out = actions.copy()
    lo = actions["start_ns"].to_numpy(dtype=np.int64)
    hi = actions["end_ns"].to_numpy(dtype=np.int64)
    out["compute_us"] = iv.lengths_in_windows(compute, lo, hi) / 1e3
    cstart, cend = lo.copy(), hi.copy()
    for i in range(lo.size):
        cs, ce = iv.clip(compute, int(lo[i]), int(hi[i]))
        if cs.size == 0:
            continue
        _, we = iv.clip(waits, int(lo[i]), int(hi[i]))
        before = we[we <= ce[-1]]
        first = int(np.searchsorted(cs, before[-1], side="left")) if before.size else 0
        cstart[i] = cs[min(first, cs.size - 1)]
        cend[i] = ce[-1]
    out["cstart_ns"], out["cend_ns"] = cstart, cend
    return out


def gpu_actions(events: pd.DataFrame, thread: int | None, actions: pd.DataFrame) -> pd.DataFrame:
    """Move CPU-side action annotations to the GPU: each action spans the kernels launched inside it
    (runtime launches on the training thread, linked to kernels by correlation id)."""
    if actions.empty:
        return actions
    launches = events[(events["kind"] == "runtime") & (events["thread"] == thread) & (events["correlation"] >= 0)]
    kernels = events[events["cat"].isin(GPU_CATS) & (events["correlation"] >= 0)]
    k_start = kernels.groupby("correlation")["ts_ns"].min()
    k_end = (kernels["ts_ns"] + kernels["dur_ns"]).groupby(kernels["correlation"]).max()
    ts = launches["ts_ns"].to_numpy(dtype=np.int64)
    order = np.argsort(ts, kind="stable")
    ts, corr = ts[order], launches["correlation"].to_numpy()[order]
    lo, hi = [], []
    for a, b in zip(actions["start_ns"].to_numpy(), actions["end_ns"].to_numpy(), strict=True):
        ids = pd.Index(corr[np.searchsorted(ts, a) : np.searchsorted(ts, b)]).intersection(k_start.index)
        lo.append(int(k_start.loc[ids].min()) if len(ids) else -1)
        hi.append(int(k_end.loc[ids].max()) if len(ids) else -1)
    out = actions.assign(start_ns=lo, end_ns=hi)
    return out[out["start_ns"] >= 0].reset_index(drop=True)


def read_windows(store: Store, rank: int) -> pd.DataFrame:
    path = store.part_path("steps", rank)
    steps = pq.read_table(path).to_pandas() if path.exists() else pd.DataFrame()
    return (
        steps[["step", "start_ns", "end_ns"]]
        if not steps.empty
        else pd.DataFrame(columns=["step", "start_ns", "end_ns"])
    )


def may_pipeline(store: Store, rank: int) -> bool:
    """Cheap look at the rank's distinct names and ops: any micro-batch action or point-to-point op?"""
    table = store.read_events(rank, columns=["name", "coll_op"])
    return looks_pipelined(distinct(table.column("name")), distinct(table.column("coll_op")))


def distinct(column: pa.ChunkedArray) -> list[str]:
    """Distinct non-empty strings of a (dictionary-encoded) column, without decoding every row."""
    values: set[str] = set()
    for chunk in column.chunks:
        pool = chunk.dictionary if pa.types.is_dictionary(chunk.type) else chunk.unique()
        values.update(v for v in pool.to_pylist() if v)
    return sorted(values)


def rank_pipeline(job: RankJob) -> RankPipeline:
    """The map stage for one rank."""
    store = Store(job.store_root, {})
    if not job.candidate and not may_pipeline(store, job.rank):
        return RankPipeline(
            job.rank,
            pd.DataFrame(columns=ACTION_COLUMNS),
            pd.DataFrame(columns=STEP_COLUMNS),
            pd.DataFrame(columns=WAIT_COLUMNS),
            False,
        )
    events = store.read_events(job.rank, columns=EVENT_COLUMNS).to_pandas()
    on_gpu = bool((events["cat"].isin(GPU_CATS) & (events["kind"] == "compute")).any())
    thread = main_thread(events)
    actions = parse_actions(events, thread)
    if on_gpu:
        sets = gpu_rank_sets(events)
        actions = gpu_actions(events, thread, actions)
    else:
        sets, work = cpu_rank_sets(events, thread, actions)
        if actions.empty:
            actions = infer_actions(events, thread, work)
    has_p2p = sets.p2p_starts.size > 0
    empty = RankPipeline(
        job.rank,
        pd.DataFrame(columns=ACTION_COLUMNS),
        pd.DataFrame(columns=STEP_COLUMNS),
        pd.DataFrame(columns=WAIT_COLUMNS),
        has_p2p,
    )
    if actions.empty:
        return empty
    recv = sets.p2p_kind == "recv"  # what gates an action's compute: its input arriving
    waits = iv.subtract(iv.union(sets.p2p_starts[recv], sets.p2p_ends[recv]), iv.join(sets.compute, sets.other_comm))
    actions = action_compute(actions.assign(rank=job.rank), sets.compute, waits)[ACTION_COLUMNS]
    actions = actions.sort_values(["start_ns", "op"]).reset_index(drop=True)
    windows = read_windows(store, job.rank)
    if windows.empty:  # no ProfilerStep: the traced span of the actions is one window (step -1)
        actions["step"] = -1
        windows = pd.DataFrame(
            {"step": [-1], "start_ns": [int(actions["start_ns"].min())], "end_ns": [int(actions["end_ns"].max())]}
        )
    timeline = "gpu" if on_gpu else "cpu"
    busy = iv.join(sets.compute, sets.other_comm)
    return RankPipeline(
        job.rank,
        actions,
        step_rows(job.rank, windows, actions, sets),
        wait_rows(job.rank, windows, actions, sets),
        has_p2p,
        timeline,
        sets.compute,
        busy,
    )
