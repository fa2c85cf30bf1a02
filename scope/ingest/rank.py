"""Ingest one rank: its trace files -> events Parquet + its steps and collectives (the map stage).

Runs in a worker process; holds only this rank's events, as columns.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from scope.errors import TraceError
from scope.ingest.classify import Classifier, classifier_for
from scope.ingest.columns import chunk_to_batch, finish_table
from scope.ingest.job import (
    RankJob,
    RankOutcome,
    base_time_warning,
    count_comm_kernels,
    header_summary,
    part_path,
    run_clock_offset,
)
from scope.ingest.masks import equals
from scope.ingest.memory_rows import MEMORY_SCHEMA, memory_batch, memory_table
from scope.ingest.reader import TraceReader
from scope.ingest.recover import negative_dur_warning
from scope.ingest.sessions import concurrent_steps_warning, several_ranks_warning
from scope.ingest.tables import collectives_of, steps_of
from scope.store import no_leftover
from scope.warnings import InputWarning

__all__ = ["RankJob", "RankOutcome", "equals", "header_summary", "ingest_rank_python", "part_path"]


def ingest_rank_python(job: RankJob) -> RankOutcome:
    """The pure-Python path (msgspec + pyarrow): used without the native core, and as its reference."""
    outcome = RankOutcome(rank=job.rank, files=list(job.files))
    tables: list[pa.Table] = []
    memory: list[pa.Table] = []
    next_id = 0
    classifier = classifier_for(job.rules)
    for path in job.files:
        try:
            table, header, report_warnings, salvaged, consumed, mem = _read_file(
                Path(path), job.rank, next_id, classifier
            )
        except TraceError as exc:
            outcome.errors.append(exc.message)
            continue
        except OSError as exc:
            outcome.errors.append(f"{path}: cannot read ({exc.strerror or exc})")
            continue
        next_id += consumed
        outcome.warnings.extend(report_warnings)
        outcome.salvaged |= salvaged
        outcome.header = outcome.header or header
        offset = _run_clock_offset(table, header, job.clock_offset_ns)
        tables.append(_shift(table, offset))
        memory.append(memory_table(mem, offset))
    events = pa.concat_tables(tables, promote_options="permissive") if tables else finish_table([])
    events = events.sort_by([("ts_ns", "ascending")]) if events.num_rows else events
    outcome.comm_kernels = _kernel_counts(events, classifier)
    mem_table = pa.concat_tables(memory) if memory else MEMORY_SCHEMA.empty_table()
    _write_rank(job, events, mem_table, outcome)
    return outcome


def _kernel_counts(events: pa.Table, classifier: Classifier) -> dict[str, int]:
    """GPU communication kernel launches per rule that named them."""
    if events.num_rows == 0:
        return {}
    mask = equals(events.column("kind"), "comm") & (events.column("device").to_numpy() >= 0)
    if not mask.any():
        return {}
    names = pc.value_counts(events.column("name").filter(pa.array(mask)).combine_chunks()).to_pylist()
    return count_comm_kernels([str(v["values"]) for v in names], [v["counts"] for v in names], classifier.source)


def _read_file(
    path: Path, rank: int, first_id: int, classifier: Classifier
) -> tuple[pa.Table, dict[str, Any], list[InputWarning], bool, int, list[pa.RecordBatch]]:
    reader = TraceReader(path)
    batches = []
    memory = []
    consumed = 0
    negative = 0
    for chunk in reader.chunks():
        negative += sum(1 for e in chunk if e.dur * 1000 < -0.5 and e.ph == "X")  # what rounds below 0 ns
        batch, n = chunk_to_batch(chunk, rank, first_id + consumed, classifier)
        consumed += n
        batches.append(batch)
        mem = memory_batch(chunk, rank)
        if mem is not None:
            memory.append(mem)
    report = reader.report
    table = finish_table(batches)
    mixed = several_ranks_warning(str(path), report.recovery.sessions) or concurrent_steps_warning(
        str(path), _step_windows(table)
    )
    salvaged = report.truncated or report.recovery.skipped > 0 or mixed is not None
    warnings = report.warnings + negative_dur_warning(str(path), negative)
    warnings += [w for w in [base_time_warning(str(path), report.header), mixed] if w]
    return table, report.header, warnings, salvaged, consumed, memory


def _step_windows(table: pa.Table) -> list[tuple[object, int, int]]:
    """(thread, start, end) of each ProfilerStep event of one file's table."""
    rows = np.flatnonzero(equals(table.column("kind"), "step")) if table.num_rows else np.zeros(0, dtype=np.int64)
    if rows.size == 0:
        return []
    take = pa.array(rows)
    threads = table.column("thread").take(take).to_numpy()
    starts = table.column("ts_ns").take(take).to_numpy()
    ends = starts + table.column("dur_ns").take(take).to_numpy()
    return list(zip(threads.tolist(), starts.tolist(), ends.tolist(), strict=True))


