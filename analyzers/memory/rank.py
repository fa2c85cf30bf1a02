"""One rank's memory, reduced from its "[memory]" events to a few rows (the per-rank pass of the memory
analyzer: a worker reads one rank's memory table, never every rank's).

Each device the rank allocated on (the CPU, cuda:N, hip:N) gets: its peak allocated and reserved (the
trace's own maximum "Total Allocated", exactly), the level at each step's start and end and the step's
peak, and a timeline cut into a fixed number of bins (the maximum in each) for the dashboard.

Traces before PyTorch 1.10 carry "Bytes" alone: the level is then the running sum of the events from the
profile's start, and the frees of blocks allocated before it make that sum fall below zero. The sum is
lifted by what those frees released (a lower bound on what was held when the profile began), and the
problem is reported with its figures.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from scope.analyzers.memory.attribution import ALLOCATOR_COLUMNS, peak_allocators

from scope.store import part_path

# Device Type as the profiler writes it (c10::DeviceType): 0 CPU, 1 CUDA, 6 HIP (ROCm builds).
DEVICE_TYPES = {0: "cpu", 1: "cuda", 6: "hip"}
# Bins of each device's timeline (the dashboard's heat-map columns and per-rank lines).
TIMELINE_BINS = 200

RANK_COLUMNS = [
    "rank",
    "device",
    "source",
    "events",
    "peak_allocated",
    "peak_reserved",
    "peak_ts_ns",
    "peak_step",
    "reserved_at_peak",
    "unallocated_at_peak",
    "start_allocated",
    "end_allocated",
    "growth_per_step",
    "growing_steps",
    "steps",
    "unmatched_frees",
    "unmatched_free_bytes",
    "total_mismatches",
]
STEP_COLUMNS = ["rank", "device", "step", "start_allocated", "end_allocated", "peak_allocated", "peak_reserved"]
TIMELINE_COLUMNS = ["rank", "device", "bin", "start_ns", "end_ns", "allocated", "reserved"]


@dataclass
class MemoryJob:
    root: str
    rank: int


@dataclass
class RankMemory:
    """A rank's memory rows: one per device, one per device and step, TIMELINE_BINS per device."""

    rank: int
    devices: pd.DataFrame
    steps: pd.DataFrame
    timeline: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    allocators: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=ALLOCATOR_COLUMNS))


def device_label(device_type: int, device_id: int) -> str:
    name = DEVICE_TYPES.get(device_type, f"device_type_{device_type}")
    return name if name == "cpu" or device_id < 0 else f"{name}:{device_id}"


def read_memory(root: str | Path, rank: int) -> pd.DataFrame:
    """The rank's memory events in time order (stable: the trace's order among equal timestamps)."""
    import pyarrow.parquet as pq

    path = part_path(Path(root), "memory", rank)
    if not path.is_file():
        return pd.DataFrame()
    events = pq.ParquetFile(path).read(use_threads=False).to_pandas()
    return events.sort_values("ts_ns", kind="stable").reset_index(drop=True)


def rank_memory(job: MemoryJob) -> RankMemory:
    """The rank's memory rows, from one read of its memory table and its steps."""
    events = read_memory(job.root, job.rank)
    out = RankMemory(job.rank, pd.DataFrame(columns=RANK_COLUMNS), pd.DataFrame(), pd.DataFrame())
    if events.empty:
        return out
    import pyarrow.parquet as pq

    steps_path = part_path(Path(job.root), "steps", job.rank)
    steps = (
        pq.read_table(steps_path, columns=["step", "start_ns", "end_ns"]).to_pandas() if steps_path.is_file() else None
    )
    devices, per_step, timeline, allocators = [], [], [], []
    for (dtype, did), rows in events.groupby(["device_type", "device_id"], sort=True):
        label = device_label(int(dtype), int(did))
        level = device_level(rows, label, job.rank)
        allocators.append(peak_allocators(job.root, job.rank, label, rows, int(np.argmax(level.allocated))))
        devices.append(level.summary)
        out.notes += level.notes
        step_rows = step_levels(level, steps)
        if not step_rows.empty:
            per_step.append(step_rows)
            level.summary.update(growth(step_rows))
        timeline.append(bins(level))
    out.devices = pd.DataFrame(devices, columns=RANK_COLUMNS)
    out.steps = pd.concat(per_step, ignore_index=True) if per_step else pd.DataFrame(columns=STEP_COLUMNS)
    out.timeline = pd.concat(timeline, ignore_index=True)
    found = [a for a in allocators if not a.empty]
    if found:
        out.allocators = pd.concat(found, ignore_index=True)
    return out


