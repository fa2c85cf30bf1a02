"""One rank's ingest job and its outcome (data types only; the per-rank entry point is dispatch.py).

Kept free of heavy imports: a worker that parses with the native core never loads pyarrow, pandas
or numpy (their import alone costs more than parsing a trace of a few MB).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from scope.ingest.classify import NO_RULES, Rules
from scope.store import part_path as part_path  # the store owns its layout; re-exported for the rank writers
from scope.warnings import InputWarning

# Timestamps below this (in ns) are offsets from baseTimeNanoseconds, not epoch times (~3 years).
RELATIVE_LIMIT_NS = 10**17
# A baseTimeNanoseconds past this (year 2116) is corrupt: adding it would overflow int64 timestamps.
MAX_BASE_NS = 2**62


@dataclass
class RankJob:
    rank: int
    files: list[str]
    store_dir: str
    clock_offset_ns: int = 0
    rules: Rules = NO_RULES  # the user's communication-kernel rules


@dataclass
class RankOutcome:
    rank: int
    files: list[str]
    n_events: int = 0
    n_steps: int = 0
    n_collectives: int = 0
    # "[memory]" rows: the memory analyzer skips only a rank counted at 0; -1 (not counted: an outcome
    # from another path or an older worker) is read, never silently skipped.
    n_memory: int = -1
    header: dict[str, Any] = field(default_factory=dict)
    # header_summary(header), made where the rank was read (dispatch.ingest_rank), which then lets the
    # header go: a header's pg_config lists every rank of the world, so the driver holding each rank's
    # header held world_size^2 integers (600 MB at 4,096 ranks).
    summary: dict[str, Any] = field(default_factory=dict)
    warnings: list[InputWarning] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    salvaged: bool = False
    # GPU communication kernels by the rule that named them ('nccl', 'catalog:<family>', 'user:<rule>').
    comm_kernels: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.n_events > 0


def run_clock_offset(header: dict[str, Any], max_ts_ns: int | None, clock_offset_ns: int) -> int:
    """What moves one file's timestamps to the run clock: baseTimeNanoseconds when the file's
    timestamps are relative to it, plus the host's clock offset."""
    base = header.get("baseTimeNanoseconds")
    offset = clock_offset_ns
    if isinstance(base, int) and _plausible_base(base) and max_ts_ns is not None and max_ts_ns < RELATIVE_LIMIT_NS:
        offset += base
    return offset


def _plausible_base(base: Any) -> bool:
    return isinstance(base, int) and 0 < base <= MAX_BASE_NS


def base_time_warning(path: str, header: dict[str, Any]) -> InputWarning | None:
    """A warning naming the file when its baseTimeNanoseconds is present but unusable (ignored)."""
    base = header.get("baseTimeNanoseconds")
    if base is None or base == 0 or _plausible_base(base):
        return None
    return InputWarning(
        path, f"baseTimeNanoseconds {str(base)[:40]!r} is not a plausible epoch time", consequence="ignored"
    )


def count_comm_kernels(names: list[str], counts: list[int], source: dict[str, str]) -> dict[str, int]:
    """Kernel launches per rule, from (distinct GPU comm kernel name, launches) pairs."""
    out: dict[str, int] = {}
    for name, n in zip(names, counts, strict=True):
        label = source.get(name, "nccl")
        out[label] = out.get(label, 0) + n
    return out


def header_summary(header: dict[str, Any]) -> dict[str, Any]:
    """What the store keeps of a trace's header (meta.json and the ranks table, per rank): small, whatever
    the world size (pg_config's rank lists as ranges: compact_pg_config)."""
    raw_info, raw_devices = header.get("distributedInfo"), header.get("deviceProperties")
    info: dict[str, Any] = raw_info if isinstance(raw_info, dict) else {}
    devices: list[Any] = raw_devices if isinstance(raw_devices, list) else []
    return {
        "backend": info.get("backend"),
        "world_size": info.get("world_size"),
        "trace_rank": info.get("rank"),
        "pg_count": info.get("pg_count"),
        "pg_config": json.dumps(compact_pg_config(info["pg_config"])) if info.get("pg_config") is not None else None,
        "nccl_version": info.get("nccl_version"),
        "host_name": header.get("host_name"),
        "device_name": devices[0].get("name") if devices and isinstance(devices[0], dict) else None,
        "device_memory": device_memory(devices),
    }


def device_memory(devices: list[Any]) -> int | None:
    """The capacity in bytes of the trace's devices (deviceProperties' totalGlobalMem), the smallest where
    they differ: what the memory analyzer measures headroom against. One number per rank, not one per
    listed device (each rank's trace lists every device of its host)."""
    sizes = [d.get("totalGlobalMem") for d in devices[:1024] if isinstance(d, dict)]
    known = [s for s in sizes if type(s) is int and s > 0]
    return min(known) if known else None


# A group's rank list longer than this is written as ranges (compact_ranks); shorter ones stay a list.
LIST_RANKS_UP_TO = 64


def compact_pg_config(config: Any) -> Any:
    """pg_config with each long rank list written as ranges: Kineto's distributedInfo lists every rank of
    every group the rank is in (the default group: all of them), which is world_size numbers per rank
    and world_size^2 per run (100 MB of meta.json at 4,096 ranks, 1.6 GB at 16,384)."""
    if isinstance(config, list):
        return [compact_pg_config(pg) for pg in config]
    if isinstance(config, dict):
        ranks = config.get("ranks")
        if isinstance(ranks, list) and len(ranks) > LIST_RANKS_UP_TO and all(type(r) is int for r in ranks):
            return {**config, "ranks": compact_ranks(ranks)}
        return {k: compact_pg_config(v) if isinstance(v, dict) else v for k, v in config.items()}
    return config


def compact_ranks(ranks: list[int]) -> str:
    """Ranks as comma-separated runs, exact and in their order: 'a' one rank, 'a-b' every rank from a to b,
    'a-b:s' every s-th ([0..4095] -> '0-4095'; the data-parallel group [3, 11, ..., 4091] -> '3-4091:8')."""
    runs: list[str] = []
    i = 0
    while i < len(ranks):
        j = i + 1
        step = ranks[j] - ranks[i] if j < len(ranks) else 0
        while step > 0 and j + 1 < len(ranks) and ranks[j + 1] - ranks[j] == step:
            j += 1
        if step <= 0 or j - i < 2:  # a lone rank, or two that a run would not shorten
            runs.append(str(ranks[i]))
            i += 1
            continue
        runs.append(f"{ranks[i]}-{ranks[j]}" + (f":{step}" if step != 1 else ""))
        i = j + 1
    return ",".join(runs)
