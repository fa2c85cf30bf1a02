"""`scope sample --out RUN [--seconds S] [--hz F]`: record this host's counters on their own."""

from __future__ import annotations

import argparse
from pathlib import Path

from scope.errors import EXIT_OK, EXIT_PARTIAL, EXIT_USAGE, ScopeError
from scope.options import bounded

NAME = "sample"
HELP = "record this host's GPU, NVLink, InfiniBand, CPU, memory, network and disk counters and kernel errors"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, required=True, help="run directory to write RUN/hosts/<host>/ into")
    parser.add_argument(
        "--seconds", type=bounded(float, 0), default=None, help="stop after S seconds (default: until Ctrl-C)"
    )
    parser.add_argument(
        "--hz", type=bounded(float, 0.01, 10), default=1.0, help="samples per second, at most 10 (default 1)"
    )
    parser.add_argument("--host", default=None, help="host name to file the counters under (default: hostname)")
    parser.add_argument(
        "--chunk-seconds",
        type=bounded(float, 1),
        default=30.0,
        help="seconds of samples per Parquet chunk; a crash loses at most one (default 30)",
    )
    parser.add_argument(
        "--nvml-replay",
        type=Path,
        default=None,
        help="answer NVML calls from a recording instead of the GPUs (demos, tests)",
    )
    parser.add_argument(
        "--ib-root",
        type=Path,
        default=None,
        help="sysfs root of InfiniBand devices (default /sys/class/infiniband)",
    )
    parser.add_argument("--json", default=None, help="write the sampler's status as JSON to FILE ('-' for stdout)")


def _check(args: argparse.Namespace) -> None:
    from scope.collectors.sidecar import MAX_HZ

    if not 0 < args.hz <= MAX_HZ:
        raise ScopeError(f"--hz must be in (0, {MAX_HZ:g}], got {args.hz:g}", EXIT_USAGE)
    if args.seconds is not None and args.seconds <= 0:
        raise ScopeError(f"--seconds must be positive, got {args.seconds:g}", EXIT_USAGE)
    if args.nvml_replay is not None:
        from scope.collectors.sidecar.nvml_replay import ReplayNvml

        ReplayNvml(args.nvml_replay)  # a missing or malformed file: a ScopeError naming it
    if args.out.exists() and not args.out.is_dir():
        raise ScopeError(f"{args.out}: exists and is not a directory", EXIT_USAGE)


def _ensure_manifest(out: Path, host: str) -> None:
    """A plain folder becomes a run directory (status unknown) so other commands can read it."""
    import time

    from scope.manifest import MANIFEST_NAME, HostInfo, RunManifest, write_manifest

    if not (out / MANIFEST_NAME).exists():
        write_manifest(
            out,
            RunManifest(
                run_id=out.name,
                hosts=[HostInfo(host)],
                start_ns=time.time_ns(),
                extra={"sampled": {"host": host}},
            ),
        )


def run(args: argparse.Namespace) -> int:
    import signal

    from scope.cli.common import stderr, stdout, write_json
    from scope.collectors.sidecar import default_host, default_sources
    from scope.collectors.sidecar.sampler import Sampler

    _check(args)
    host = args.host or default_host()
    try:
        args.out.mkdir(parents=True, exist_ok=True)
        _ensure_manifest(args.out, host)
    except OSError as exc:
        raise ScopeError(f"{args.out}: cannot write here ({exc.strerror})") from None
    replay = str(args.nvml_replay) if args.nvml_replay else None
    ib_root = str(args.ib_root) if args.ib_root else None
    sampler = Sampler(args.out, host, default_sources(ib_root=ib_root, nvml_replay=replay), args.hz, args.chunk_seconds)
    previous = signal.signal(signal.SIGTERM, lambda *_: sampler.request_stop())
    until = f"for {args.seconds:g} s" if args.seconds else "until Ctrl-C"
    stderr.print(f"sampling {host} at {args.hz:g} Hz {until} into {args.out}")
    try:
        sampler.run(args.seconds)
    except KeyboardInterrupt:
        pass  # Sampler.run stopped and flushed in its finally
    finally:
        signal.signal(signal.SIGTERM, previous)
    status = sampler.status()
    for name, source in status["sources"].items():
        detail = f"{source['samples']} samples" if source["status"] == "ok" else source["reason"]
        stdout.print(f"{name:<11} {source['status']:<12} {detail}")
    stdout.print(
        f"{status['rows_written']} rows in {status['chunks_written']} chunks under "
        f"{args.out / 'hosts' / host / 'counters'}"
    )
    if args.json:
        write_json(args.json, status)
    lost = status.get("rows_lost", 0)
    if lost:  # a full disk cost rows: said with the count and the disk's words, and the run is partial
        total = lost + status["rows_written"]
        stderr.print(f"scope: {lost:,} of {total:,} rows were not written ({status['write_error']})")
        return EXIT_PARTIAL
    return EXIT_OK