def rank_memory_or_none(job: MemoryJob) -> RankMemory | None:
    """rank_memory in a worker, None for a rank without memory rows or notes: the coordinator then
    unpickles nothing for it (four empty frames a rank, held by the thousand, were most of what the
    memory pass cost it)."""
    part = rank_memory(job)
    frames = (part.devices, part.steps, part.timeline, part.allocators)
    return None if all(f.empty for f in frames) and not part.notes else part


@dataclass
class Level:
    """One device's allocated and reserved bytes after each of its events."""

    rank: int
    device: str
    ts: np.ndarray
    allocated: np.ndarray
    reserved: np.ndarray  # -1 where the trace does not record it
    summary: dict[str, object]
    notes: list[str]


def device_level(rows: pd.DataFrame, device: str, rank: int) -> Level:
    ts = rows["ts_ns"].to_numpy(dtype=np.int64)
    nbytes = rows["bytes"].to_numpy(dtype=np.int64)
    total = rows["total_allocated"].to_numpy(dtype=np.int64)
    reserved = rows["total_reserved"].to_numpy(dtype=np.int64)
    unmatched, unmatched_bytes = _unmatched_frees(rows["addr"].to_numpy(dtype=np.int64), nbytes)
    notes: list[str] = []
    if (total >= 0).all():
        allocated, source = total, "totals"
        # Between two events the total moves by the later one's Bytes; where it does not, events were
        # lost or several threads' events interleave at one timestamp. Counted, not corrected.
        mismatches = int(np.count_nonzero(np.diff(total) != nbytes[1:]))
    else:
        running = np.cumsum(nbytes)
        lift = max(0, -int(running.min()))
        allocated, source, mismatches = running + lift, "running_sum", 0
        reserved = np.full(len(ts), -1, dtype=np.int64)
        notes.append(_running_sum_note(rank, device, len(ts), unmatched, unmatched_bytes, lift))
    peak = int(np.argmax(allocated))
    peak_reserved = int(reserved.max())
    summary: dict[str, object] = {
        "rank": rank,
        "device": device,
        "source": source,
        "events": len(ts),
        "peak_allocated": int(allocated[peak]),
        "peak_reserved": peak_reserved if peak_reserved >= 0 else -1,
        "peak_ts_ns": int(ts[peak]),
        "peak_step": -1,
        "reserved_at_peak": int(reserved[peak]),
        # what the caching allocator held beyond the allocations at their peak (the CPU reserves nothing)
        "unallocated_at_peak": int(reserved[peak] - allocated[peak]) if reserved[peak] > 0 else -1,
        "start_allocated": int(allocated[0] - nbytes[0]),
        "end_allocated": int(allocated[-1]),
        "growth_per_step": 0.0,
        "growing_steps": 0,
        "steps": 0,
        "unmatched_frees": unmatched,
        "unmatched_free_bytes": unmatched_bytes,
        "total_mismatches": mismatches,
    }
    return Level(rank, device, ts, allocated, reserved, summary, notes)


def _unmatched_frees(addr: np.ndarray, nbytes: np.ndarray) -> tuple[int, int]:
    """Frees of blocks whose allocation the trace does not hold (made before the profile began)."""
    if (addr < 0).all():
        return 0, 0
    seen: set[int] = set()
    count = freed = 0
    for a, b in zip(addr.tolist(), nbytes.tolist(), strict=True):
        if b > 0:
            seen.add(a)
        elif b < 0:
            if a in seen:
                seen.discard(a)
            else:
                count += 1
                freed -= b
    return count, freed


