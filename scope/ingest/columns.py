"""Turn decoded event chunks into Arrow columns (the per-rank events table).

Only complete events (`ph == "X"`) become rows: flows, metadata and instants describe other events.
Timestamps stay in the trace's own microseconds until the file is read (baseTimeNanoseconds may sit
after the event array), then move to integer nanoseconds on the run clock.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from scope.ingest.classify import GPU_CATS, Classifier, classifier_for
from scope.ingest.comm import collective_meta, op_from_collective, p2p_peer, ranks_text
from scope.ingest.comm_kernels import is_launch_op
from scope.ingest.reader import RawEvent
from scope.ingest.tables import arrow_schema
from scope.ingest.tables_spec import EVENTS_COLUMNS, EVENTS_DICT_COLUMNS

INT64_MAX = np.iinfo(np.int64).max

EVENTS_SCHEMA = arrow_schema(EVENTS_COLUMNS)

_DICT_COLUMNS = EVENTS_DICT_COLUMNS


def _int_array(values: Any) -> np.ndarray:
    """int64 array; values beyond int64 (seen in real traces) become -1 rather than failing the file."""
    try:
        return np.array(values, dtype=np.int64)
    except (OverflowError, TypeError, ValueError):
        return np.array(
            [v if isinstance(v, int) and -INT64_MAX <= v <= INT64_MAX else -1 for v in values], dtype=np.int64
        )


def us_to_ns(ts_us: np.ndarray) -> np.ndarray:
    """Microseconds (int or float with ns fraction) to int64 ns, exact for integer inputs."""
    whole = np.floor(ts_us)
    return whole.astype(np.int64) * 1000 + np.rint((ts_us - whole) * 1000).astype(np.int64)


def chunk_to_batch(
    events: list[RawEvent], rank: int, first_id: int, classifier: Classifier | None = None
) -> tuple[pa.RecordBatch, int]:
    """Rows for the complete events of one chunk; returns the batch and how many events it consumed.

    `event_id` counts every event of the file (not only complete ones), so it points back into it.
    One Python pass gathers the fields; numpy and Arrow do the rest in C.
    """
    index = [i for i, e in enumerate(events) if e.ph == "X"]
    xs = [events[i] for i in index]
    n = len(xs)
    if n == 0:
        return pa.RecordBatch.from_pylist([], schema=_plain_schema()), len(events)
    names, cats, ts, dur, pids, tids, corr, ext, stream_arg, device_arg, flops = zip(  # noqa: B905 (transpose)
        *[
            (
                e.name,
                e.cat,
                e.ts,
                e.dur,
                e.pid,
                e.tid,
                e.args.correlation,
                e.args.external_id,
                e.args.stream,
                e.args.device,
                e.args.flops,
            )
            for e in xs
        ]
    )
    name_arr = pa.array(names, pa.string()).dictionary_encode()
    cat_arr = pa.array(cats, pa.string()).dictionary_encode()
    kinds, ops = _classify_pairs(name_arr, cat_arr, classifier or classifier_for())
    # Device-side events by category: gloo's comm events are CPU-side (worker threads), NCCL's are kernels.
    gpu_codes = [i for i, c in enumerate(cat_arr.dictionary.to_pylist()) if c in GPU_CATS]
    on_gpu = np.isin(cat_arr.indices.to_numpy(zero_copy_only=False), gpu_codes)
    device_arg_a, stream_arg_a = _int_array(device_arg), _int_array(stream_arg)
    pid_arr, tid_arr = _int_array(_ints_only(pids)), _int_array(_ints_only(tids))
    comm = _comm_columns(xs, ops, kinds, n)
    columns = {
        "rank": np.full(n, rank, dtype=np.int32),
        "event_id": np.asarray(index, dtype=np.int64) + first_id,
        "ts_ns": us_to_ns(np.array(ts, dtype=np.float64)),
        # a negative dur (seen in the field for events whose end was lost) is read as 0, with a warning
        "dur_ns": np.maximum(np.rint(np.array(dur, dtype=np.float64) * 1000), 0).astype(np.int64),
        "name": name_arr.cast(pa.string()),
        "cat": cat_arr.cast(pa.string()),
        "kind": kinds,
        "device": np.where(on_gpu, np.where(device_arg_a >= 0, device_arg_a, pid_arr), -1).astype(np.int32),
        "stream": np.where(on_gpu, np.where(stream_arg_a >= 0, stream_arg_a, tid_arr), -1),
        "thread": np.where(on_gpu, -1, tid_arr),
        "pid": pid_arr,
        "correlation": _int_array(corr),
        "external_id": _int_array(ext),
        "step": np.full(n, -1, dtype=np.int32),
        "flops": np.array(flops, dtype=np.float64),
        **comm,
    }
    schema = _plain_schema()
    arrays = [
        columns[f.name] if isinstance(columns[f.name], pa.Array) else pa.array(columns[f.name], type=f.type)
        for f in schema
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=schema), len(events)


def _ints_only(values: tuple[Any, ...]) -> list[int]:
    """pid/tid are sometimes strings ("Spans", "stream 7"); those have no numeric id."""
    return [v if type(v) is int else -1 for v in values]


def _classify_pairs(
    name_arr: pa.DictionaryArray, cat_arr: pa.DictionaryArray, classify: Classifier
) -> tuple[np.ndarray, np.ndarray]:
    """Classify each distinct (cat, name) once and spread the result back to every event."""
    name_idx = name_arr.indices.to_numpy()
    cat_idx = cat_arr.indices.to_numpy()
    key = cat_idx.astype(np.int64) * len(name_arr.dictionary) + name_idx
    uniq, inverse = np.unique(key, return_inverse=True)
    names = name_arr.dictionary.to_pylist()
    cats = cat_arr.dictionary.to_pylist()
    pairs = [classify(cats[k // len(names)], names[k % len(names)]) for k in uniq.tolist()]
    kinds = np.array([k for k, _ in pairs], dtype=object)
    ops = np.array([op for _, op in pairs], dtype=object)
    return kinds[inverse].astype(str), ops[inverse]


def _plain_schema() -> pa.Schema:
    return pa.schema(
        [pa.field(f.name, f.type.value_type if pa.types.is_dictionary(f.type) else f.type) for f in EVENTS_SCHEMA]
    )


def _comm_columns(xs: list[RawEvent], ops: np.ndarray, kinds: np.ndarray, n: int) -> dict[str, Any]:
    """Collective metadata, filled only for communication-related events (few of them)."""
    coll_op: list[str | None] = [None] * n
    pg: list[str | None] = [None] * n
    dtype: list[str | None] = [None] * n
    group_ranks: list[str | None] = [None] * n
    in_n = np.full(n, -1, dtype=np.int64)
    out_n = np.full(n, -1, dtype=np.int64)
    nbytes = np.full(n, -1, dtype=np.int64)
    gsize = np.full(n, -1, dtype=np.int32)
    peer = np.full(n, -1, dtype=np.int32)
    candidates = np.flatnonzero((ops != "") | (kinds == "comm"))
    with_collective = [i for i, e in enumerate(xs) if e.args.collective]
    for i in sorted(set(candidates.tolist()) | set(with_collective)):
        e = xs[i]
        a = e.args
        coll_op[i] = op_from_collective(a.collective) or ops[i]
        meta = _collective_meta(e)
        in_n[i], out_n[i], nbytes[i] = meta["in"], meta["out"], meta["bytes"]
        gsize[i] = a.group_size
        dtype[i] = meta["dtype"] or None
        pg[i] = a.pg_name or None
        group_ranks[i] = ranks_text(bytes(a.pg_ranks))
        peer[i] = p2p_peer(e.name, coll_op[i] or "", a.src_rank, a.dst_rank, bytes(a.concrete), group_ranks[i])
    return {
        "coll_op": coll_op,
        "pg": pg,
        "dtype": dtype,
        "group_ranks": group_ranks,
        "in_nelems": in_n,
        "out_nelems": out_n,
        "bytes": nbytes,
        "group_size": gsize,
        "peer": peer,
    }


def _collective_meta(e: RawEvent) -> dict[str, Any]:
    a = e.args
    in_n, out_n, dtype, nbytes = collective_meta(
        a.dtype, a.in_nelems, a.out_nelems, bytes(a.input_dims), bytes(a.input_type), is_launch_op(e.name)
    )
    return {"in": in_n, "out": out_n, "dtype": dtype, "bytes": nbytes}


def finish_table(batches: list[pa.RecordBatch]) -> pa.Table:
    """One table with dictionary-encoded string columns, in the store's schema."""
    table = pa.Table.from_batches(batches, schema=_plain_schema()) if batches else _plain_schema().empty_table()
    table = table.combine_chunks()
    for name in _DICT_COLUMNS:
        idx = table.schema.get_field_index(name)
        table = table.set_column(idx, name, table.column(name).dictionary_encode())
    return table.cast(EVENTS_SCHEMA)
