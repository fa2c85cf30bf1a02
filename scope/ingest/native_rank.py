"""Ingest one rank with the native core (scope.ingest._native): the fast path of the map stage.

C streams each file into columns, sorts them by time and assigns steps; Python classifies each
distinct (cat, name) pair once, fills in collective metadata for the few communication rows,
and builds the small steps and collectives tables. Nothing here imports pyarrow, pandas or numpy.
The result is the same store the pure-Python path (scope.ingest.rank) writes.
"""

from __future__ import annotations

import array
import bisect
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scope.errors import TraceError
from scope.ingest import _native
from scope.ingest.classify import GPU_CATS, Classifier, classifier_for, is_nccl_family
from scope.ingest.comm import (
    NOT_COLLECTIVES,
    collective_meta,
    default_group,
    inherit_peers,
    op_from_collective,
    p2p_peer,
    ranks_text,
)
from scope.ingest.comm_kernels import is_launch_op
from scope.ingest.job import (
    RankJob,
    RankOutcome,
    base_time_warning,
    count_comm_kernels,
    part_path,
    run_clock_offset,
)
from scope.ingest.reader import _parse_header_part, gzip_cut_short, truncated
from scope.ingest.recover import negative_dur_warning, recovery_warnings
from scope.ingest.sessions import SEVERAL_RANKS, concurrent_steps_warning, several_ranks_warning
from scope.ingest.tables_spec import COLLECTIVES_COLUMNS, MEMORY_COLUMNS, STEP_KINDS, STEPS_COLUMNS
from scope.store import no_leftover
from scope.warnings import InputWarning

KINDS = ("compute", "comm", "memcpy", "memset", "cpu_op", "annotation", "step", "runtime", "python", "other")
_KIND_CODE = {k: i for i, k in enumerate(KINDS)}
_COMM_KIND = _KIND_CODE["comm"]
_ROW_GROUP = 256_000


@dataclass
class Pairs:
    """Classification of each distinct (cat, name) pair, indexed by the table's pair id."""

    cats: list[str]
    names: list[str]
    kind: bytes
    op: list[str]
    on_gpu: bytes
    is_step: bytes
    comm_flag: bytes


@dataclass
class CommRow:
    """One communication-related row with the columns the comm tables need."""

    row: int
    event_id: int
    ts_ns: int
    dur_ns: int
    pair: int
    device: int
    stream: int
    thread: int
    correlation: int
    step: int
    coll_op: str | None = None
    pg: str | None = None
    dtype: str | None = None
    group_ranks: str | None = None
    in_nelems: int = -1
    out_nelems: int = -1
    nbytes: int = -1
    group_size: int = -1
    peer: int = -1


def ingest_rank_native(job: RankJob) -> RankOutcome:
    outcome = RankOutcome(rank=job.rank, files=list(job.files))
    table = _native.RankTable()
    next_id = 0
    first_ids: dict[str, int] = {}  # the first event id of each file that was read
    for path in job.files:
        first_row, first_mem = len(table), table.memory_len()
        try:
            found = table.read(path, next_id)
        except MemoryError:
            outcome.errors.append(f"{path}: out of memory while reading")
            continue
        header = _check_read(path, found, outcome)
        if header is None:
            continue
        first_ids[path] = next_id
        next_id += found["events_seen"]
        outcome.header = outcome.header or header
        offset = run_clock_offset(header, table.max_ts(first_row), job.clock_offset_ns)
        if offset:
            table.shift(first_row, offset)
            table.shift_memory(first_mem, offset)
    classifier = classifier_for(job.rules)
    pairs = classify_pairs(table.pairs(), classifier)
    table.finish(pairs.on_gpu, pairs.is_step)
    _check_concurrent_steps(table, pairs, first_ids, outcome)
    comm = comm_rows(table, pairs)
    outcome.comm_kernels = _kernel_counts(comm, pairs, classifier)
    resolve_generic(table, pairs, comm)
    resolve_launch_ops(table, pairs, comm)
    table.set_comm(*_comm_columns(comm))
    _write(job, table, pairs, comm, outcome)
    return outcome


