"""Column names and types of the store's per-rank tables, without importing pyarrow.

Both writers use these: the native core (scope.ingest.native_rank) and the pyarrow path
(scope.ingest.columns / scope.ingest.tables build their Arrow schemas from them).
Types: int32, int64, float64, bool, string ("dict" marks strings stored dictionary-encoded).
"""

from __future__ import annotations

STEP_KINDS = ("compute", "comm", "memcpy", "memset", "cpu_op", "annotation", "runtime", "python", "other")

EVENTS_COLUMNS: tuple[tuple[str, str], ...] = (
    ("rank", "int32"),
    ("event_id", "int64"),
    ("ts_ns", "int64"),
    ("dur_ns", "int64"),
    ("name", "dict"),
    ("cat", "dict"),
    ("kind", "dict"),
    ("device", "int32"),
    ("stream", "int64"),
    ("thread", "int64"),
    ("pid", "int64"),
    ("correlation", "int64"),
    ("external_id", "int64"),
    ("step", "int32"),
    ("coll_op", "dict"),
    ("pg", "dict"),
    ("in_nelems", "int64"),
    ("out_nelems", "int64"),
    ("bytes", "int64"),
    ("dtype", "dict"),
    ("group_size", "int32"),
    ("group_ranks", "string"),
    ("flops", "float64"),
    # a send's or recv's other end, a global rank (-1: not a send or recv, or the trace names no peer)
    ("peer", "int32"),
)

# String columns of events that readers should get back dictionary-encoded.
EVENTS_DICT_COLUMNS = tuple(name for name, typ in EVENTS_COLUMNS if typ == "dict")

STEPS_COLUMNS: tuple[tuple[str, str], ...] = (
    ("rank", "int32"),
    ("step", "int32"),
    ("start_ns", "int64"),
    ("end_ns", "int64"),
    ("step_us", "float64"),
    *((f"n_{k}", "int64") for k in STEP_KINDS),
)

COLLECTIVES_COLUMNS: tuple[tuple[str, str], ...] = (
    ("rank", "int32"),
    ("pg", "string"),
    ("seq", "int64"),
    ("op", "string"),
    ("ts_ns", "int64"),
    ("end_ns", "int64"),
    ("dur_ns", "int64"),
    ("bytes", "int64"),
    ("dtype", "string"),
    ("group_size", "int32"),
    ("group_ranks", "string"),
    ("step", "int32"),
    ("event_id", "int64"),
    ("on_gpu", "bool"),
    ("stream", "int64"),
    ("thread", "int64"),
    ("name", "string"),
    ("peer", "int32"),
)

# The profiler's "[memory]" instant events (profile_memory=True), one row each in the order the trace
# holds them: bytes > 0 an allocation, < 0 a free; the allocator's totals after the event where the trace
# records them (-1 where it does not: traces before PyTorch 1.10 carry Bytes alone). Device type as the
# profiler writes it (0 CPU, 1 CUDA, 6 HIP); device id -1 for the CPU.
MEMORY_COLUMNS: tuple[tuple[str, str], ...] = (
    ("rank", "int32"),
    ("ts_ns", "int64"),
    ("bytes", "int64"),
    ("total_allocated", "int64"),
    ("total_reserved", "int64"),
    ("device_type", "int32"),
    ("device_id", "int32"),
    ("addr", "int64"),
)
