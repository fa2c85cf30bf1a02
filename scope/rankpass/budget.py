"""Step time budget of one rank (the map stage of analyzers/budget/analyze.py): every nanosecond of every
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
    sync             GPU idle during a synchronizing call (cudaStreamSynchronize, cudaDeviceSynchronize,
                     cudaEventSynchronize, blocking cudaMemcpy, aten::_local_scalar_dense / .item())
    optimizer        GPU idle inside Optimizer.step / zero_grad (a host-bound optimizer)
    gc               GPU idle during a traced garbage collection
    comm_transfer    GPU idle while the training thread is in a CPU-side collective (gloo)
    host_bound       GPU idle while the training thread is busy in operators or runtime calls
                     (launch overhead, many short kernels, CPU work between launches)
    sync             GPU idle after a synchronizing call, up to the first GPU work launched after it,
                     while the training thread is in no operator: the queue drained, the GPU waits
    unexplained      GPU idle while the training thread is in no recorded event

CPU ranks (gloo: no kernels) are read from the training thread's side, in order: input (DataLoader
__next__), checkpoint, exposed communication (comm_wait / comm_unknown / comm_transfer, as in
scope/rankpass/timeline.py's cpu_sets), sync (.item() and other synchronizing ops), optimizer, gc,
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

from scope.ingest.classify import GPU_CATS, is_nccl_family
from scope.ingest.comm_kernels import catalog_match
from scope.rankpass import intervals as iv
from scope.rankpass.arrays import Ev, Events, most_frequent, training_thread
from scope.rankpass.comm_infer import looks_like_comm, main_stream
from scope.rankpass.timeline import RankJob, Sets, cpu_sets

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
BUDGET_EVENT_COLUMNS = ["name", "cat", "kind", "ts_ns", "dur_ns", "thread", "coll_op", "correlation", "stream"]
# Host ops of communication libraries: a kernel launched inside one is communication's (scope/rankpass/comm_infer.py)
_COMM_HOST_OP = re.compile(r"^(?:c10d::|nccl:|record_param_comms$|gloo:)")


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
_ANY_SCOPE = re.compile("|".join(f"(?:{s.pattern})" for s in SCOPES))


@dataclass
class Claims:
    """Ordered (bucket, family, peer, spans); each claims what no earlier one did."""

    items: list[tuple[str, str, int, iv.Spans]] = field(default_factory=list)
    # set by budget_rows: per step, the largest stretch no claim covers, (offset into the step, length) us
    gaps: dict[int, tuple[float, float]] = field(default_factory=dict)

    def add(self, bucket: str, spans: iv.Spans, family: str = "", peer: int = -1) -> None:
        if spans[0].size:
            self.items.append((bucket, family, peer, spans))


def comm_family(name: str) -> str:
    if name.startswith("gloo:"):
        return "gloo"
    if is_nccl_family(name):
        return "nccl"
    row = catalog_match(name)
    return row.family if row is not None else "user"


def main_thread_of(ev: Ev) -> int | None:
    """The training thread: the one recording ProfilerStep (even when the trace's thread ids could not
    be read, -1), else timeline.main_thread's choice."""
    marks = ev.thread[ev.is_kind("step") & ~ev.in_cats(GPU_CATS)]
    if marks.size:
        return most_frequent(marks)
    return training_thread(ev.thread, ev.end - ev.ts, ev.is_kind("step"), ev.is_kind("cpu_op"))


@dataclass
class Host:
    """The rank's events as arrays, the GPU's and the training thread's, and the training thread's
    SCOPES spans; shared by the budget and its evidence."""

    ev: Ev
    gpu: Ev
    main: Ev
    named: dict[str, Ev]
    # kernels counted as communication by inference: name -> (op, launches, why), set by gpu_claims
    inferred: dict[str, tuple[str, int, str]] = field(default_factory=dict)
    # per step, the largest unexplained stretch (offset into the step, length) us, set by rank_budget
    gaps: dict[int, tuple[float, float]] = field(default_factory=dict)

    @classmethod
    def of(cls, events: Events | Ev) -> Host:
        """From a frame, the store's Arrow columns (arrays.EventColumns) or their arrays."""
        ev = events if isinstance(events, Ev) else Ev.of(events)
        on_gpu = ev.in_cats(GPU_CATS)
        thread = main_thread_of(ev)
        main = ev.take(~on_gpu & (ev.thread == thread)) if thread is not None else ev.take(np.zeros(ev.size, bool))
        gpu = ev.take(on_gpu & ev.is_kind("compute", "comm", "memcpy", "memset"))
        # one search per distinct name for all the scopes; the few names that hit are sorted out after
        scoped = main.take(main.named(_ANY_SCOPE))
        named = {s.bucket: scoped.take(scoped.named(_SCOPE_RE[s.bucket])) for s in SCOPES}
        return cls(ev, gpu, main, named)

    def spans(self) -> dict[str, iv.Spans]:
        return {bucket: e.spans() for bucket, e in self.named.items()}


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