def _check_concurrent_steps(table: Any, pairs: Pairs, first_ids: dict[str, int], outcome: RankOutcome) -> None:
    """Several ranks merged into one session of a file: its ProfilerStep windows overlap on two threads."""
    order = sorted(first_ids, key=first_ids.__getitem__)
    starts = [first_ids[path] for path in order]
    windows: dict[str, list[tuple[object, int, int]]] = {path: [] for path in order}
    for c in table.candidates(pairs.is_step):
        _row, eid, ts, dur, pair, _dev, _stream, thread = c[:8]
        if pairs.is_step[pair]:
            windows[order[max(bisect.bisect_right(starts, eid) - 1, 0)]].append((thread, ts, ts + dur))
    for path, found in windows.items():
        if any(w.file == path and w.what.startswith(SEVERAL_RANKS) for w in outcome.warnings):
            continue  # already named by its sessions' distributedInfo
        mixed = concurrent_steps_warning(path, found)
        if mixed:
            outcome.warnings.append(mixed)
            outcome.salvaged = True


def _check_read(path: str, found: dict[str, Any], outcome: RankOutcome) -> dict[str, Any] | None:
    """The file's header, with its warnings recorded; None (and an error) when it has no events at all."""
    status = found["status"]
    fatal = {
        "empty": "empty file",
        "not_trace": 'not a Kineto trace: no "traceEvents" array found',
        "gzip_bad": f"corrupt gzip data ({found['gzip_msg'] or 'no complete block'})",
    }
    if status in fatal:
        outcome.errors.append(TraceError(str(path), fatal[status]).message)
        return None
    if status == "io_error":
        outcome.errors.append(f"{path}: cannot read ({found['gzip_msg']})")
        return None
    header = _parse_header_part(found["head"])
    if found["tail"] is not None:
        header.update(_parse_header_part(found["tail"]))
    outcome.warnings.extend(_read_warnings(path, found))
    mixed = several_ranks_warning(str(path), found["sessions"])
    outcome.warnings.extend(w for w in [base_time_warning(str(path), header), mixed] if w)
    outcome.salvaged |= status != "ok" or found["gzip_problem"] != 0 or found["events_skipped"] > 0
    outcome.salvaged |= mixed is not None
    return header


def _read_warnings(path: str, found: dict[str, Any]) -> list[InputWarning]:
    out = []
    if found["gzip_problem"] == 1:
        what = f"corrupt gzip data after {found['bytes']} decompressed bytes ({found['gzip_msg']})"
        out.append(InputWarning(path, what, partial=True))
    elif found["gzip_problem"] == 2:
        out.append(gzip_cut_short(path))
    if found["status"] == "truncated":
        out.append(truncated(path, found["bytes"], found["salvage_offset"], found["events_seen"]))
    out.extend(
        recovery_warnings(
            path,
            found["events_skipped"],
            found["regions"],
            found["nregions"],
            found["events_repaired"],
            found["repair_offset"],
            found["sessions"],
        )
    )
    out.extend(negative_dur_warning(path, found["negative_dur"]))
    return out


def classify_pairs(pairs: list[tuple[str, str]], classifier: Classifier | None = None) -> Pairs:
    classify = classifier or classifier_for()
    cats, names, kinds, ops = [], [], bytearray(), []
    on_gpu, is_step, comm_flag = bytearray(), bytearray(), bytearray()
    for cat, name in pairs:
        kind, op = classify(cat, name)
        cats.append(cat)
        names.append(name)
        kinds.append(_KIND_CODE[kind])
        ops.append(op)
        on_gpu.append(cat in GPU_CATS)
        is_step.append(kind == "step")
        comm_flag.append(kind == "comm" or op != "")
    return Pairs(cats, names, bytes(kinds), ops, bytes(on_gpu), bytes(is_step), bytes(comm_flag))


