"""Fill in communication kernels that carry no metadata of their own.

RCCL names every kernel `ncclDevKernel_Generic`, and older NCCL traces have kernels without
`Collective name` args. Their CPU launch happens inside a `record_param_comms` op on the launching
thread, which carries the op, sizes, dtype and process group: the kernel takes those.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pyarrow as pa

from scope.ingest.masks import equals

_COPIED = ("coll_op", "in_nelems", "out_nelems", "bytes", "dtype", "pg", "group_size", "group_ranks", "peer")
_SIZES = ("in_nelems", "out_nelems", "bytes", "dtype")


def fill_from_param_comms(events: pa.Table) -> pa.Table:
    if events.num_rows == 0:
        return events
    device = events.column("device").to_numpy()
    nbytes = events.column("bytes").to_numpy()
    # NCCL-family kernels only: a catalog kernel (symmetric memory, DeepEP) is launched outside any
    # record_param_comms, and the latest one on its thread belongs to another collective.
    nccl = _nccl_family(events.column("name"))
    kernels = np.flatnonzero(equals(events.column("kind"), "comm") & (device >= 0) & (nbytes < 0) & nccl)
    params = np.flatnonzero(equals(events.column("name"), "record_param_comms"))
    if kernels.size == 0 or params.size == 0:
        return events
    cols = ["ts_ns", "dur_ns", "thread", "correlation", "device", *_COPIED]
    sub = events.select(cols).to_pandas()
    launch = _launch_of(sub, kernels)
    param_df = sub.iloc[params][["ts_ns", "thread", *_COPIED]].sort_values("ts_ns")
    match = _enclosing_param(param_df, launch)
    if match.empty:
        return events
    return _apply(events, match)


def fill_from_launch_ops(events: pa.Table) -> pa.Table:
    """Catalog and user-ruled kernels take sizes and dtype from the CPU op that launched them
    (symm_mem::*, _C_custom_ar::*; scope.ingest.comm_kernels.LAUNCH_OP_PREFIXES): the latest such op
    on the launching thread that started at or before the launch and had not ended by then."""
    if events.num_rows == 0:
        return events
    from scope.ingest.comm_kernels import is_launch_op

    device = events.column("device").to_numpy()
    nbytes = events.column("bytes").to_numpy()
    nccl = _nccl_family(events.column("name"))
    kernels = np.flatnonzero(equals(events.column("kind"), "comm") & (device >= 0) & (nbytes < 0) & ~nccl)
    launchers = np.flatnonzero(_names_where(events.column("name"), is_launch_op) & (device < 0) & (nbytes >= 0))
    if kernels.size == 0 or launchers.size == 0:
        return events
    sub = events.select(["ts_ns", "dur_ns", "thread", "correlation", "device", *_SIZES]).to_pandas()
    launch = _launch_of(sub, kernels)
    ops = sub.iloc[launchers][["ts_ns", "dur_ns", "thread", *_SIZES]].sort_values("ts_ns")
    ops["op_end"] = ops["ts_ns"] + ops["dur_ns"]
    match = _enclosing_param(ops.drop(columns=["dur_ns"]), launch)
    match = match[match["op_end"] >= match["launch_ns"]] if not match.empty else match
    if match.empty:
        return events
    return _apply(events, match, _SIZES)


def _names_where(column: pa.ChunkedArray, test: Callable[[str], bool]) -> np.ndarray:
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    parts = []
    for chunk in chunks:
        if pa.types.is_dictionary(chunk.type):
            codes = [i for i, v in enumerate(chunk.dictionary.to_pylist()) if v is not None and test(v)]
            parts.append(np.isin(chunk.indices.to_numpy(zero_copy_only=False), codes))
        else:
            parts.append(np.array([v is not None and test(v) for v in chunk.to_pylist()], dtype=bool))
    return np.concatenate(parts) if parts else np.zeros(0, dtype=bool)


def _nccl_family(column: pa.ChunkedArray) -> np.ndarray:
    from scope.ingest.classify import is_nccl_family

    return _names_where(column, is_nccl_family)


def _launch_of(sub: pd.DataFrame, kernels: np.ndarray) -> pd.DataFrame:
    """For each kernel row: the CPU runtime event with the same correlation id (thread and time)."""
    cpu = sub[(sub["device"] < 0) & (sub["correlation"] >= 0)][["correlation", "thread", "ts_ns"]]
    cpu = cpu.drop_duplicates("correlation")
    k = sub.iloc[kernels][["correlation"]].copy()
    k["row"] = kernels
    joined = k.merge(cpu, on="correlation", how="inner")
    return joined.rename(columns={"ts_ns": "launch_ns"})


def _enclosing_param(param_df: pd.DataFrame, launch: pd.DataFrame) -> pd.DataFrame:
    """The latest record_param_comms on the launching thread that started before the launch."""
    if launch.empty:
        return launch
    left = launch.sort_values("launch_ns")
    right = param_df.rename(columns={"ts_ns": "param_ns"})
    merged = pd.merge_asof(left, right, left_on="launch_ns", right_on="param_ns", by="thread", direction="backward")
    return merged.dropna(subset=["param_ns"])


def _apply(events: pa.Table, match: pd.DataFrame, columns: tuple[str, ...] = _COPIED) -> pa.Table:
    rows = match["row"].to_numpy()
    for col in columns:
        current = events.column(col).to_pandas()
        if isinstance(current.dtype, pd.CategoricalDtype):
            current = current.astype(object)
        current = current.copy()
        values = match[col].to_numpy()
        if col == "coll_op":
            keep = pd.isna(current.iloc[rows].to_numpy()) | (current.iloc[rows].to_numpy() == "")
            current.iloc[rows[keep]] = values[keep]
        else:
            current.iloc[rows] = values
        field = events.schema.field(col)
        arr = pa.array(
            current, type=field.type.value_type if pa.types.is_dictionary(field.type) else field.type, from_pandas=True
        )
        if pa.types.is_dictionary(field.type):
            arr = arr.dictionary_encode().cast(field.type)
        events = events.set_column(events.schema.get_field_index(col), field, arr)
    return events