def _launch_ts(gpu: Ev, ev: Ev) -> np.ndarray:
    """Per GPU event, the host time of its launch (the runtime call with the same correlation id);
    the event's own start where none is traced."""
    rt = ev.is_kind("runtime") & (ev.corr > 0)
    corr, first = iv.first_of_each(ev.corr[rt])
    launch_ts = ev.ts[rt][first]
    i = np.searchsorted(corr, gpu.corr)
    i = np.minimum(i, max(corr.size - 1, 0))
    found = (corr.size > 0) & (gpu.corr > 0) & (corr[i] == gpu.corr) if corr.size else np.zeros(gpu.size, bool)
    return np.where(found, launch_ts[i] if corr.size else gpu.ts, gpu.ts)


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


def _families(comm: Ev) -> list[tuple[str, iv.Spans]]:
    if comm.size == 0:
        return []
    used = np.unique(comm.name)
    fams = {int(c): comm_family(str(comm.names[c])) if c >= 0 else "user" for c in used}
    fam = np.array([fams[int(c)] for c in comm.name], dtype=object) if len(used) > 1 else None
    if fam is None:
        return [(fams[int(used[0])], comm.spans())]
    return [(f, comm.spans(fam == f)) for f in sorted(set(fams.values()))]


def _infer_comm(host: Host, gpu: Ev, launch: np.ndarray) -> np.ndarray:
    """Compute kernels that look like communication by name and by structure (scope/rankpass/comm_infer.py)."""
    is_kernel = gpu.is_kind("compute")
    out = np.zeros(gpu.size, dtype=bool)
    if not is_kernel.any():
        return out
    codes = np.unique(gpu.name[is_kernel])
    ops = {int(c): looks_like_comm(str(gpu.names[c])) for c in codes if c >= 0}
    if not any(ops.values()):
        return out
    main = main_stream(gpu.stream[is_kernel], (gpu.end - gpu.ts)[is_kernel])
    side = gpu.stream != main
    comm_ops = host.main.spans(host.main.is_kind("comm") | host.main.named(_COMM_HOST_OP))
    from_comm_op = _within(launch, comm_ops)
    for code, op in ops.items():
        if not op:
            continue
        mine = is_kernel & (gpu.name == code)
        hit = mine & (side | from_comm_op)
        if hit.any():
            out |= hit
            why = "on a side stream" if (hit & side).any() else "launched from a communication op"
            host.inferred[str(gpu.names[code])] = (op, int(hit.sum()), why)
    return out


def _host(events: Events | None, host: Host | None) -> Host:
    if host is not None:
        return host
    if events is None:
        raise ValueError("the budget needs the rank's events or its Host")
    return Host.of(events)


