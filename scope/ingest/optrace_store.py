"""An operation-level job into the store: one events partition per (DP rank, stage) worker.

Events keep the store's columns (name = op type, kind = compute / comm, stream, step, collective op and
group) and add five: dp_rank, stage, model_chunk, micro_batch, seq_id. The sampled steps are laid
end to end on one clock (each step from its first op), so views that expect a timeline get one; the
step windows of the steps table say where each starts.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from scope import __version__
from scope.ingest.optrace import OpTraceJob, read_job
from scope.ingest.optypes import BY_NAME, op_type
from scope.ingest.tables_spec import COLLECTIVES_COLUMNS, EVENTS_COLUMNS, STEP_KINDS, STEPS_COLUMNS
from scope.store import META_NAME, STORE_VERSION, Store, remove_derived, write_json_atomic

if TYPE_CHECKING:
    import pandas as pd

OPTRACE_COLUMNS = (
    ("dp_rank", "int32"),
    ("stage", "int32"),
    ("model_chunk", "int32"),
    ("micro_batch", "int32"),
    ("seq_id", "int32"),
)
LAYOUT = "optrace"
# The collective each communicating op type takes part in, for views that group by collective.
_COLL_OP = {"pp_next": "p2p", "pp_prev": "p2p", "dp": "dp", "embedding": "all_reduce", "world": "all_reduce"}


def write_store(job: OpTraceJob, store_dir: Path) -> tuple[Store, list[str]]:
    """Read the job's timeline and write its store; returns the store and the warnings."""
    import pandas as pd

    ops = read_job(job)
    warnings = list(job.warnings)
    unknown = sorted(set(ops["optype"]) - set(BY_NAME))
    if unknown:
        warnings.append(f"{job.files[0]}: op types not in the catalog, read as compute: {', '.join(unknown)}")
    offsets = _step_offsets(ops)
    ops = ops.assign(ts_ns=((offsets.reindex(ops["step"]).to_numpy() + ops["start_ts"].to_numpy()) * 1e9).round())
    _reset(store_dir)
    ranks_meta: dict[str, Any] = {}
    for (dp, stage), part in ops.groupby(["dp_rank", "stage"], sort=True):
        rank = int(part["rank"].iloc[0])
        events = _events(part, rank)
        _write(store_dir / "events" / f"rank-{rank:05d}.parquet", events, EVENTS_COLUMNS + OPTRACE_COLUMNS)
        steps = _steps(events, offsets, rank)
        _write(store_dir / "steps" / f"rank-{rank:05d}.parquet", steps, STEPS_COLUMNS)
        _write(store_dir / "collectives" / f"rank-{rank:05d}.parquet", pd.DataFrame(), COLLECTIVES_COLUMNS)
        ranks_meta[str(rank)] = _rank_meta(job, rank, int(dp), int(stage), len(events), len(steps))
    meta = _meta(job, ranks_meta, warnings)
    write_json_atomic(store_dir / META_NAME, meta)
    _write_ranks(store_dir, ranks_meta)
    return Store(store_dir, meta), warnings


def _reset(store_dir: Path) -> None:
    remove_derived(store_dir)  # only what scope wrote, in a store it claimed


def _step_offsets(ops: pd.DataFrame) -> pd.Series:
    """Each sampled step's start on the store's clock: the steps one after another, 1 ms apart."""
    length = (ops["start_ts"] + ops["duration"]).groupby(ops["step"]).max().sort_index()
    return (length + 1e-3).cumsum().shift(1, fill_value=0.0)


