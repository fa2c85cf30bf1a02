"""Per-rank derived tables: steps and collectives (compact; the reduce stage concatenates them)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from scope.ingest.comm import NOT_COLLECTIVES, default_group, inherit_peers
from scope.ingest.masks import equals
from scope.ingest.tables_spec import COLLECTIVES_COLUMNS, STEP_KINDS, STEPS_COLUMNS

_ARROW_TYPES = {
    "int32": pa.int32(),
    "int64": pa.int64(),
    "float64": pa.float64(),
    "bool": pa.bool_(),
    "string": pa.string(),
    "dict": pa.dictionary(pa.int32(), pa.string()),
}


def arrow_schema(columns: tuple[tuple[str, str], ...]) -> pa.Schema:
    return pa.schema([(name, _ARROW_TYPES[typ]) for name, typ in columns])


STEPS_SCHEMA = arrow_schema(STEPS_COLUMNS)
COLLECTIVES_SCHEMA = arrow_schema(COLLECTIVES_COLUMNS)


def _frame(events: pa.Table, columns: list[str]) -> pd.DataFrame:
    return events.select(columns).to_pandas()


def steps_of(events: pa.Table) -> pa.Table:
    """One row per ProfilerStep window: bounds, duration, and event counts by kind inside it."""
    if events.num_rows == 0:
        return STEPS_SCHEMA.empty_table()
    df = _frame(events, ["rank", "kind", "ts_ns", "dur_ns", "step"])
    df["kind"] = df["kind"].astype(str)
    marks = df[df["kind"] == "step"].drop_duplicates("step", keep="first")
    marks = marks[marks["step"] >= 0]
    if marks.empty:
        return STEPS_SCHEMA.empty_table()
    out = pd.DataFrame(
        {
            "rank": marks["rank"].astype("int32").to_numpy(),
            "step": marks["step"].astype("int32").to_numpy(),
            "start_ns": marks["ts_ns"].to_numpy(),
            "end_ns": (marks["ts_ns"] + marks["dur_ns"]).to_numpy(),
            "step_us": marks["dur_ns"].to_numpy() / 1000.0,
        }
    )
    counts = df[df["step"] >= 0].groupby(["step", "kind"]).size().unstack(fill_value=0)
    for kind in STEP_KINDS:
        col = counts[kind] if kind in counts.columns else pd.Series(dtype="int64")
        out[f"n_{kind}"] = out["step"].map(col).fillna(0).astype("int64").to_numpy()
    out = out.sort_values("step").reset_index(drop=True)
    return pa.Table.from_pandas(out, schema=STEPS_SCHEMA, preserve_index=False)


def _collective_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The events that stand for one collective instance each on this rank."""
    gpu = df[(df["kind"] == "comm") & (df["device"] >= 0)]
    if not gpu.empty:
        return gpu
    cpu_transfer = df[(df["kind"] == "comm") & (df["device"] < 0)]
    if not cpu_transfer.empty:
        return cpu_transfer
    # Enqueue-only traces (no kernels, no gloo threads): c10d ops or record_param_comms; "wait" and
    # coalescing markers are bookkeeping, not collectives.
    enqueue = df[df["coll_op"].notna() & ~df["coll_op"].isin(list(NOT_COLLECTIVES))]
    param = enqueue[enqueue["name"] == "record_param_comms"]
    return param if not param.empty else enqueue


def collectives_of(events: pa.Table, header: dict[str, Any]) -> pa.Table:
    """Per-rank collectives in per-group sequence order (the key for matching across ranks)."""
    if events.num_rows == 0:
        return COLLECTIVES_SCHEMA.empty_table()
    cols = [
        "rank",
        "kind",
        "name",
        "ts_ns",
        "dur_ns",
        "device",
        "stream",
        "thread",
        "step",
        "event_id",
        "coll_op",
        "pg",
        "bytes",
        "dtype",
        "group_size",
        "group_ranks",
        "peer",
    ]
    related = equals(events.column("kind"), "comm") | events.column("coll_op").is_valid().to_numpy(zero_copy_only=False)
    df = _frame(events.filter(pa.array(related)), cols)
    for c in ("kind", "name", "coll_op", "pg", "dtype"):
        df[c] = df[c].astype(object)
    df = df.sort_values(["ts_ns", "event_id"], kind="stable")
    df["peer"] = inherit_peers(
        df["ts_ns"].tolist(),
        df["thread"].tolist(),
        df["coll_op"].fillna("").tolist(),
        df["peer"].tolist(),
        df["name"].astype(str).str.startswith("c10d::").tolist(),
    )
    rows = _collective_rows(df).copy()
    if rows.empty:
        return COLLECTIVES_SCHEMA.empty_table()
    pg_name, pg_size, pg_ranks = default_group(header)
    rows["pg"] = rows["pg"].where(rows["pg"].notna() & (rows["pg"] != ""), pg_name)
    rows["group_size"] = np.where(rows["group_size"] > 0, rows["group_size"], pg_size).astype("int32")
    rows["group_ranks"] = rows["group_ranks"].where(rows["group_ranks"].notna(), pg_ranks)
    rows["op"] = rows["coll_op"].where(rows["coll_op"].notna() & (rows["coll_op"] != ""), "unknown")
    rows = rows.sort_values(["ts_ns", "event_id"], kind="stable")
    rows["seq"] = rows.groupby("pg").cumcount().astype("int64")
    rows["end_ns"] = rows["ts_ns"] + rows["dur_ns"]
    rows["on_gpu"] = rows["device"] >= 0
    out = rows[[f.name for f in COLLECTIVES_SCHEMA]].reset_index(drop=True)
    return pa.Table.from_pandas(out, schema=COLLECTIVES_SCHEMA, preserve_index=False)
