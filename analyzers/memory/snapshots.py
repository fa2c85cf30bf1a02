"""The allocator snapshots in the input (torch.cuda.memory._dump_snapshot pickles), each read safely,
replayed and judged: tables memory_snapshots (one row per snapshot and device) and memory_peak_sites (the
stacks that held each peak), and a fragmentation finding where the reserve is mostly stranded free space.
A snapshot that cannot be read costs only itself: a warning names it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from scope.analyzers.memory.findings import EXPANDABLE, FRAGMENT_MIN_BYTES, FRAGMENT_MIN_SHARE, GIB, MIB
from scope.analyzers.memory.flame import FLAME_COLUMNS, peak_flame
from scope.analyzers.memory.frames import module_of, op_of
from scope.analyzers.memory.lod import TIMELINE_COLUMNS, level_bins
from scope.analyzers.memory.snapshot import (
    Replay,
    Site,
    devices_of,
    open_annotations,
    peak_sites,
    phase_of_annotations,
    replay,
    reserve,
)

from scope.analysis import Context
from scope.errors import ScopeError
from scope.finding import Finding
from scope.memory_snapshot import Snapshot, load_snapshot, looks_like_snapshot
from scope.warnings import InputWarning

SNAPSHOT_COLUMNS = [
    "file",
    "rank",
    "device",
    "format",
    "entries",
    "peak_allocated",
    "initial_allocated",
    "peak_time_us",
    "reserved",
    "allocated",
    "internal_free",
    "external_free",
    "largest_free_block",
    "stranded_free",
    "expandable_segments",
    "oom_events",
    "peak_annotations",
    "peak_phase",
]
SITE_COLUMNS = ["file", "rank", "device", "order", "site", "bytes", "blocks", "phase", "module", "op", "stack"]


def snapshot_files(ctx: Context) -> list[tuple[Path, int | None]]:
    """Files of the input that are snapshots by their first bytes (kind `other`: no name says so), with
    the rank their place says (ranks/<r>/memory/ under `scope run`, else a rank in the name)."""
    if ctx.inputs is None:
        return []
    found = []
    for entry in ctx.inputs.of_kind("other"):
        try:
            with open(entry.path, "rb") as fh:
                head = fh.read(96)
        except OSError:
            continue
        if looks_like_snapshot(head):
            found.append((entry.path, entry.rank))
    return sorted(found, key=lambda pr: str(pr[0]))


def analyze_snapshots(ctx: Context) -> tuple[dict[str, pd.DataFrame], list[Finding], list[InputWarning]]:
    found, warnings = SnapshotRows(), []
    for path, rank in snapshot_files(ctx):
        try:
            snap = load_snapshot(path)
            found.add(snapshot_rows(snap, rank))  # a stack is read when asked: it may be the bomb
        except ScopeError as exc:
            warnings.append(InputWarning(str(path), str(exc).removeprefix(f"{path}: "), consequence="skipped"))
    if not found.rows:
        return {}, [], warnings
    table = pd.DataFrame(found.rows, columns=SNAPSHOT_COLUMNS)
    tables = {
        "memory_snapshots": table,
        "memory_peak_sites": pd.DataFrame(found.sites, columns=SITE_COLUMNS),
        "memory_peak_flame": pd.DataFrame(found.flames, columns=FLAME_COLUMNS),
        "memory_snapshot_timeline": pd.DataFrame(found.timeline, columns=TIMELINE_COLUMNS),
    }
    return tables, fragmentation(table), warnings


@dataclass
class SnapshotRows:
    """The rows one or more snapshots give each table."""

    rows: list[dict[str, object]] = field(default_factory=list)  # memory_snapshots
    sites: list[dict[str, object]] = field(default_factory=list)  # memory_peak_sites
    flames: list[tuple[object, ...]] = field(default_factory=list)  # memory_peak_flame
    timeline: list[tuple[object, ...]] = field(default_factory=list)  # memory_snapshot_timeline

    def add(self, other: SnapshotRows) -> None:
        self.rows += other.rows
        self.sites += other.sites
        self.flames += other.flames
        self.timeline += other.timeline


def snapshot_rows(snap: Snapshot, rank: int | None) -> SnapshotRows:
    """Each device's row of memory_snapshots, its peak sites, flame-graph nodes and timeline at a bounded
    level of detail. The device is replayed once and its replay shared by all four (the replay is most
    of the analysis's time)."""
    out = SnapshotRows()
    rank_value = -1 if rank is None else rank
    for device in devices_of(snap):
        rep = replay(snap, device)
        sites_at_peak = peak_sites(snap, rep)
        out.rows.append(device_row(snap, rank_value, rep, sites_at_peak))
        where = {"file": str(snap.path), "rank": rank_value, "device": device}
        out.sites += [{**where, "order": order, **site_row(site)} for order, site in enumerate(sites_at_peak)]
        out.flames += [(*where.values(), *node) for node in peak_flame(snap, rep)]
        out.timeline += [(*where.values(), *span) for span in level_bins(rep)]
    return out


def device_row(snap: Snapshot, rank: int, rep: Replay, sites_at_peak: list[Site]) -> dict[str, object]:
    res = reserve(snap, rep.device)
    when = int(rep.times_us[rep.peak_entry]) if rep.peak_entry >= 0 else -1
    marks = open_annotations(snap, rep.device, when)
    return {
        "file": str(snap.path),
        "rank": rank,
        "device": rep.device,
        "format": snap.format,
        "entries": len(rep.times_us),
        "peak_allocated": rep.peak_bytes,
        "initial_allocated": rep.initial_bytes,
        "peak_time_us": when,
        "reserved": res.reserved,
        "allocated": res.allocated,
        "internal_free": res.internal_free,
        "external_free": res.external_free,
        "largest_free_block": res.largest_free_block,
        "stranded_free": res.stranded,
        "expandable_segments": res.expandable,
        "oom_events": len(rep.oom_entries),
        "peak_annotations": " > ".join(marks),
        # the phase the annotations name at the peak, else the phase of the largest site's stack
        "peak_phase": phase_of_annotations(marks) or (sites_at_peak[0].phase if sites_at_peak else ""),
    }


def site_row(site: Site) -> dict[str, object]:
    return {
        "site": site.site,
        "bytes": site.bytes,
        "blocks": site.blocks,
        "phase": site.phase,
        "module": module_of(site.stack),
        "op": op_of(site.stack),
        "stack": "\n".join(f"{n} {f}:{ln}" for f, ln, n in site.stack[:16]),
    }


def fragmentation(table: pd.DataFrame) -> list[Finding]:
    """Snapshots whose reserve is mostly free space in segments of the wrong size (not expandable)."""
    frag = table[
        (table["external_free"] >= FRAGMENT_MIN_BYTES)
        & (table["external_free"] >= FRAGMENT_MIN_SHARE * table["reserved"])
        & ~table["expandable_segments"]
    ]
    out = []
    for row in frag.itertuples():
        size = (
            f"{row.external_free / GIB:.2f} GiB"
            if row.external_free >= GIB / 4
            else f"{row.external_free / MIB:.0f} MiB"
        )
        who = f"rank {row.rank} " if row.rank >= 0 else ""
        out.append(
            Finding(
                kind="fragmentation",
                severity="warning",
                summary=(
                    f"{who}cuda:{row.device}: {size} of the {row.reserved / GIB:.2f} GiB reserved is free space inside "
                    f"cached segments (largest free block {row.largest_free_block / MIB:.0f} MiB): a request larger "
                    f"than that needs new memory although the cache holds enough"
                ),
                ranks=[int(row.rank)] if row.rank >= 0 else [],
                evidence=[str(row.file)],
                metrics={
                    "source": "snapshot",
                    "reserved_bytes": int(row.reserved),
                    "allocated_bytes": int(row.allocated),
                    "external_free_bytes": int(row.external_free),
                    "internal_free_bytes": int(row.internal_free),
                    "largest_free_block_bytes": int(row.largest_free_block),
                    "expandable_recovers_up_to_bytes": int(row.external_free),
                },
                suggestion=f"Set {EXPANDABLE}: free space then stays in one growing segment that any request size "
                "can use, up to the external free shown.",
            )
        )
    return out
