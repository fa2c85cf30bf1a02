"""Step time budget of one rank (the map stage of analyzers/budget.py): every nanosecond of every
step window goes to exactly one bucket, by the fixed precedence below, so the buckets of a step add
up to the step time by construction (the last bucket, `unexplained`, is what no earlier one claimed).

GPU ranks (kernels in the trace) are read from the GPU's side: what it did, and when it idled, what
the training thread was doing at that time (why it idled). In order of precedence:

    comm_overlapped  a communication kernel runs under a compute kernel (not a loss)
    optimizer        compute kernels launched inside Optimizer.step / zero_grad
    compute          the other compute kernels
    comm_wait        exposed communication (no compute under it) while this rank waits for a later
                     peer (`peer` names it: the cross-rank matching's last arriver)
    comm_unknown     exposed communication in a collective whose group is only partly traced: the
                     wait / transfer split inside the kernel cannot be known from this side
    comm_transfer    the rest of exposed communication
    input            copies launched by the input pipeline (from a DataLoader __next__ to the first
                     compute kernel after it: the batch's host-to-device copies), then GPU idle time
                     in that same window (the wait for the data and for the first kernel after it)
    checkpoint       copies launched in a checkpoint save/load (device-to-host staging), then GPU idle
                     time in a checkpoint span up to the first GPU work after it
    memcpy           other copies and memsets (not under compute or communication)
    sync             GPU idle from a synchronizing call (cudaStreamSynchronize, cudaDeviceSynchronize,
                     cudaEventSynchronize, blocking cudaMemcpy, aten::_local_scalar_dense / .item())
                     to the first GPU work after it: the queue drained, the GPU waits for the host
    optimizer        GPU idle inside Optimizer.step / zero_grad (a host-bound optimizer)
    gc               GPU idle during a traced garbage collection
    comm_transfer    GPU idle while the training thread is in a CPU-side collective (gloo)
    host_bound       GPU idle while the training thread is busy in operators or runtime calls
                     (launch overhead, many short kernels, CPU work between launches)
    unexplained      GPU idle while the training thread is in no recorded event

CPU ranks (gloo: no kernels) are read from the training thread's side, in order: input (DataLoader
__next__), checkpoint, exposed communication (comm_wait / comm_unknown / comm_transfer, as in
analyzers/_timeline.py's cpu_sets), sync (.item() and other synchronizing ops), optimizer, gc,
compute (the thread in operators, and the Python inside a user's annotations), comm_overlapped
(a collective in flight on gloo's threads while the thread computes, reported inside compute: the
CPU is the device, so overlap is not split out there) and unexplained (the thread in no recorded
event: uninstrumented Python).

Communication buckets carry a `family`: nccl (NCCL/RCCL/MSCCL), a catalog family of
scope.ingest.comm_kernels (torch_symm_mem, custom_all_reduce, deep_ep, nvshmem, ...), `user` (a
--comm-kernel rule) or gloo. The span patterns (what counts as DataLoader, checkpoint, sync, ...)
are data: SCOPES below.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import pandas as pd
from scope.analyzers import _intervals as iv
from scope.analyzers._timeline import RankJob, cpu_sets, main_thread

from scope.ingest.classify import GPU_CATS, is_nccl_family
from scope.ingest.comm_kernels import catalog_match

BUDGET_COLUMNS = ["rank", "step", "timeline", "bucket", "family", "peer", "us", "step_us", "share"]
# Every bucket, in the order the tables and bars show them.
BUCKETS = (
    "compute",
    "comm_overlapped",
    "optimizer",
    "comm_wait",
    "comm_unknown",
    "comm_transfer",
    "input",
    "checkpoint",
    "memcpy",
    "sync",
    "gc",
    "host_bound",
    "unexplained",
)
COMM_BUCKETS = ("comm_overlapped", "comm_wait", "comm_unknown", "comm_transfer")
BUDGET_EVENT_COLUMNS = ["name", "cat", "kind", "ts_ns", "dur_ns", "thread", "coll_op", "correlation"]


class Scope(NamedTuple):
    """Events on the training thread whose span means a cause, found by name."""

    bucket: str
    pattern: str  # re.search in the event name
    source: str  # where the name comes from


SCOPES: tuple[Scope, ...] = (
    Scope(
        "input",
        r"DataLoader\w*\)?#\w*\.__next__|DataLoader.*__next__",
        "torch/utils/data/dataloader.py: _BaseDataLoaderIter.__next__ runs in "
        "record_function('enumerate(DataLoader)#{cls}.__next__')",
    ),
    Scope(
        "checkpoint",
        r"^torch\.save\b|^torch\.load\b|distributed\.checkpoint|^dcp[.:]|\bcheckpoint\w*[.:](save|load)|"
        r"\b(async_)?save_state_dict\b|\bload_state_dict\b|\bsave_checkpoint\b|\bload_checkpoint\b",
        "torch.distributed.checkpoint (save/async_save/load record_function names); user record_function "
        "around torch.save; Megatron/DeepSpeed save_checkpoint",
    ),
    Scope(
        "sync",
        r"^(cuda|hip)(Stream|Device|Event)Synchronize$|^(cuda|hip)Memcpy$|^aten::_local_scalar_dense$|^aten::item$",
        "CUDA runtime: synchronizing calls; aten::item -> aten::_local_scalar_dense copies a scalar to the host",
    ),
    Scope(
        "optimizer",
        r"^Optimizer\.(step|zero_grad)#|^optimizer[._]step\b",
        "torch/optim/optimizer.py: profile_hook_step records 'Optimizer.step#{cls}.step'",
    ),
    Scope("gc", r"^gc[._ ]collect|\bgarbage.collect|^Python GC\b|^gc$", "Python gc callbacks / user annotations"),
)
_SCOPE_RE = {s.bucket: re.compile(s.pattern) for s in SCOPES}


@dataclass
class Claims:
    """Ordered (bucket, family, peer, spans); each claims what no earlier one did."""

    items: list[tuple[str, str, int, iv.Spans]] = field(default_factory=list)

    def add(self, bucket: str, spans: iv.Spans, family: str = "", peer: int = -1) -> None:
        if spans[0].size:
            self.items.append((bucket, family, peer, spans))


def main_events(events: pd.DataFrame) -> pd.DataFrame:
    """The training thread's host events: the thread recording ProfilerStep (even when the trace's
    thread ids could not be read, -1), else the busiest operator thread."""
    host = events[~events["cat"].isin(GPU_CATS)]
    marks = host[host["kind"] == "step"]
    thread = int(marks["thread"].mode().iloc[0]) if not marks.empty else main_thread(events)
    return host[host["thread"] == thread] if thread is not None else host.iloc[:0]


def comm_family(name: str) -> str:
    if name.startswith("gloo:"):
        return "gloo"
    if is_nccl_family(name):
        return "nccl"
    row = catalog_match(name)
    return row.family if row is not None else "user"


def _spans(df: pd.DataFrame) -> iv.Spans:
    ts = df["ts_ns"].to_numpy(dtype=np.int64)
    return iv.union(ts, ts + df["dur_ns"].to_numpy(dtype=np.int64))


def _named(events: pd.DataFrame, bucket: str) -> pd.DataFrame:
    names = events["name"].astype(str)
    return events[names.map(_SCOPE_RE[bucket].search).notna().to_numpy()]


@dataclass
class Launches:
    """GPU work ordered by its launch on the host: launch time and the GPU start of each."""

    launch: np.ndarray
    start: np.ndarray

    @classmethod
    def of(cls, launch: np.ndarray, start: np.ndarray) -> Launches:
        order = np.argsort(launch, kind="stable")
        return cls(launch[order], start[order])

    def extend(self, spans: iv.Spans) -> iv.Spans:
        """Each span stretched from its start to the GPU start of the first work launched after it
        ends (the GPU waits for the host to issue it); a span with none after it stays as it is."""
        if spans[0].size == 0 or self.launch.size == 0:
            return spans
        i = np.searchsorted(self.launch, spans[1], side="left")
        nxt = np.where(i < self.launch.size, self.start[np.minimum(i, self.launch.size - 1)], spans[1])
        return iv.union(spans[0], np.maximum(nxt, spans[1]))


def _launch_ts(gpu: pd.DataFrame, events: pd.DataFrame) -> np.ndarray:
    """Per GPU event, the host time of its launch (the runtime call with the same correlation id);
    the event's own start where none is traced."""
    own = gpu["ts_ns"].to_numpy(dtype=np.int64)
    if "correlation" not in gpu.columns:
        return own
    rt = events[(events["kind"] == "runtime") & (events["correlation"] > 0)]
    launch = rt.drop_duplicates("correlation").set_index("correlation")["ts_ns"]
    found = gpu["correlation"].map(launch)
    return np.where(found.notna(), found.fillna(0).to_numpy(dtype=np.int64), own)