def gpu_claims(events: Events | None, waits: Waits, host: Host | None = None) -> Claims:
    """`events`: None where `host` is given (the pass's: its events are arrays, never a frame)."""
    host = _host(events, host)
    gpu, main = host.gpu, host.main
    launch = _launch_ts(gpu, host.ev)
    inferred = _infer_comm(host, gpu, launch)
    is_kernel = gpu.is_kind("compute") & ~inferred
    is_copy = gpu.is_kind("memcpy", "memset")
    scope = host.spans()
    k_launch = launch[is_kernel]
    compute_all = gpu.spans(is_kernel)
    first_kernel = Launches.of(k_launch, gpu.ts[is_kernel])
    first_work = Launches.of(launch, gpu.ts)
    input_win = first_kernel.extend(scope["input"])

    claims = Claims()
    comm_by_family = _families(gpu.take(gpu.is_kind("comm")))
    if inferred.any():
        comm_by_family.append(("inferred", gpu.spans(inferred)))
    for family, spans in comm_by_family:
        claims.add("comm_overlapped", iv.intersect(spans, compute_all), family)
    kernels = gpu.take(is_kernel)
    claims.add("optimizer", kernels.spans(_within(k_launch, scope["optimizer"])))
    claims.add("compute", compute_all)
    _comm_claims(claims, [(f, iv.subtract(s, compute_all)) for f, s in comm_by_family], waits)
    copies = gpu.take(is_copy)
    c_launch = launch[is_copy]
    claims.add("input", copies.spans(_within(c_launch, input_win)))
    claims.add("checkpoint", copies.spans(_within(c_launch, scope["checkpoint"])))
    claims.add("memcpy", copies.spans())
    claims.add("input", input_win)
    claims.add("checkpoint", first_work.extend(scope["checkpoint"]))
    claims.add("sync", scope["sync"])
    claims.add("optimizer", scope["optimizer"])
    claims.add("gc", scope["gc"])
    claims.add("comm_transfer", main.spans(main.is_kind("comm")), "gloo")
    claims.add("host_bound", main.spans(main.is_kind("cpu_op", "runtime", "annotation", "python")))
    # after a synchronizing call the queue is empty: the GPU waits for the host's next launch, and
    # what the host does meanwhile in operators is host-bound time (above); the rest is the sync's
    claims.add("sync", first_work.extend(scope["sync"]))
    return claims


def cpu_claims(events: pd.DataFrame | None, waits: Waits, host: Host | None = None, sets: Sets | None = None) -> Claims:
    """`sets` and `host`: the rank's, where the caller has made them (the pass's tables; `events` None)."""
    if sets is None:
        if events is None:
            raise ValueError("the budget of a CPU rank needs its events or its interval sets")
        sets = cpu_sets(events)
    host = _host(events, host)
    scope = host.spans()
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
    claims.add("compute", host.main.spans(host.main.is_kind("annotation")))
    return claims


Columns = dict[str, np.ndarray]


def budget_rows(rank: int, timeline: str, claims: Claims, win: pd.DataFrame) -> pd.DataFrame:
    """The budget_columns as a table."""
    return pd.DataFrame(budget_columns(rank, timeline, claims, win))[BUDGET_COLUMNS]


def budget_columns(rank: int, timeline: str, claims: Claims, win: pd.DataFrame) -> Columns:
    """Resolve the claims in order inside the step windows: one row per (step, bucket, family, peer),
    as columns (a worker returns arrays; one table is built for all ranks, a DataFrame per rank costs
    more than the budget itself).

    One sweep: the boundaries of every claim and window cut the time axis into elementary segments, each
    inside or outside every claim as a whole; a segment goes to the first claim that covers it."""
    lo = win["start_ns"].to_numpy(dtype=np.int64)
    hi = win["end_ns"].to_numpy(dtype=np.int64)
    step_us = (hi - lo) / 1e3
    order = np.argsort(lo, kind="stable")
    s_lo, s_hi = lo[order], hi[order]
    cuts = [lo, hi] + [c for item in claims.items for c in item[3]]
    pts = iv.distinct(np.concatenate(cuts)) if cuts else np.empty(0, dtype=np.int64)
    totals: dict[tuple[str, str, int], np.ndarray] = {}
    if pts.size > 1:
        mids = pts[:-1]
        length = np.diff(pts).astype(np.float64) / 1e3
        idx = np.searchsorted(s_lo, mids, side="right") - 1
        in_win = (idx >= 0) & (mids < s_hi[np.maximum(idx, 0)])
        step_i = order[np.maximum(idx, 0)]
        owner = np.full(mids.size, -1, dtype=np.int64)
        for k, (_bucket, _family, _peer, spans) in enumerate(claims.items):
            free = owner < 0
            owner[free & _covered(pts, spans)] = k
        for k, (bucket, family, peer, _spans_k) in enumerate(claims.items):
            sel = in_win & (owner == k)
            if not sel.any():
                continue
            key = (bucket, family, peer)
            add = np.bincount(step_i[sel], weights=length[sel], minlength=lo.size)
            totals[key] = totals.get(key, 0) + add
        claims.gaps = _largest_gaps(pts, in_win & (owner < 0), win["step"].to_numpy(), s_lo, s_hi, order)
    claimed = sum(totals.values(), np.zeros(lo.size))
    rest = step_us - claimed
    # float sums of many segments leave ~1e-12 us where every ns was claimed: that is zero
    totals[("unexplained", "", -1)] = np.where(rest > 1e-6 * np.maximum(step_us, 1.0), rest, 0.0)
    keys = list(totals)
    n = lo.size
    us = np.concatenate([totals[k] for k in keys])
    step = np.tile(win["step"].to_numpy(), len(keys))
    # BUCKETS order; other callers' buckets (analyzers/ops.py's host budget) after them, in claim order
    names = list(BUCKETS) + [b for b in dict.fromkeys(k[0] for k in keys) if b not in BUCKETS]
    rank_of = {b: i for i, b in enumerate(names)}
    bucket_i = np.repeat([rank_of[k[0]] for k in keys], n)
    families = sorted({k[1] for k in keys})
    fam_i = np.repeat([families.index(k[1]) for k in keys], n)
    peer_col = np.repeat(np.array([k[2] for k in keys], dtype=np.int64), n)
    total = np.tile(step_us, len(keys))
    keep = np.flatnonzero(us > 0)
    # rows by step, then bucket precedence, family and peer (a stable sort on each key, last key first)
    for key_col in (peer_col, fam_i, bucket_i, step):
        keep = keep[np.argsort(key_col[keep], kind="stable")]
    return {
        "rank": np.full(keep.size, rank, dtype=np.int64),
        "step": step[keep],
        "timeline": np.full(keep.size, timeline, dtype=object),
        "bucket": np.array(names, dtype=object)[bucket_i[keep]],
        "family": np.array(families, dtype=object)[fam_i[keep]],
        "peer": peer_col[keep],
        "us": us[keep],
        "step_us": total[keep],
        "share": us[keep] / np.where(total[keep] > 0, total[keep], 1.0),
    }