def comm_rows(table: Any, pairs: Pairs) -> list[CommRow]:
    """Rows of comm kind, with a collective op in their name, or naming a collective in their args."""
    rows = []
    for c in table.candidates(pairs.comm_flag):
        (row, event_id, ts, dur, pair, device, stream, thread, corr, step) = c[:10]
        collective, dtype, pg_name, _pg_desc, pg_ranks, input_dims, input_type, in_n, out_n, gsize = c[10:20]
        src_rank, dst_rank, concrete = c[20:23]
        first = is_launch_op(pairs.names[pair])
        coll_op = op_from_collective(collective or "") or pairs.op[pair]
        group_ranks = ranks_text(pg_ranks or b"")
        in_n, out_n, dtype, nbytes = collective_meta(
            dtype or "", in_n, out_n, input_dims or b"", input_type or b"", first
        )
        rows.append(
            CommRow(
                row=row,
                event_id=event_id,
                ts_ns=ts,
                dur_ns=dur,
                pair=pair,
                device=device,
                stream=stream,
                thread=thread,
                correlation=corr,
                step=step,
                coll_op=coll_op,
                pg=pg_name or None,
                dtype=dtype or None,
                group_ranks=group_ranks,
                in_nelems=in_n,
                out_nelems=out_n,
                nbytes=nbytes,
                group_size=gsize,
                peer=p2p_peer(pairs.names[pair], coll_op, src_rank, dst_rank, concrete or b"", group_ranks),
            )
        )
    return rows


def _kernel_counts(rows: list[CommRow], pairs: Pairs, classifier: Classifier) -> dict[str, int]:
    launches: dict[str, int] = {}
    for r in rows:
        if pairs.kind[r.pair] == _COMM_KIND and r.device >= 0:
            name = pairs.names[r.pair]
            launches[name] = launches.get(name, 0) + 1
    return count_comm_kernels(list(launches), list(launches.values()), classifier.source)


_COPIED = ("coll_op", "in_nelems", "out_nelems", "nbytes", "dtype", "pg", "group_size", "group_ranks", "peer")


def resolve_generic(table: Any, pairs: Pairs, rows: list[CommRow]) -> None:
    """RCCL's ncclDevKernel_Generic (and kernels without args) take op, sizes and group from the
    record_param_comms op enclosing their launch: the latest one on the launching thread that
    started at or before the launch. Only NCCL-family kernels: a catalog kernel (symmetric memory,
    DeepEP) is launched outside any record_param_comms, and the latest one belongs to another op."""
    kernels = [
        r
        for r in rows
        if pairs.kind[r.pair] == _COMM_KIND and r.device >= 0 and r.nbytes < 0 and is_nccl_family(pairs.names[r.pair])
    ]
    params = [r for r in rows if pairs.names[r.pair] == "record_param_comms"]
    if not kernels or not params:
        return
    by_thread: dict[int, list[CommRow]] = {}
    for p in sorted(params, key=lambda r: r.ts_ns):
        by_thread.setdefault(p.thread, []).append(p)
    for kernel, launch in zip(kernels, table.launch_of([k.correlation for k in kernels]), strict=True):
        if launch is None:
            continue
        param = _latest_at_or_before(by_thread.get(launch[0], []), launch[1])
        if param is None:
            continue
        for name in _COPIED:
            if name == "coll_op" and kernel.coll_op:
                continue
            setattr(kernel, name, getattr(param, name))


_SIZES = ("in_nelems", "out_nelems", "nbytes", "dtype")


