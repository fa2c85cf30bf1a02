"""Turn decoded event chunks into Arrow columns (the per-rank events table).

Only complete events (`ph == "X"`) become rows: flows, metadata and instants describe other events.
Timestamps stay in the trace's own microseconds until the file is read (baseTimeNanoseconds may sit
after the event array), then move to integer nanoseconds on the run clock.
"""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
import pyarrow as pa

from scope.ingest.classify import classify, dtype_bytes
from scope.ingest.reader import RawEvent

INT64_MAX = np.iinfo(np.int64).max

EVENTS_SCHEMA = pa.schema(
    [
        ("rank", pa.int32()),
        ("event_id", pa.int64()),
        ("ts_ns", pa.int64()),
        ("dur_ns", pa.int64()),
        ("name", pa.dictionary(pa.int32(), pa.string())),
        ("cat", pa.dictionary(pa.int32(), pa.string())),
        ("kind", pa.dictionary(pa.int32(), pa.string())),
        ("device", pa.int32()),
        ("stream", pa.int64()),
        ("thread", pa.int64()),
        ("pid", pa.int64()),
        ("correlation", pa.int64()),
        ("external_id", pa.int64()),
        ("step", pa.int32()),
        ("coll_op", pa.dictionary(pa.int32(), pa.string())),
        ("pg", pa.dictionary(pa.int32(), pa.string())),
        ("in_nelems", pa.int64()),
        ("out_nelems", pa.int64()),
        ("bytes", pa.int64()),
        ("dtype", pa.dictionary(pa.int32(), pa.string())),
        ("group_size", pa.int32()),
        ("group_ranks", pa.string()),
        ("flops", pa.float64()),
    ]
)

_DICT_COLUMNS = ("name", "cat", "kind", "coll_op", "pg", "dtype")
_KIND_CACHE: dict[tuple[str, str], tuple[str, str]] = {}


def _kind_of(cat: str, name: str) -> tuple[str, str]:
    key = (cat, name)
    found = _KIND_CACHE.get(key)
    if found is None:
        found = _KIND_CACHE[key] = classify(cat, name)
    return found


def _int_array(values: list[Any]) -> np.ndarray:
    """int64 array; values beyond int64 (seen in real traces) become -1 rather than failing the file."""
    try:
        return np.fromiter(values, dtype=np.int64, count=len(values))
    except (OverflowError, TypeError, ValueError):
        return np.array([v if isinstance(v, int) and -INT64_MAX <= v <= INT64_MAX else -1 for v in values], dtype=np.int64)


def us_to_ns(ts_us: np.ndarray) -> np.ndarray:
    """Microseconds (int or float with ns fraction) to int64 ns, exact for integer inputs."""
    whole = np.floor(ts_us)
    return whole.astype(np.int64) * 1000 + np.rint((ts_us - whole) * 1000).astype(np.int64)


def chunk_to_batch(events: list[RawEvent], rank: int, first_id: int) -> tuple[pa.RecordBatch, int]:
    """Rows for the complete events of one chunk; returns the batch and how many events it consumed.

    `event_id` counts every event of the file (not only complete ones), so it points back into it.
    """
    index = [i for i, e in enumerate(events) if e.ph == "X"]
    xs = [events[i] for i in index]
    n = len(xs)
    names = [e.name for e in xs]
    cats = [e.cat for e in xs]
    kinds_ops = [_kind_of(c, nm) for c, nm in zip(cats, names)]
    args = [e.args for e in xs]
    pids = [e.pid if type(e.pid) is int else -1 for e in xs]
    tids = [e.tid if type(e.tid) is int else -1 for e in xs]
    kinds = [k for k, _ in kinds_ops]
    on_gpu = np.fromiter((k in ("compute", "comm", "memcpy", "memset") or e.cat == "gpu_user_annotation"
                          for k, e in zip(kinds, xs)), dtype=bool, count=n)
    device_arg = _int_array([a.device for a in args])
    stream_arg = _int_array([a.stream for a in args])
    pid_arr = _int_array(pids)
    tid_arr = _int_array(tids)
    comm = _comm_columns(xs, kinds_ops, n)
    columns = {
        "rank": np.full(n, rank, dtype=np.int32),
        "event_id": np.asarray(index, dtype=np.int64) + first_id,
        "ts_ns": us_to_ns(np.fromiter((e.ts for e in xs), dtype=np.float64, count=n)),
        "dur_ns": np.rint(np.fromiter((e.dur for e in xs), dtype=np.float64, count=n) * 1000).astype(np.int64),
        "name": names,
        "cat": cats,
        "kind": kinds,
        "device": np.where(on_gpu, np.where(device_arg >= 0, device_arg, pid_arr), -1).astype(np.int32),
        "stream": np.where(on_gpu, np.where(stream_arg >= 0, stream_arg, tid_arr), -1),
        "thread": np.where(on_gpu, -1, tid_arr),
        "pid": pid_arr,
        "correlation": _int_array([a.correlation for a in args]),
        "external_id": _int_array([a.external_id for a in args]),
        "step": np.full(n, -1, dtype=np.int32),
        "flops": np.fromiter((a.flops for a in args), dtype=np.float64, count=n),
        **comm,
    }
    arrays = [pa.array(columns[f.name], type=f.type.value_type if pa.types.is_dictionary(f.type) else f.type)
              for f in EVENTS_SCHEMA]
    return pa.RecordBatch.from_arrays(arrays, schema=_plain_schema()), len(events)


