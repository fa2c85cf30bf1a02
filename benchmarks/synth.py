"""Synthesize an N-rank run directory from real traces, for scale tests and benchmarks.

    .venv/bin/python benchmarks/synth.py --ranks N --from PATH --out DIR [--straggler R[,R...]] [--seed S]

Each synthetic rank is built from one real source rank (round-robin) with:
- per-rank jitter: every step of the rank is stretched by a factor drawn around 1 (deterministic seed);
- injected stragglers: the chosen ranks' steps are stretched by `straggler_factor` (everything on that
  rank runs slower, so its collectives also start last);
- per-host clock offsets: each host's timestamps are shifted by a random offset, and `run.json` records
  the correction (`hosts[].clock_offset_ns`) so ingest puts every rank back on one clock.

Writing thousands of ranks must be fast, so only a few *variants* of each source rank are encoded and
gzip-compressed once (the events body); each rank's file is a small gzip member with its own header
(rank, world size, host, base time) followed by the shared compressed body. A gzip file of several
members is standard gzip, read by scope's reader, zcat and Python's gzip alike.

Known simplification: healthy ranks do not wait longer in collectives for a synthetic straggler (a
real job would show that); the straggler itself is slower in compute and arrives last.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from scope.errors import ScopeError
from scope.ingest.discover import discover
from scope.inputs import Inventory
from scope.manifest import HostInfo, RankInfo, RunManifest, write_manifest
from scope.options import bounded

_MAX_RANKS = 131072  # benchmarks/scale.py runs 131,072 ranks on a Dask cluster
# Above this world size a header lists no rank of its default group (pg_config's `ranks`): the list
# alone is 0.9 MB of JSON per rank at 131,072 ranks, 118 GB over the run; its size and name stay.
_LISTED_RANKS_MAX = 16384


@dataclass
class SynthSpec:
    ranks: int
    source: Path
    out: Path
    ranks_per_host: int = 8
    jitter: float = 0.02
    variants: int = 4
    stragglers: list[int] = field(default_factory=list)
    straggler_factor: float = 1.6
    max_clock_offset_us: float = 2000.0
    seed: int = 0


def synthesize(spec: SynthSpec) -> RunManifest:
    if not 1 <= spec.ranks <= _MAX_RANKS:
        raise ScopeError(f"--ranks must be between 1 and {_MAX_RANKS}, got {spec.ranks}")
    bad = [r for r in spec.stragglers if not 0 <= r < spec.ranks]
    if bad:
        raise ScopeError(f"straggler ranks {bad} are outside 0..{spec.ranks - 1}")
    sources = _source_traces(spec.source)
    rng = random.Random(spec.seed)
    host_offsets = _host_offsets_ns(spec, rng)
    bodies = _encode_variants(sources, spec, rng)
    manifest = _manifest(spec, host_offsets)
    for rank in range(spec.ranks):
        src = rank % len(sources)
        key = ("straggler", src, 0) if rank in spec.stragglers else ("healthy", src, rank % spec.variants)
        body, base_ns, header = bodies[key]
        host = _host_name(rank, spec)
        _write_rank(spec, rank, host, header, base_ns + host_offsets[host], body)
    write_manifest(spec.out, manifest)
    return manifest


def _source_traces(source: Path) -> list[dict[str, Any]]:
    found = discover(Inventory.scan(source))
    if not found.files_by_rank:
        raise ScopeError(f"{source}: no trace to synthesize from")
    traces = []
    for rank in found.ranks:
        path = found.files_by_rank[rank][0]
        opener = gzip.open if path.name.endswith(".gz") else open
        with opener(path, "rb") as fh:
            data = msgspec.json.decode(fh.read())
        if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
            raise ScopeError(f"{path}: not a Kineto trace")
        traces.append(data)
    return traces


def _host_name(rank: int, spec: SynthSpec) -> str:
    return f"node{rank // spec.ranks_per_host:04d}"


def _host_offsets_ns(spec: SynthSpec, rng: random.Random) -> dict[str, int]:
    hosts = {_host_name(r, spec) for r in range(spec.ranks)}
    offsets = {h: int(rng.uniform(-1, 1) * spec.max_clock_offset_us * 1000) for h in sorted(hosts)}
    offsets[_host_name(0, spec)] = 0  # the reference host
    return offsets


def _encode_variants(sources: list[dict[str, Any]], spec: SynthSpec, rng: random.Random) -> dict[tuple, Any]:
    bodies: dict[tuple, Any] = {}
    for src, trace in enumerate(sources):
        base_ns, events = _relative_events(trace)
        header = {k: v for k, v in trace.items() if k not in ("traceEvents", "baseTimeNanoseconds")}
        for v in range(spec.variants):
            factors = _step_factors(events, lambda: 1.0 + rng.uniform(-spec.jitter, spec.jitter))
            bodies[("healthy", src, v)] = (_compress_body(_stretch(events, factors)), base_ns, header)
        if spec.stragglers:
            factors = _step_factors(
                events, lambda: spec.straggler_factor * (1 + rng.uniform(-spec.jitter, spec.jitter))
            )
            bodies[("straggler", src, 0)] = (_compress_body(_stretch(events, factors)), base_ns, header)
    return bodies


def _relative_events(trace: dict[str, Any]) -> tuple[int, list[dict[str, Any]]]:
    """Events with ts relative to a base time (ns), whatever form the source used."""
    events = [e for e in trace["traceEvents"] if isinstance(e, dict) and isinstance(e.get("ts"), (int, float))]
    base = trace.get("baseTimeNanoseconds")
    first = min((e["ts"] for e in events), default=0.0)
    if isinstance(base, int) and first < 1e14:  # already relative to baseTimeNanoseconds
        return base, events
    start_us = int(first)
    for e in events:
        e["ts"] = e["ts"] - start_us
    return start_us * 1000, events


def _step_factors(events: list[dict[str, Any]], draw: Any) -> list[tuple[float, float, float]]:
    """(start, end, factor) for each ProfilerStep window, in time order."""
    steps = sorted(
        (e["ts"], e["ts"] + e.get("dur", 0)) for e in events if str(e.get("name", "")).startswith("ProfilerStep#")
    )
    if not steps:
        first = min((e["ts"] for e in events), default=0.0)
        last = max((e["ts"] + e.get("dur", 0) for e in events), default=0.0)
        steps = [(first, last)]
    return [(s, e, draw()) for s, e in steps]


def _stretch(events: list[dict[str, Any]], factors: list[tuple[float, float, float]]) -> list[dict[str, Any]]:
    """Stretch each step window by its factor; later events shift by the time added before them."""
    out = []
    for e in events:
        ts = e["ts"]
        new = dict(e)
        shift = 0.0
        for start, end, f in factors:
            if ts >= end:
                shift += (end - start) * (f - 1)
                continue
            if ts >= start:
                new["ts"] = round(start + shift + (ts - start) * f, 3)
                if "dur" in e:
                    new["dur"] = round(e["dur"] * f, 3)
                break
            new["ts"] = round(ts + shift, 3)
            break
        else:
            new["ts"] = round(ts + shift, 3)
        out.append(new)
    return out


def _compress_body(events: list[dict[str, Any]]) -> bytes:
    body = b'"traceEvents": [\n' + b",\n".join(msgspec.json.encode(e) for e in events) + b"\n]}\n"
    return gzip.compress(body, compresslevel=1)


def _write_rank(spec: SynthSpec, rank: int, host: str, header: dict[str, Any], base_ns: int, body: bytes) -> None:
    info = dict(header.get("distributedInfo") or {})
    info.update({"rank": rank, "world_size": spec.ranks})
    info["pg_config"] = [
        {
            "pg_name": "0",
            "pg_desc": "default_pg",
            "backend_config": info.get("backend", ""),
            "pg_size": spec.ranks,
        }
    ]
    if spec.ranks <= _LISTED_RANKS_MAX:
        info["pg_config"][0]["ranks"] = list(range(spec.ranks))
    info["pg_count"] = 1
    head = dict(header)
    head.update({"distributedInfo": info, "host_name": host, "baseTimeNanoseconds": base_ns})
    text = json.dumps(head)[:-1] + ", "  # leave the object open: the body closes it
    folder = spec.out / "ranks" / str(rank) / "traces"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "synth.pt.trace.json.gz", "wb") as fh:
        fh.write(gzip.compress(text.encode(), compresslevel=1))
        fh.write(body)


def _manifest(spec: SynthSpec, host_offsets: dict[str, int]) -> RunManifest:
    ranks_of: dict[str, list[int]] = {}
    for r in range(spec.ranks):  # one pass: a pass per host was 131,072 x 16,384 name builds
        ranks_of.setdefault(_host_name(r, spec), []).append(r)
    hosts = [HostInfo(name=h, ranks=ranks_of[h], clock_offset_ns=-off) for h, off in sorted(host_offsets.items())]
    return RunManifest(
        run_id=f"synth-{spec.ranks}",
        command=["python", "benchmarks/synth.py", "--ranks", str(spec.ranks), "--from", str(spec.source)],
        world_size=spec.ranks,
        hosts=hosts,
        ranks=[RankInfo(rank=r, host=_host_name(r, spec), exit_code=0) for r in range(spec.ranks)],
        status="completed",
        clock={"source": "synthetic", "unit": "ns", "reference_host": _host_name(0, spec)},
        ground_truth={
            "scenario": "synthetic",
            "fault": "straggler" if spec.stragglers else "none",
            "stragglers": spec.stragglers,
            "factor": spec.straggler_factor,
            "source": str(spec.source),
        },
    )


def _rank_list(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="synthesize an N-rank run (jitter, per-host clock offsets, injected stragglers) from real traces"
    )
    parser.add_argument(
        "--ranks", type=bounded(int, 1, _MAX_RANKS), required=True, help=f"number of ranks to make (1..{_MAX_RANKS})"
    )
    parser.add_argument(
        "--from",
        dest="source",
        type=Path,
        required=True,
        help="real traces: a run directory, a folder of traces (e.g. sample_traces/...) or a file",
    )
    parser.add_argument("--out", type=Path, required=True, help="run directory to write")
    parser.add_argument("--ranks-per-host", type=bounded(int, 1), default=8)
    parser.add_argument(
        "--jitter", type=bounded(float, 0, 1), default=0.02, help="per-rank step-time jitter (fraction)"
    )
    parser.add_argument("--straggler", type=_rank_list, default=[], metavar="R[,R...]", help="ranks to slow down")
    parser.add_argument("--straggler-factor", type=bounded(float, 1), default=1.6)
    parser.add_argument("--clock-offset-us", type=float, default=2000.0, help="largest per-host clock offset")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    spec = SynthSpec(
        ranks=args.ranks,
        source=args.source,
        out=args.out,
        ranks_per_host=args.ranks_per_host,
        jitter=args.jitter,
        stragglers=args.straggler,
        straggler_factor=args.straggler_factor,
        max_clock_offset_us=args.clock_offset_us,
        seed=args.seed,
    )
    try:
        manifest = synthesize(spec)
    except ScopeError as exc:
        print(f"synth: {exc}", file=sys.stderr)
        return exc.exit_code
    stragglers = f" (stragglers: {args.straggler})" if args.straggler else ""
    print(f"wrote {manifest.world_size} ranks on {len(manifest.hosts)} hosts to {args.out}{stragglers}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