def _covered(pts: np.ndarray, spans: iv.Spans) -> np.ndarray:
    """Which elementary segments [pts[j], pts[j + 1]) lie inside the spans, whose every boundary is one of
    pts: span [s, e) holds the segments from s's place in pts up to e's, so the spans are placed in pts
    and not every segment searched in the spans (_within; 1 ms a claim on a GPU rank)."""
    n = pts.size - 1
    first = np.searchsorted(pts, spans[0])
    last = np.searchsorted(pts, spans[1])
    depth = np.cumsum(np.bincount(first, minlength=n + 1) - np.bincount(last, minlength=n + 1))
    return depth[:n] > 0


def _largest_gaps(
    pts: np.ndarray, free: np.ndarray, steps: np.ndarray, s_lo: np.ndarray, s_hi: np.ndarray, order: np.ndarray
) -> dict[int, tuple[float, float]]:
    """Per step, the longest unclaimed stretch: (its start after the step's start, its length) in us."""
    gaps = iv.union(pts[:-1][free], pts[1:][free])
    out: dict[int, tuple[float, float]] = {}
    if gaps[0].size == 0:
        return out
    idx = np.searchsorted(s_lo, gaps[0], side="right") - 1
    for i in iv.distinct(idx[idx >= 0]):
        mine = idx == i
        starts = gaps[0][mine]
        ends = np.minimum(gaps[1][mine], s_hi[i])
        j = int(np.argmax(ends - starts))
        out[int(steps[order[i]])] = ((starts[j] - s_lo[i]) / 1e3, (ends[j] - starts[j]) / 1e3)
    return out


def rank_budget(
    rank: int, events: pd.DataFrame, gpu: bool, waits: Waits, win: pd.DataFrame, host: Host | None = None
) -> Columns:
    host = _host(events, host)
    claims = gpu_claims(events, waits, host) if gpu else cpu_claims(events, waits, host)
    return resolved(rank, gpu, claims, win, host)


def resolved(rank: int, gpu: bool, claims: Claims, win: pd.DataFrame, host: Host) -> Columns:
    """The claims resolved into the budget's columns; the largest unexplained gaps kept on `host` for
    the evidence."""
    columns = budget_columns(rank, "gpu" if gpu else "cpu", claims, win)
    host.gaps = claims.gaps
    return columns


def waits_of(job: RankJob) -> Waits:
    """The Waits of a RankJob: its wait intervals grouped by the peer waited for."""
    starts, ends, peers = job.wait_starts, job.wait_ends, job.wait_peers
    if peers.size != starts.size:
        peers = np.full(starts.size, -1, dtype=np.int64)
    by_peer = {int(p): iv.union(starts[peers == p], ends[peers == p]) for p in np.unique(peers)}
    return Waits(by_peer, iv.union(job.unknown_starts, job.unknown_ends))