def _run_clock_offset(table: pa.Table, header: dict[str, Any], clock_offset_ns: int) -> int:
    """Relative timestamps get baseTimeNanoseconds added; every timestamp gets the host's clock offset."""
    max_ts = pc.max(table.column("ts_ns")).as_py() if table.num_rows else None
    return run_clock_offset(header, max_ts, clock_offset_ns)


def _shift(table: pa.Table, offset: int) -> pa.Table:
    if offset and table.num_rows:
        idx = table.schema.get_field_index("ts_ns")
        table = table.set_column(idx, "ts_ns", pc.add(table.column("ts_ns"), pa.scalar(offset, pa.int64())))
    return table


def _write_rank(job: RankJob, events: pa.Table, memory: pa.Table, outcome: RankOutcome) -> None:
    events = assign_steps(events)
    events = resolve_generic_comm(events)
    steps = steps_of(events)
    collectives = collectives_of(events, outcome.header)
    written = (("events", events), ("steps", steps), ("collectives", collectives), ("memory", memory))
    for name, table in written:
        path = part_path(Path(job.store_dir), name, job.rank)
        path.parent.mkdir(parents=True, exist_ok=True)
        with no_leftover(path.with_suffix(".tmp")) as tmp:
            pq.write_table(table, tmp, compression="zstd", row_group_size=256_000)
            tmp.replace(path)
    outcome.n_events = events.num_rows
    outcome.n_steps = steps.num_rows
    outcome.n_collectives = collectives.num_rows
    outcome.n_memory = memory.num_rows


def assign_steps(events: pa.Table) -> pa.Table:
    """Each event's ProfilerStep: CPU events by time, GPU events through their launch's correlation id."""
    if events.num_rows == 0:
        return events
    ts = events.column("ts_ns").to_numpy()
    step_idx = np.flatnonzero(equals(events.column("kind"), "step"))
    if step_idx.size == 0:
        return events
    step_names = events.column("name").take(pa.array(step_idx)).to_pylist()
    numbers = np.array([_step_number(n) for n in step_names], dtype=np.int32)
    starts = ts[step_idx]
    ends = starts + events.column("dur_ns").to_numpy()[step_idx]
    order = np.argsort(starts, kind="stable")
    starts, ends, numbers = starts[order], ends[order], numbers[order]
    pos = np.searchsorted(starts, ts, side="right") - 1
    inside = (pos >= 0) & (ts < ends[np.clip(pos, 0, None)])
    step = np.where(inside, numbers[np.clip(pos, 0, None)], -1).astype(np.int32)
    step = _gpu_steps_from_launch(events, step)
    idx = events.schema.get_field_index("step")
    return events.set_column(idx, "step", pa.array(step, pa.int32()))


def _step_number(name: str) -> int:
    try:
        return int(name.split("#", 1)[1])
    except (IndexError, ValueError):
        return -1


def _gpu_steps_from_launch(events: pa.Table, step: np.ndarray) -> np.ndarray:
    device = events.column("device").to_numpy()
    corr = events.column("correlation").to_numpy()
    gpu = (device >= 0) & (corr >= 0)
    cpu = (device < 0) & (corr >= 0)
    if not gpu.any() or not cpu.any():
        return step
    cpu_corr, cpu_step = corr[cpu], step[cpu]
    order = np.argsort(cpu_corr, kind="stable")
    cpu_corr, cpu_step = cpu_corr[order], cpu_step[order]
    gpu_idx = np.flatnonzero(gpu)
    pos = np.clip(np.searchsorted(cpu_corr, corr[gpu_idx]), 0, len(cpu_corr) - 1)
    found = cpu_corr[pos] == corr[gpu_idx]
    step = step.copy()
    step[gpu_idx[found]] = cpu_step[pos[found]]
    return step


def resolve_generic_comm(events: pa.Table) -> pa.Table:
    """RCCL's ncclDevKernel_Generic (and kernels without args) take op, sizes and group from the
    record_param_comms op enclosing their launch on the CPU."""
    from scope.ingest.generic import fill_from_launch_ops, fill_from_param_comms

    return fill_from_launch_ops(fill_from_param_comms(events))