def resolve_launch_ops(table: Any, pairs: Pairs, rows: list[CommRow]) -> None:
    """Catalog and user-ruled kernels take sizes and dtype from the CPU op that launched them
    (symm_mem::*, _C_custom_ar::*; scope.ingest.comm_kernels.LAUNCH_OP_PREFIXES): the latest such op
    on the launching thread that started at or before the launch and had not ended by then."""
    kernels = [
        r
        for r in rows
        if pairs.kind[r.pair] == _COMM_KIND
        and r.device >= 0
        and r.nbytes < 0
        and not is_nccl_family(pairs.names[r.pair])
    ]
    ops = [r for r in rows if r.device < 0 and r.nbytes >= 0 and is_launch_op(pairs.names[r.pair])]
    if not kernels or not ops:
        return
    by_thread: dict[int, list[CommRow]] = {}
    for op in sorted(ops, key=lambda r: r.ts_ns):
        by_thread.setdefault(op.thread, []).append(op)
    for kernel, launch in zip(kernels, table.launch_of([k.correlation for k in kernels]), strict=True):
        if launch is None:
            continue
        latest = _latest_at_or_before(by_thread.get(launch[0], []), launch[1])
        if latest is None or latest.ts_ns + latest.dur_ns < launch[1]:
            continue
        for name in _SIZES:
            setattr(kernel, name, getattr(latest, name))


def _latest_at_or_before(params: list[CommRow], ts: int) -> CommRow | None:
    lo, hi = 0, len(params)
    while lo < hi:
        mid = (lo + hi) // 2
        if params[mid].ts_ns <= ts:
            lo = mid + 1
        else:
            hi = mid
    return params[lo - 1] if lo else None


def _comm_columns(rows: list[CommRow]) -> tuple[list[Any], ...]:
    return (
        [r.row for r in rows],
        [r.coll_op for r in rows],
        [r.pg for r in rows],
        [r.dtype for r in rows],
        [r.group_ranks for r in rows],
        [r.in_nelems for r in rows],
        [r.out_nelems for r in rows],
        [r.nbytes for r in rows],
        [r.group_size for r in rows],
        [r.peer for r in rows],
    )


# ------------------------------------------------------------------ steps and collectives tables


def steps_columns(table: Any, pairs: Pairs, rank: int) -> dict[str, list[Any]]:
    """One row per ProfilerStep window: bounds, duration, and event counts by kind inside it."""
    marks: dict[int, tuple[int, int]] = {}
    for c in table.candidates(pairs.is_step):
        _row, _eid, ts, dur, pair, _dev, _stream, _thread, _corr, step = c[:10]
        if pairs.is_step[pair] and step >= 0 and step not in marks:
            marks[step] = (ts, dur)
    counts = table.step_counts(pairs.kind) if marks else {}
    cols: dict[str, list[Any]] = {name: [] for name, _ in STEPS_COLUMNS}
    for step in sorted(marks):
        ts, dur = marks[step]
        cols["rank"].append(rank)
        cols["step"].append(step)
        cols["start_ns"].append(ts)
        cols["end_ns"].append(ts + dur)
        cols["step_us"].append(dur / 1000.0)
        for kind in STEP_KINDS:
            cols[f"n_{kind}"].append(counts.get((step, _KIND_CODE[kind]), 0))
    return cols


def _collective_instances(rows: list[CommRow], pairs: Pairs) -> list[CommRow]:
    """The rows that stand for one collective instance each (see scope.ingest.tables)."""
    comm = [r for r in rows if pairs.kind[r.pair] == _COMM_KIND]
    gpu = [r for r in comm if r.device >= 0]
    if gpu:
        return gpu
    cpu_transfer = [r for r in comm if r.device < 0]
    if cpu_transfer:
        return cpu_transfer
    enqueue = [r for r in rows if r.coll_op is not None and r.coll_op not in NOT_COLLECTIVES]
    param = [r for r in enqueue if pairs.names[r.pair] == "record_param_comms"]
    return param or enqueue


