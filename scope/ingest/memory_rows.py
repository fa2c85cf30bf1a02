"""The memory table of one rank in the pure-Python path: the profiler's "[memory]" instant events.

The native core keeps the same rows (kineto.c add_mem); both write scope.ingest.tables_spec.MEMORY_COLUMNS.
Rows stay in the order the files hold them (the memory analyzer sorts by time, stably).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from scope.ingest.reader import RawEvent
from scope.ingest.tables import arrow_schema
from scope.ingest.tables_spec import MEMORY_COLUMNS

MEMORY_SCHEMA = arrow_schema(MEMORY_COLUMNS)
_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63) + 1, 2**63 - 1)  # INT64_MIN marks a bad Bytes in the native core


def _small(x: int) -> int:
    return x if _INT32[0] <= x <= _INT32[1] else -1


def _int64(x: int) -> int:
    return x if _INT64[0] <= x <= _INT64[1] else -1


def _kept(e: RawEvent) -> bool:
    """A "[memory]" instant event with an integer Bytes that fits int64 (as the native core keeps)."""
    b = e.args.mem_bytes
    return e.ph == "i" and b is not None and _INT64[0] <= b <= _INT64[1] and e.name == "[memory]"


def memory_batch(events: list[RawEvent], rank: int) -> pa.RecordBatch | None:
    """The chunk's memory events (None when it has none)."""
    mem = [e for e in events if e.args.mem_bytes is not None and _kept(e)]
    if not mem:
        return None
    from scope.ingest.columns import us_to_ns

    a = [e.args for e in mem]
    columns = {
        "rank": np.full(len(mem), rank, dtype=np.int32),
        "ts_ns": us_to_ns(np.array([e.ts for e in mem], dtype=np.float64)),
        "bytes": np.array([x.mem_bytes for x in a], dtype=np.int64),
        "total_allocated": np.array([_int64(x.total_allocated) for x in a], dtype=np.int64),
        "total_reserved": np.array([_int64(x.total_reserved) for x in a], dtype=np.int64),
        "device_type": np.array([_small(x.device_type) for x in a], dtype=np.int32),
        "device_id": np.array([_small(x.device_id) for x in a], dtype=np.int32),
        "addr": np.array([_int64(x.addr) for x in a], dtype=np.int64),
    }
    return pa.RecordBatch.from_pydict(columns, schema=MEMORY_SCHEMA)


def memory_table(batches: list[pa.RecordBatch], offset_ns: int) -> pa.Table:
    """One file's memory rows moved to the run clock by the offset its events got."""
    table = pa.Table.from_batches(batches, schema=MEMORY_SCHEMA)
    if offset_ns and table.num_rows:
        ts = table.column("ts_ns").to_numpy() + np.int64(offset_ns)
        table = table.set_column(table.schema.get_field_index("ts_ns"), "ts_ns", pa.array(ts, pa.int64()))
    return table