def _events(part: pd.DataFrame, rank: int) -> pd.DataFrame:
    import pandas as pd

    part = part.sort_values(["ts_ns", "optype"], kind="stable")
    names = part["optype"].astype(str)
    known = {name: op_type(name) for name in names.unique()}  # attributes per op type, mapped per event
    streams = {s: i for i, s in enumerate(sorted({t.stream for t in known.values()}))}
    n = len(part)
    comm = names.map({k: t.kind == "comm" for k, t in known.items()}).to_numpy(bool)
    stream = names.map({k: streams[t.stream] for k, t in known.items()}).to_numpy(np.int64)
    return pd.DataFrame(
        {
            "rank": rank,
            "event_id": np.arange(n, dtype=np.int64),
            "ts_ns": part["ts_ns"].to_numpy(np.int64),
            "dur_ns": (part["duration"].to_numpy() * 1e9).round().astype(np.int64),
            "name": part["optype"].to_numpy(),
            "cat": "optrace",
            "kind": np.where(comm, "comm", "compute"),
            "device": 0,
            "stream": stream,
            "thread": stream,
            "pid": part["dp_rank"].to_numpy(np.int64),
            "step": part["step"].to_numpy(np.int32),
            "coll_op": names.map({k: _COLL_OP.get(t.group) if t.kind == "comm" else None for k, t in known.items()}),
            "pg": names.map({k: t.group if t.kind == "comm" else None for k, t in known.items()}),
            "dp_rank": part["dp_rank"].to_numpy(np.int32),
            "stage": part["stage"].to_numpy(np.int32),
            "model_chunk": part["mc"].to_numpy(np.int32),
            "micro_batch": part["mb_id"].to_numpy(np.int32),
            "seq_id": part["seq_id"].to_numpy(np.int32),
        }
    )


def _steps(events: pd.DataFrame, offsets: pd.Series, rank: int) -> pd.DataFrame:
    import pandas as pd

    g = events.groupby("step")
    out = g.agg(end_ns=("ts_ns", "max")).reset_index()
    out["end_ns"] = (events["ts_ns"] + events["dur_ns"]).groupby(events["step"]).max().to_numpy()
    out["start_ns"] = (offsets.reindex(out["step"]).to_numpy() * 1e9).round().astype(np.int64)
    out["rank"] = rank
    out["step_us"] = (out["end_ns"] - out["start_ns"]) / 1e3
    counts = pd.crosstab(events["step"], events["kind"]).reindex(out["step"], fill_value=0)
    for kind in STEP_KINDS:
        out[f"n_{kind}"] = counts[kind].to_numpy(np.int64) if kind in counts.columns else 0
    return out


def _write(path: Path, df: pd.DataFrame, columns: tuple[tuple[str, str], ...]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from scope.ingest.tables import arrow_schema

    schema = arrow_schema(columns)
    arrays = []
    for f in schema:
        if f.name not in df.columns:
            arrays.append(pa.nulls(len(df), type=f.type))
        elif pa.types.is_dictionary(f.type):  # strings, NaN / None as null
            text = pa.array(df[f.name].to_numpy(object), type=pa.string(), from_pandas=True)
            arrays.append(text.dictionary_encode().cast(f.type))
        else:
            arrays.append(pa.array(df[f.name].to_numpy(), type=f.type, from_pandas=True))
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_arrays(arrays, schema=schema), path)


def _rank_meta(job: OpTraceJob, rank: int, dp: int, stage: int, n_events: int, n_steps: int) -> dict[str, Any]:
    st = job.files[0].stat()
    return {
        "files": [str(job.files[0])],
        "inputs": [[str(job.files[0].resolve()), st.st_size, st.st_mtime_ns]],
        "n_events": n_events,
        "n_steps": n_steps,
        "n_collectives": 0,
        "salvaged": False,
        "warnings": [],
        "backend": None,
        "world_size": job.meta.get("world_size"),
        "host_name": None,
        "device_name": None,
        "pg_config": None,
        "dp_rank": dp,
        "stage": stage,
    }


def _meta(job: OpTraceJob, ranks_meta: dict[str, Any], warnings: list[str]) -> dict[str, Any]:
    sizes = {k: job.meta[k] for k in ("dp_size", "pp_size", "tp_size", "vpp_size", "dsp_size") if k in job.meta}
    run: dict[str, Any] = {
        "schema_version": None,
        "world_size": job.meta.get("world_size"),
        "backend": None,
        "hosts": [],
        "source": str(job.folder.resolve()),
        "layout": LAYOUT,
        "traced_ranks": sorted(int(r) for r in ranks_meta),
        "timeline": {"format": job.reader.name, "trial": job.trial, "file": str(job.files[0]), **sizes},
    }
    return {
        "store_version": STORE_VERSION,
        "scope_version": __version__,
        "source": run["source"],
        "layout": LAYOUT,
        "ranks": ranks_meta,
        "warnings": warnings,
        "errors": list(job.skipped),
        "run": run,
    }


def _write_ranks(store_dir: Path, ranks_meta: dict[str, Any]) -> None:
    from scope.ingest import _write_ranks_table

    _write_ranks_table(store_dir, ranks_meta)