def collectives_columns(rows: list[CommRow], pairs: Pairs, rank: int, header: dict[str, Any]) -> dict[str, list[Any]]:
    """Per-rank collectives in per-group sequence order (the key for matching across ranks)."""
    pg_name, pg_size, pg_ranks = default_group(header)
    cols: dict[str, list[Any]] = {name: [] for name, _ in COLLECTIVES_COLUMNS}
    seq: dict[str, int] = {}
    peers = _inherited_peers(rows, pairs)
    for r in sorted(_collective_instances(rows, pairs), key=lambda r: (r.ts_ns, r.event_id)):
        pg = r.pg if r.pg else pg_name
        seq[pg] = seq.get(pg, -1) + 1
        values = {
            "rank": rank,
            "pg": pg,
            "seq": seq[pg],
            "op": r.coll_op if r.coll_op else "unknown",
            "ts_ns": r.ts_ns,
            "end_ns": r.ts_ns + r.dur_ns,
            "dur_ns": r.dur_ns,
            "bytes": r.nbytes,
            "dtype": r.dtype,
            "group_size": r.group_size if r.group_size > 0 else pg_size,
            "group_ranks": r.group_ranks if r.group_ranks is not None else pg_ranks,
            "step": r.step,
            "event_id": r.event_id,
            "on_gpu": r.device >= 0,
            "stream": r.stream,
            "thread": r.thread,
            "name": pairs.names[r.pair],
            "peer": peers.get(r.row, r.peer),
        }
        for name, value in values.items():
            cols[name].append(value)
    return cols


def _inherited_peers(rows: list[CommRow], pairs: Pairs) -> dict[int, int]:
    """Row -> peer, gloo's transfers given their c10d op's (scope.ingest.comm.inherit_peers)."""
    ordered = sorted(rows, key=lambda r: (r.ts_ns, r.event_id))
    peers = inherit_peers(
        [r.ts_ns for r in ordered],
        [r.thread for r in ordered],
        [r.coll_op or "" for r in ordered],
        [r.peer for r in ordered],
        [pairs.names[r.pair].startswith("c10d::") for r in ordered],
    )
    return {r.row: p for r, p in zip(ordered, peers, strict=True)}


def _write(job: RankJob, table: Any, pairs: Pairs, comm: list[CommRow], outcome: RankOutcome) -> None:
    store = Path(job.store_dir)
    steps = steps_columns(table, pairs, job.rank)
    collectives = collectives_columns(comm, pairs, job.rank, outcome.header)
    memory = _memory_columns(table, job.rank)
    written = (
        ("steps", steps, STEPS_COLUMNS),
        ("collectives", collectives, COLLECTIVES_COLUMNS),
        ("memory", memory, MEMORY_COLUMNS),
    )
    parts = {name: _temp_for(store, name, job.rank) for name in ("events", "steps", "collectives", "memory")}
    with no_leftover(*parts.values()):
        table.write_events(str(parts["events"]), job.rank, list(KINDS), pairs.kind, row_group_size=_ROW_GROUP)
        for name, columns, spec in written:
            _native.write_parquet(str(parts[name]), [(col, typ, columns[col]) for col, typ in spec])
        for name, tmp in parts.items():  # every table written before any replaces the old one
            tmp.replace(part_path(store, name, job.rank))
    outcome.n_events = len(table)
    outcome.n_steps = len(steps["step"])
    outcome.n_collectives = len(collectives["seq"])
    outcome.n_memory = table.memory_len()


def _memory_columns(table: Any, rank: int) -> dict[str, Any]:
    """The rank's "[memory]" events as the memory table's columns (tables_spec.MEMORY_COLUMNS): buffers
    the Parquet writer takes as they are."""
    cols: dict[str, Any] = {}
    for (name, typ), raw in zip(MEMORY_COLUMNS[1:], table.memory(), strict=True):
        cols[name] = memoryview(raw).cast("q" if typ == "int64" else "i")
    cols["rank"] = memoryview(array.array("i", [rank]) * table.memory_len())
    return cols


def _temp_for(store: Path, table: str, rank: int) -> Path:
    path = part_path(store, table, rank)
    path.parent.mkdir(parents=True, exist_ok=True)
    return path.with_suffix(".tmp")
