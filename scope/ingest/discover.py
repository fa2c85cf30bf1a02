"""Find the trace files of a run and which rank each belongs to.

Accepts a run directory (ranks/<rank>/traces/), a plain folder of trace files as users have them
today (rank from distributedInfo.rank, else from the file name), or one trace file. Problems that
do not stop the analysis (duplicate ranks, gaps, files with no rank) are collected as warnings that
name the files. Traces of different jobs (another world size, backend or device model) stop it: merged
they would make one run of two (MixedJobsError, the rule for operation timelines too).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scope import rundir
from scope.errors import MixedJobsError, ScopeError, TraceError
from scope.inputs import Inventory, classify, rank_in_name
from scope.manifest import RunManifest


@dataclass
class Discovery:
    root: Path
    layout: str  # "run" | "folder" | "file"
    manifest: RunManifest | None
    files_by_rank: dict[int, list[Path]] = field(default_factory=dict)
    headers: dict[Path, dict[str, Any]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)  # files that are not usable traces at all
    world_size: int | None = None

    @property
    def ranks(self) -> list[int]:
        return sorted(self.files_by_rank)


def discover(inv: Inventory) -> Discovery:
    """The traces of PATH by rank, from its inventory (scope.inputs)."""
    if inv.layout == "store":
        raise ScopeError(f"{inv.path}: a scope store, not an input: analyze the run it was made from")
    if inv.manifest_error is not None:
        raise inv.manifest_error
    layout = inv.layout
    found = Discovery(root=inv.root, layout=layout, manifest=inv.manifest)
    for file, what in inv.irregular:  # named like a trace but a FIFO, a device, a broken link: never opened
        if layout == "file" or classify(file.relative_to(inv.root), layout) == "trace":
            found.warnings.append(rundir.skipped_message(file, what))
    # One file is read as a trace whatever its name (its header decides).
    traces = [e.path for e in inv.entries] if layout == "file" else sorted(inv.traces())
    if layout == "run":
        _assign_run_dir(found, traces)
    else:
        _assign_by_header(found, traces, inv)
    _check_world(found)
    return found


def _assign_run_dir(found: Discovery, traces: list[Path]) -> None:
    """ranks/<r>/traces/ of a run directory: the folder names the rank."""
    for path in traces:
        rank = int(path.relative_to(found.root).parts[1])
        found.files_by_rank.setdefault(rank, []).append(path)
    if found.manifest and found.manifest.world_size:
        found.world_size = found.manifest.world_size


def _assign_by_header(found: Discovery, files: list[Path], inv: Inventory) -> None:
    unassigned: list[Path] = []
    for path in files:
        try:
            header = inv.header(path)
        except TraceError as exc:
            found.unreadable.append(exc.message)
            continue
        except OSError as exc:
            found.unreadable.append(f"{path}: cannot read ({exc.strerror or exc})")
            continue
        found.headers[path] = header
        rank = _rank_of(path, header)
        named = rank_in_name(path.name)
        if rank is not None and named is not None and named != rank:
            found.warnings.append(
                f"{path}: distributedInfo says rank {rank}, the file name rank {named}; "
                f"read as rank {rank} (the profiler's own record)"
            )
        if rank is None:
            unassigned.append(path)
        else:
            found.files_by_rank.setdefault(rank, []).append(path)
    for path in unassigned:
        rank = max(found.files_by_rank, default=-1) + 1
        found.files_by_rank[rank] = [path]
        found.warnings.append(f"{path}: no rank in distributedInfo or in the file name; treated as rank {rank}")
    for rank, paths in sorted(found.files_by_rank.items()):
        if len(paths) > 1:
            names = ", ".join(p.name for p in paths)
            found.warnings.append(
                f"rank {rank} has {len(paths)} trace files ({names}): read as successive profiler windows "
                "of one rank; if they are different jobs, analyze them separately"
            )


def _rank_of(path: Path, header: dict[str, Any]) -> int | None:
    info = header.get("distributedInfo")
    if isinstance(info, dict) and isinstance(info.get("rank"), int):
        return int(info["rank"])
    return rank_in_name(path.name)


def job_identity(header: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """What every rank of one job shares: world size, default backend, device model. A field a trace does
    not record is left out (it neither joins nor splits)."""
    raw = header.get("distributedInfo")
    info: dict[str, Any] = raw if isinstance(raw, dict) else {}
    devices = header.get("deviceProperties")
    models = (
        sorted({str(d.get("name")) for d in devices if isinstance(d, dict) and d.get("name")})
        if isinstance(devices, list)
        else []
    )
    fields = [
        ("world_size", str(info["world_size"]) if isinstance(info.get("world_size"), int) else ""),
        ("backend", str(info.get("backend") or "")),
        ("device", ", ".join(models)),
    ]
    return tuple((k, v) for k, v in fields if v)


def _check_jobs(found: Discovery) -> None:
    """Traces that disagree on what one job's ranks share are different jobs: refuse to merge them."""
    by_job: dict[tuple[tuple[str, str], ...], list[str]] = {}
    for path, header in found.headers.items():
        by_job.setdefault(job_identity(header), []).append(path.name)
    known = {k: v for k, v in by_job.items() if k}
    values: dict[str, set[str]] = {}
    for identity in known:
        for name, value in identity:
            values.setdefault(name, set()).add(value)
    if all(len(v) == 1 for v in values.values()):
        return
    jobs = "; ".join(
        f"{' '.join(f'{k} {v}' for k, v in identity)}: {', '.join(sorted(names)[:4])}"
        + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        for identity, names in sorted(known.items())
    )
    raise MixedJobsError(
        f"{found.root}: holds the traces of {len(known)} different jobs ({jobs}); analyze one job's files at a "
        "time (a folder per job, or one trace file)"
    )


def _check_world(found: Discovery) -> None:
    _check_jobs(found)
    sizes: dict[int, list[str]] = {}
    for path, header in found.headers.items():
        raw = header.get("distributedInfo")
        info: dict[str, Any] = raw if isinstance(raw, dict) else {}
        if isinstance(info.get("world_size"), int):
            sizes.setdefault(info["world_size"], []).append(path.name)
    if found.world_size is None and sizes:
        found.world_size = max(sizes)
    _check_gaps(found)


def _check_gaps(found: Discovery) -> None:
    present = set(found.files_by_rank)
    expected = set(range(found.world_size)) if found.world_size else set()
    if found.manifest:
        expected |= {r.rank for r in found.manifest.ranks}
    missing = sorted(expected - present)
    if missing and present:
        found.warnings.append(
            f"{len(missing)} of {len(expected)} ranks have no trace: missing ranks {compress_ranks(missing)}"
        )
    elif missing:
        found.warnings.append(f"no trace for any of the {len(expected)} ranks")
    beyond = sorted(r for r in present if found.world_size and r >= found.world_size)
    if beyond:
        found.warnings.append(f"ranks {compress_ranks(beyond)} are beyond world_size {found.world_size}")


def compress_ranks(ranks: list[int]) -> str:
    """[0, 1, 2, 5, 7, 8] -> '0-2, 5, 7-8'."""
    parts: list[str] = []
    start: int | None = None
    prev = 0  # the last rank of the run from `start` (set with it)
    for r in sorted(ranks):
        if start is None:
            start = prev = r
        elif r == prev + 1:
            prev = r
        else:
            parts.append(f"{start}-{prev}" if start != prev else f"{start}")
            start = prev = r
    if start is not None:
        parts.append(f"{start}-{prev}" if start != prev else f"{start}")
    return ", ".join(parts)
