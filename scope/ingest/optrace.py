"""Operation-level timelines (coarse tracers: one event per forward, backward, send, collective, ...).

A job is the files of one trial <T> in a folder: `trace-<T>.parquet` (ByteDance's NDTimeline export:
`dp_rank, stage, rank, step, optype, start_ts, duration, seq_id, mc, gmc, mb_id`, seconds) and/or
`timeline-<T>.json[.gz]` (the same as a Chrome trace: pid = DP rank, threads named "PP rank S, ...";
µs), with `meta-<T>.yaml` (dp / pp / tp / vpp sizes). Each reader turns its format into one frame
with the parquet's columns; another tracer (e.g. Megatron's timers) is one more entry in READERS.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scope.errors import MixedJobsError, TraceError

if TYPE_CHECKING:
    import pandas as pd

    from scope.inputs import Inventory

OP_COLUMNS = ("dp_rank", "stage", "rank", "step", "optype", "start_ts", "duration", "seq_id", "mc", "gmc", "mb_id")
REQUIRED = ("dp_rank", "stage", "step", "optype", "start_ts", "duration")
_META = re.compile(r"^meta-(?P<trial>.+)\.ya?ml$")


@dataclass(frozen=True)
class Reader:
    """One format: which file names it reads (the trial name is group 'trial') and how."""

    name: str
    pattern: re.Pattern[str]
    read: Callable[[Path, dict[str, Any]], pd.DataFrame]


@dataclass
class OpTraceJob:
    trial: str
    folder: Path
    files: list[Path]  # the file read, then others that hold the same job
    reader: Reader
    meta: dict[str, Any] = field(default_factory=dict)
    meta_path: Path | None = None
    warnings: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # files that could not be read (the report's errors)


def read_meta(path: Path) -> dict[str, Any]:
    """The flat `key: value` YAML of the job's sizes (no YAML library needed for it)."""
    meta: dict[str, Any] = {}
    for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        key, sep, value = line.partition(":")
        if not sep:
            raise TraceError(str(path), f"line {n} is not `key: value`")
        value = value.strip().strip("'\"")
        meta[key.strip()] = int(value) if re.fullmatch(r"-?\d+", value) else value
    return meta


def _read_parquet(path: Path, meta: dict[str, Any]) -> pd.DataFrame:
    import pyarrow.parquet as pq

    try:
        df = pq.read_table(path).to_pandas()
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise TraceError(str(path), f"not a readable Parquet file ({exc})") from None
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise TraceError(str(path), f"not an operation timeline: missing columns {', '.join(missing)}")
    return normalize(df, meta)


def _read_chrome(path: Path, meta: dict[str, Any]) -> pd.DataFrame:
    import pandas as pd

    try:
        opener = gzip.open if path.name.endswith(".gz") else open
        with opener(path, "rt") as fh:
            data = json.load(fh)
    except (OSError, EOFError, ValueError) as exc:
        raise TraceError(str(path), f"not a readable JSON timeline ({exc})") from None
    events = data.get("traceEvents", []) if isinstance(data, dict) else data
    if not isinstance(events, list):
        raise TraceError(str(path), "no traceEvents list")
    stage_of = _stages_by_thread(events)
    rows = []
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "X" or not isinstance(e.get("args"), dict):
            continue
        args = e["args"]
        if "step" not in args or not isinstance(e.get("ts"), (int, float)):
            continue
        tid = e.get("tid", 0)
        rows.append(
            {
                "dp_rank": int(e.get("pid", 0)),
                "stage": stage_of.get((e.get("pid"), tid), tid if isinstance(tid, int) else 0),
                "step": int(args["step"]),
                "optype": str(e.get("name", "")),
                "start_ts": float(e["ts"]) / 1e6,
                "duration": float(e.get("dur", 0.0)) / 1e6,
                "seq_id": int(args.get("seq_id", -1)),
                "mc": int(args.get("model_chunk", -1)),
                "mb_id": int(args.get("mb_id", -1)),
            }
        )
    if not rows:
        raise TraceError(str(path), "no complete ('X') events with args.step: not an operation timeline")
    return normalize(pd.DataFrame(rows), meta)


_PP_RANK = re.compile(r"PP rank (\d+)", re.IGNORECASE)


def _stages_by_thread(events: list[Any]) -> dict[tuple[Any, Any], int]:
    """Threads named "PP rank S, TP rank T, <stream>" carry their stage; otherwise tid is the stage."""
    out = {}
    for e in events:
        if isinstance(e, dict) and e.get("ph") == "M" and e.get("name") == "thread_name":
            match = _PP_RANK.search(str((e.get("args") or {}).get("name", "")))
            if match:
                out[(e.get("pid"), e.get("tid"))] = int(match.group(1))
    return out