def _within(ts: np.ndarray, spans: iv.Spans) -> np.ndarray:
    """Which timestamps fall inside the (disjoint, sorted) spans."""
    if spans[0].size == 0:
        return np.zeros(ts.size, dtype=bool)
    i = np.searchsorted(spans[0], ts, side="right") - 1
    ok = i >= 0
    return ok & (ts < spans[1][np.maximum(i, 0)])


@dataclass
class Waits:
    """This rank's wait intervals by the peer waited for, and the intervals of its collectives whose
    group was only partly traced (no split possible)."""

    by_peer: dict[int, iv.Spans] = field(default_factory=dict)
    unknown: iv.Spans = iv.EMPTY


def _comm_claims(claims: Claims, exposed_by_family: list[tuple[str, iv.Spans]], waits: Waits) -> None:
    for family, exposed in exposed_by_family:
        rest = exposed
        for peer, spans in sorted(waits.by_peer.items()):
            part = iv.intersect(rest, spans)
            claims.add("comm_wait", part, family, peer)
            rest = iv.subtract(rest, part)
        claims.add("comm_unknown", iv.intersect(rest, waits.unknown), family)
        claims.add("comm_transfer", iv.subtract(rest, waits.unknown), family)


def _families(df: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    if df.empty:
        return []
    fam = df["name"].astype(str).map(comm_family)
    return [(f, df[fam == f]) for f in sorted(set(fam))]


def gpu_claims(events: pd.DataFrame, waits: Waits) -> Claims:
    gpu = events[events["cat"].isin(GPU_CATS) & events["kind"].isin(("compute", "comm", "memcpy", "memset"))]
    main = main_events(events)
    launch = _launch_ts(gpu, events)
    kind = gpu["kind"].to_numpy()
    scope = {s.bucket: _spans(_named(main, s.bucket)) for s in SCOPES}
    kernels = gpu[kind == "compute"]
    k_launch = launch[kind == "compute"]
    compute_all = _spans(kernels)
    first_kernel = Launches.of(k_launch, kernels["ts_ns"].to_numpy(dtype=np.int64))
    first_work = Launches.of(launch, gpu["ts_ns"].to_numpy(dtype=np.int64))
    input_win = first_kernel.extend(scope["input"])

    claims = Claims()
    comm_by_family = [(f, _spans(d)) for f, d in _families(gpu[kind == "comm"])]
    for family, spans in comm_by_family:
        claims.add("comm_overlapped", iv.intersect(spans, compute_all), family)
    claims.add("optimizer", _spans(kernels[_within(k_launch, scope["optimizer"])]))
    claims.add("compute", compute_all)
    _comm_claims(claims, [(f, iv.subtract(s, compute_all)) for f, s in comm_by_family], waits)
    copies = gpu[np.isin(kind, ("memcpy", "memset"))]
    c_launch = launch[np.isin(kind, ("memcpy", "memset"))]
    claims.add("input", _spans(copies[_within(c_launch, input_win)]))
    claims.add("checkpoint", _spans(copies[_within(c_launch, scope["checkpoint"])]))
    claims.add("memcpy", _spans(copies))
    claims.add("input", input_win)
    claims.add("checkpoint", first_work.extend(scope["checkpoint"]))
    claims.add("sync", first_work.extend(scope["sync"]))
    claims.add("optimizer", scope["optimizer"])
    claims.add("gc", scope["gc"])
    claims.add("comm_transfer", _spans(main[main["kind"] == "comm"]), "gloo")
    claims.add("host_bound", _spans(main[main["kind"].isin(("cpu_op", "runtime", "annotation", "python"))]))
    return claims


def cpu_claims(events: pd.DataFrame, waits: Waits) -> Claims:
    sets = cpu_sets(events)
    main = main_events(events)
    scope = {s.bucket: _spans(_named(main, s.bucket)) for s in SCOPES}
    claims = Claims()
    claims.add("input", scope["input"])
    claims.add("checkpoint", scope["checkpoint"])
    _comm_claims(claims, [("gloo", sets.exposed)], waits)
    claims.add("sync", scope["sync"])
    claims.add("optimizer", scope["optimizer"])
    claims.add("gc", scope["gc"])
    claims.add("compute", sets.compute)
    # Annotated Python (a module's record_function, the training loop's own spans) is the model's host
    # code: on a CPU rank the CPU is the device. ProfilerStep itself is the window, not an annotation.
    claims.add("compute", _spans(main[main["kind"] == "annotation"]))
    return claims


def budget_rows(rank: int, timeline: str, claims: Claims, win: pd.DataFrame) -> pd.DataFrame:
    """Resolve the claims in order inside the step windows: one row per (step, bucket, family, peer)."""
    lo = win["start_ns"].to_numpy(dtype=np.int64)
    hi = win["end_ns"].to_numpy(dtype=np.int64)
    free = iv.union(lo, hi)
    step_us = (hi - lo) / 1e3
    totals: dict[tuple[str, str, int], np.ndarray] = {}
    for bucket, family, peer, spans in claims.items:
        if free[0].size == 0:
            break
        part = iv.intersect(spans, free)
        if part[0].size == 0:
            continue
        free = iv.subtract(free, part)
        key = (bucket, family, peer)
        totals[key] = totals.get(key, 0) + iv.lengths_in_windows(part, lo, hi) / 1e3
    claimed = sum(totals.values(), np.zeros(lo.size))
    totals[("unexplained", "", -1)] = np.maximum(step_us - claimed, 0.0)
    frames = []
    for (bucket, family, peer), us in totals.items():
        frames.append(
            pd.DataFrame(
                {
                    "rank": rank,
                    "step": win["step"].to_numpy(),
                    "timeline": timeline,
                    "bucket": bucket,
                    "family": family,
                    "peer": peer,
                    "us": us,
                    "step_us": step_us,
                }
            )
        )
    out = pd.concat(frames, ignore_index=True)
    out = out[out["us"] > 0].copy()
    out["share"] = np.where(out["step_us"] > 0, out["us"] / out["step_us"].where(out["step_us"] > 0, 1.0), 0.0)
    order = {b: i for i, b in enumerate(BUCKETS)}
    out["_o"] = out["bucket"].map(order)
    out = out.sort_values(["step", "_o", "family", "peer"], kind="stable").drop(columns="_o")
    return out[BUDGET_COLUMNS].reset_index(drop=True)


def rank_budget(rank: int, events: pd.DataFrame, gpu: bool, waits: Waits, win: pd.DataFrame) -> pd.DataFrame:
    claims = gpu_claims(events, waits) if gpu else cpu_claims(events, waits)
    return budget_rows(rank, "gpu" if gpu else "cpu", claims, win)


def waits_of(job: RankJob) -> Waits:
    """The Waits of a RankJob: its wait intervals grouped by the peer waited for."""
    starts, ends, peers = job.wait_starts, job.wait_ends, job.wait_peers
    if peers.size != starts.size:
        peers = np.full(starts.size, -1, dtype=np.int64)
    by_peer = {int(p): iv.union(starts[peers == p], ends[peers == p]) for p in np.unique(peers)}
    return Waits(by_peer, iv.union(job.unknown_starts, job.unknown_ends))