def _plain_schema() -> pa.Schema:
    return pa.schema([pa.field(f.name, f.type.value_type if pa.types.is_dictionary(f.type) else f.type)
                      for f in EVENTS_SCHEMA])


def _comm_columns(xs: list[RawEvent], kinds_ops: list[tuple[str, str]], n: int) -> dict[str, Any]:
    """Collective metadata, filled only for communication-related events (few of them)."""
    coll_op: list[str | None] = [None] * n
    pg: list[str | None] = [None] * n
    dtype: list[str | None] = [None] * n
    group_ranks: list[str | None] = [None] * n
    in_n = np.full(n, -1, dtype=np.int64)
    out_n = np.full(n, -1, dtype=np.int64)
    nbytes = np.full(n, -1, dtype=np.int64)
    gsize = np.full(n, -1, dtype=np.int32)
    for i, ((kind, op), e) in enumerate(zip(kinds_ops, xs)):
        a = e.args
        if not (op or kind == "comm" or a.collective):
            continue
        coll_op[i] = _op_from_args(a.collective) or op
        meta = _collective_meta(e)
        in_n[i], out_n[i], nbytes[i] = meta["in"], meta["out"], meta["bytes"]
        gsize[i] = a.group_size
        dtype[i] = meta["dtype"] or None
        pg[i] = a.pg_name or None
        group_ranks[i] = _ranks_text(a.pg_ranks)
    return {"coll_op": coll_op, "pg": pg, "dtype": dtype, "group_ranks": group_ranks, "in_nelems": in_n,
            "out_nelems": out_n, "bytes": nbytes, "group_size": gsize}


def _op_from_args(collective: str) -> str:
    if not collective:
        return ""
    from scope.ingest.classify import canonical_op

    return canonical_op(collective)


def _collective_meta(e: RawEvent) -> dict[str, Any]:
    a = e.args
    dtype = a.dtype
    in_n, out_n = a.in_nelems, a.out_nelems
    if in_n < 0 and bytes(a.input_dims):  # gloo annotations: sizes only as Input Dims / Input type
        in_n = _numel(a.input_dims)
        out_n = in_n
        if not dtype:
            dtype = _first_type(a.input_type)
    size = dtype_bytes(dtype) if dtype else 0
    count = max(in_n, out_n)
    return {"in": in_n, "out": out_n, "dtype": dtype, "bytes": count * size if size and count >= 0 else -1}


def _numel(raw: msgspec.Raw) -> int:
    try:
        dims = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return -1
    total = 0
    for shape in dims if isinstance(dims, list) else []:
        if isinstance(shape, list) and shape and all(isinstance(d, int) for d in shape):
            total += int(np.prod(shape))
    return total if total else -1


def _first_type(raw: msgspec.Raw) -> str:
    try:
        types = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return ""
    return next((t for t in types if isinstance(t, str) and t), "") if isinstance(types, list) else ""


def _ranks_text(raw: msgspec.Raw) -> str | None:
    """Process Group Ranks as a JSON list string; traces store it as a string or a list."""
    if not bytes(raw):
        return None
    try:
        value = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return None
    if isinstance(value, str):
        return value.replace(" ", "")
    return msgspec.json.encode(value).decode()


def finish_table(batches: list[pa.RecordBatch]) -> pa.Table:
    """One table with dictionary-encoded string columns, in the store's schema."""
    table = pa.Table.from_batches(batches, schema=_plain_schema()) if batches else _plain_schema().empty_table()
    table = table.combine_chunks()
    for name in _DICT_COLUMNS:
        idx = table.schema.get_field_index(name)
        table = table.set_column(idx, name, table.column(name).dictionary_encode())
    return table.cast(EVENTS_SCHEMA)