def normalize(df: pd.DataFrame, meta: dict[str, Any]) -> pd.DataFrame:
    """The common frame: every OP_COLUMN present, times relative to each step's first op (seconds)."""
    df = df.copy()
    df["optype"] = df["optype"].astype(str)
    df["start_ts"] = df["start_ts"].astype("float64")
    df["duration"] = df["duration"].astype("float64").clip(lower=0.0)
    for col in ("dp_rank", "stage", "step"):
        df[col] = df[col].astype("int64")
    # The parquet restarts its clock at each step; the Chrome form runs one clock: align both.
    df["start_ts"] -= df.groupby("step")["start_ts"].transform("min")
    if "seq_id" not in df.columns or (df["seq_id"] < 0).all():
        df["seq_id"] = df.sort_values("start_ts").groupby(["step", "dp_rank", "stage", "optype"]).cumcount()
    for col in ("mc", "gmc", "mb_id"):
        if col not in df.columns:
            df[col] = -1
    if "rank" not in df.columns:
        df["rank"] = global_rank(df["dp_rank"], df["stage"], meta)
    return df[list(OP_COLUMNS)].reset_index(drop=True)


def global_rank(dp_rank: Any, stage: Any, meta: dict[str, Any]) -> Any:
    """Megatron's rank of TP rank 0 of a (DP rank, stage) worker: stage-major, then DP, then TP."""
    dp = int(meta.get("dp_size") or (int(dp_rank.max()) + 1))
    tp = int(meta.get("tp_size") or 1)
    return (stage * dp + dp_rank) * tp


READERS: tuple[Reader, ...] = (
    Reader("ndtimeline-parquet", re.compile(r"^trace-(?P<trial>.+)\.parquet$"), _read_parquet),
    Reader("chrome-timeline", re.compile(r"^timeline-(?P<trial>.+)\.json(\.gz)?$"), _read_chrome),
)


def _match(path: Path) -> tuple[Reader, str] | None:
    for reader in READERS:
        m = reader.pattern.match(path.name)
        if m:
            return reader, m.group("trial")
    return None


def find_job(inputs: Inventory) -> OpTraceJob | None:
    """The operation-level job at PATH (a file of a known form, or a folder holding one job), else None;
    a folder's files are those its inventory lists (scope.inputs)."""
    path = inputs.path
    if inputs.layout == "file":  # a FIFO or a device is listed as irregular: no entry, never opened
        if not inputs.entries:
            return None
        hit = _match(path)
        if hit is None or (hit[0].name == "chrome-timeline" and not _meta_path(path.parent, hit[1])):
            return None  # a Chrome timeline without its meta is left to the Kineto reader
        return _job(path.parent, hit[1], [path])
    by_trial: dict[str, list[Path]] = {}
    top = sorted(inputs.top_files())
    for p in top:
        hit = _match(p)
        if hit and (hit[0].name != "chrome-timeline" or _meta_path(path, hit[1])):
            by_trial.setdefault(hit[1], []).append(p)
    if not by_trial:
        return None
    if len(by_trial) > 1:
        raise MixedJobsError(
            f"{path}: holds the operation timelines of {len(by_trial)} jobs ({', '.join(sorted(by_trial))}); "
            "analyze one job's files (trace-<T>.parquet / timeline-<T>.json.gz with meta-<T>.yaml) at a time"
        )
    trial, files = next(iter(by_trial.items()))
    return _job(path, trial, files)


def _meta_path(folder: Path, trial: str) -> Path | None:
    for ext in ("yaml", "yml"):
        p = folder / f"meta-{trial}.{ext}"
        if p.is_file():
            return p
    return None


def _job(folder: Path, trial: str, files: list[Path]) -> OpTraceJob:
    # The parquet carries the traced waits; the Chrome form trims them. Prefer the parquet.
    files = sorted(files, key=lambda p: [r.name for r in READERS].index(_match(p)[0].name))  # type: ignore[index]
    reader = _match(files[0])[0]  # type: ignore[index]
    job = OpTraceJob(trial=trial, folder=folder, files=files, reader=reader, meta_path=_meta_path(folder, trial))
    if job.meta_path:
        job.meta = read_meta(job.meta_path)
    else:
        job.warnings.append(f"{folder}: no meta-{trial}.yaml beside {files[0].name}: sizes taken from the trace")
    return job


def read_job(job: OpTraceJob) -> pd.DataFrame:
    """The job's ops from its first readable file: a damaged parquet costs only itself when the Chrome
    form of the same job is beside it (the problem is kept in job.warnings)."""
    problems: list[TraceError] = []
    for path in job.files:
        hit = _match(path)
        assert hit is not None
        try:
            ops = hit[0].read(path, job.meta)
        except TraceError as exc:
            problems.append(exc)
            continue
        job.skipped.extend(f"{p.message}; read {path.name} instead" for p in problems)
        job.files = [path, *[p for p in job.files if p != path]]
        job.reader = hit[0]
        if len(job.files) > 1:
            others = ", ".join(p.name for p in job.files[1:])
            job.warnings.append(f"read {path.name}; {others} hold the same job")
        return ops
    raise problems[0]