def _running_sum_note(rank: int, device: str, n: int, frees: int, freed: int, lift: int) -> str:
    what = f"rank {rank} {device}: the trace's {n} memory events carry no Total Allocated (PyTorch before 1.10)"
    how = "memory is the running sum of their Bytes from the profile's start"
    if lift:
        held = f"{frees} frees ({freed / 2**20:.1f} MiB) of blocks allocated before the profile" if frees else ""
        why = f"{held + '; ' if held else ''}the sum fell to {-lift / 2**20:.1f} MiB and is lifted by that much"
        return f"{what}; {how}: {why}, a lower bound on what was held when the profile began"
    return f"{what}; {how} (levels are relative to what was held when the profile began)"


def step_levels(level: Level, steps: pd.DataFrame | None) -> pd.DataFrame:
    """Per step: the level at its start and end, and its peaks (empty without step marks)."""
    if steps is None or steps.empty:
        return pd.DataFrame(columns=STEP_COLUMNS)
    steps = steps.drop_duplicates("step").sort_values("start_ns")
    start = steps["start_ns"].to_numpy(dtype=np.int64)
    end = steps["end_ns"].to_numpy(dtype=np.int64)
    before = int(level.summary["start_allocated"])  # type: ignore[call-overload]
    lo = np.searchsorted(level.ts, start, side="left")
    hi = np.searchsorted(level.ts, end, side="right")
    rows = []
    for i, step in enumerate(steps["step"].tolist()):
        a, b = int(lo[i]), int(hi[i])
        at_start = int(level.allocated[a - 1]) if a > 0 else int(before)
        at_end = int(level.allocated[b - 1]) if b > 0 else int(before)
        peak = int(level.allocated[a:b].max()) if b > a else max(at_start, at_end)
        res = int(level.reserved[a:b].max()) if b > a else -1
        rows.append((level.rank, level.device, int(step), at_start, at_end, peak, res))
        if b > a and int(level.allocated[a:b].argmax()) + a == int(np.argmax(level.allocated)):
            level.summary["peak_step"] = int(step)
    return pd.DataFrame(rows, columns=STEP_COLUMNS)


def growth(steps: pd.DataFrame) -> dict[str, object]:
    """The slope of the level at step boundaries (bytes per step; a leak keeps it positive), and at how
    many of the boundaries it grew."""
    ends = steps["end_allocated"].to_numpy(dtype=np.float64)
    out: dict[str, object] = {"steps": len(ends), "growth_per_step": 0.0, "growing_steps": 0}
    if len(ends) >= 2:
        x = np.arange(len(ends), dtype=np.float64)
        out["growth_per_step"] = float(round(np.polyfit(x, ends, 1)[0]))
        out["growing_steps"] = int(np.count_nonzero(np.diff(ends) > 0))
    return out


def bins(level: Level) -> pd.DataFrame:
    """The device's timeline in TIMELINE_BINS equal spans: the highest level in each (the level carried
    into spans without events)."""
    lo, hi = int(level.ts[0]), int(level.ts[-1]) + 1
    edges = np.linspace(lo, hi, TIMELINE_BINS + 1).astype(np.int64)
    which = np.clip(np.searchsorted(edges, level.ts, side="right") - 1, 0, TIMELINE_BINS - 1)
    allocated = pd.Series(level.allocated).groupby(which).max().reindex(range(TIMELINE_BINS)).ffill().fillna(0)
    reserved = pd.Series(level.reserved).groupby(which).max().reindex(range(TIMELINE_BINS)).ffill().fillna(-1)
    return pd.DataFrame(
        {
            "rank": level.rank,
            "device": level.device,
            "bin": np.arange(TIMELINE_BINS, dtype=np.int32),
            "start_ns": edges[:-1],
            "end_ns": edges[1:],
            "allocated": allocated.to_numpy(dtype=np.int64),
            "reserved": reserved.to_numpy(dtype=np.int64),
        }
    )
