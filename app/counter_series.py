"""Counter series recorded by the sidecar under RUN/hosts/<host>/counters/<table>/*.parquet.

Read through `scope.counter_signals` (which puts every timestamp on the run clock with the host's offset);
its derived tables (bandwidth, utilization) are offered next to the raw ones, and its error
increments, throttling intervals and Xid events become marks on the plot.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from scope import counter_signals, rundir

# Entity columns, in order of preference: what one series is "of" (a GPU, a link, a port, a disk).
ENTITY_COLUMNS = ("gpu", "link", "device", "port", "iface", "disk")
# Columns that are levels (gauges), not cumulative counts, whatever their values do.
GAUGE = re.compile(
    r"(util|_pct|mem_|_mhz|power|temp|load|procs|n_cpus|kbps|reasons|state|active|rate|"
    r"pending|failure|_total|remapped|nvml_ts|_per_s)"
)
SKIP = {"ts_ns", "start_ns", "dt_s", "pid", "uuid", "pci", "link_layer", "phys_state", "host"}
# Derived sources: name -> (raw table it needs, scope.counter_signals function).
DERIVED: dict[str, tuple[str, Callable[[pd.DataFrame], pd.DataFrame]]] = {
    "nvlink bandwidth": ("nvlink", counter_signals.nvlink_bandwidth),
    "ib bandwidth": ("ib", counter_signals.ib_bandwidth),
    "host utilization": ("host", counter_signals.host_utilization),
    "net rates": ("net", counter_signals.net_rates),
}
MAX_MARKS = 100

_cache: dict[tuple[str, str, str], tuple[tuple[int, int], pd.DataFrame]] = {}
_lock = threading.Lock()


def hosts(run_root: Path) -> list[str]:
    base = Path(run_root) / "hosts"
    if not base.is_dir():
        return []
    return sorted(
        p.name
        for p in base.iterdir()
        if rundir.counters_dir(run_root, p.name).is_dir()
        and any(rundir.counters_dir(run_root, p.name).rglob("*.parquet"))
    )


# Sources listed first are the ones a performance question usually starts from.
PREFERRED = ("gpu", "nvlink", "ib", "infiniband", "host", "net", "disk")


def tables(run_root: Path, host: str) -> list[str]:
    base = rundir.counters_dir(run_root, host)
    if not base.is_dir():
        return []
    names = [p.name for p in base.iterdir() if p.is_dir() and any(_chunks(p))]
    rank = {name: i for i, name in enumerate(PREFERRED)}
    return sorted(names, key=lambda n: (rank.get(n, len(PREFERRED)), n))


def _chunks(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.parquet") if not p.name.startswith("."))


def read_table(run_root: Path, host: str, table: str) -> pd.DataFrame:
    """All chunks of one raw counter table on the run clock (cached until a chunk is added)."""
    folder = rundir.counters_dir(run_root, host) / table
    chunks = _chunks(folder)
    signature = (len(chunks), max((p.stat().st_mtime_ns for p in chunks), default=0))
    key = (str(run_root), host, table)
    with _lock:
        hit = _cache.get(key)
        if hit and hit[0] == signature:
            return hit[1]
    offsets = counter_signals.clock_offsets(run_root)
    df = counter_signals.read_chunks({host: chunks}, offsets) if chunks else pd.DataFrame()
    with _lock:
        _cache[key] = (signature, df)
    return df


def sources(run_root: Path, host: str) -> list[str]:
    """Derived sources whose raw table exists, then the raw tables."""
    raw = tables(run_root, host)
    return [name for name, (needs, _) in DERIVED.items() if needs in raw] + raw


def read_source(run_root: Path, host: str, name: str) -> tuple[pd.DataFrame, bool]:
    """(frame, derived?): a derived source holds rates and levels already."""
    if name in DERIVED:
        needs, derive = DERIVED[name]
        return derive(read_table(run_root, host, needs)), True
    return read_table(run_root, host, name), False


def event_marks(run_root: Path, host: str) -> list[tuple[int, int, str]]:
    """(start_ns, end_ns, label) of error-counter rises, throttling and Xid events on `host`."""
    raw = {name: read_table(run_root, host, name) for name in tables(run_root, host)}
    marks: list[tuple[int, int, str]] = []
    errors = counter_signals.error_increments(raw)
    for row in errors.head(MAX_MARKS).itertuples(index=False):
        marks.append((int(row.prev_ts_ns), int(row.ts_ns), f"{row.counter} +{row.increment} ({row.entity})"))
    if "gpu" in raw:
        throttles = counter_signals.throttle_intervals(raw["gpu"])
        for row in throttles.head(MAX_MARKS).itertuples(index=False):
            marks.append((int(row.start_ns), int(row.end_ns), f"GPU {row.gpu} {row.reason}"))
    if "events" in raw:
        xids = counter_signals.xid_events(raw["events"], raw.get("gpu"))
        for row in xids.head(MAX_MARKS).itertuples(index=False):
            marks.append((int(row.ts_ns), int(row.ts_ns), f"Xid {row.code} GPU {row.gpu}: {row.meaning}"))
    return marks[:MAX_MARKS]


def entity_column(df: pd.DataFrame) -> str | None:
    present = [c for c in ENTITY_COLUMNS if c in df.columns]
    if not present:
        return None
    if len(present) > 1:  # e.g. (gpu, link) or (device, port): one label of both
        label = df[present].astype(str).agg(":".join, axis=1)
        df["entity"] = label
        return "entity"
    return present[0]


def is_cumulative(df: pd.DataFrame, column: str, entity: str | None) -> bool:
    """Counts that only grow (bytes, packets, errors, CPU seconds) are shown as rates."""
    if GAUGE.search(column):
        return False
    values = df[[column] + ([entity] if entity else [])].dropna()
    if values.empty:
        return False
    if entity:
        return bool(values.groupby(entity)[column].apply(lambda s: s.is_monotonic_increasing).all())
    return bool(values[column].is_monotonic_increasing)


def numeric_columns(df: pd.DataFrame) -> list[str]:
    return [
        c
        for c in df.columns
        if c not in SKIP
        and c not in ENTITY_COLUMNS
        and c != "entity"
        and pd.api.types.is_numeric_dtype(df[c])
        and not pd.api.types.is_bool_dtype(df[c])
        and df[c].notna().any()
    ]
