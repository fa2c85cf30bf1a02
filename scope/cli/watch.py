"""`scope watch RUN`: live detection on a run already going (any node that sees its directory), or a
replay of a recorded run or operation timeline as if live."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from scope.errors import EXIT_INPUT, EXIT_OK, ScopeError
from scope.options import bounded

NAME = "watch"
HELP = "name stragglers, hangs and slow collectives of a running job as its steps arrive (or replay a run)"

USAGE_TAIL = """
examples:
  scope watch runs/r1                                   # a run going under `scope run`
  scope watch runs/r1 --metrics-port 9464 --alert-url http://alerts:8080/hook
  scope watch runs/r1 --replay                          # a finished run, step by step as if live
  scope watch traces/trace-AR.parquet                   # an operation timeline, replayed
"""


def add_live_arguments(parser: argparse.ArgumentParser) -> None:
    """The live detector's options, shared with `scope run`."""
    live = parser.add_argument_group("live detection")
    live.add_argument(
        "--metrics-port", type=bounded(int, 0, 65535), default=None, metavar="PORT", help="serve Prometheus metrics"
    )
    live.add_argument(
        "--alert-cmd", default=None, metavar="CMD", help="run CMD (shell) once per new finding and once when it clears"
    )
    live.add_argument("--alert-url", default=None, metavar="URL", help="POST each new or cleared finding as JSON")
    live.add_argument(
        "--hang-floor",
        type=bounded(float, 0.5),
        default=None,
        metavar="S",
        help="a live hang needs 10 typical steps without progress and at least S seconds (default 10)",
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = USAGE_TAIL
    parser.add_argument("run_dir", type=Path, metavar="RUN", help="run directory (or an operation timeline file)")
    parser.add_argument("--replay", action="store_true", help="replay the recorded steps instead of following")
    parser.add_argument(
        "--interval", type=bounded(float, 0.05, 60), default=0.5, metavar="S", help="seconds between looks"
    )
    parser.add_argument(
        "--for", dest="duration", type=bounded(float, 0), default=None, metavar="S", help="stop after S seconds"
    )
    parser.add_argument("--json", action="store_true", help="one JSON object per event on stdout")
    add_live_arguments(parser)


def run(args: argparse.Namespace) -> int:
    path: Path = args.run_dir
    if not path.exists():
        raise ScopeError(f"{path}: no such file or directory", EXIT_INPUT)
    if args.replay or not (path / "ranks").is_dir():
        return _replay(path, args)
    if _ended(path):  # nothing more will come: its steps as they came, not a hang of a finished job
        print(f"scope watch: the run ended ({_status(path)}): replaying its steps", file=sys.stderr)
        return _replay(path, args)
    return _follow(path, args)


def _say(args: argparse.Namespace) -> Any:
    def say(line: str) -> None:
        if not args.json:
            print(line, flush=True)

    return say


def _follow(path: Path, args: argparse.Namespace) -> int:
    from scope.live.monitor import build_monitor

    monitor = build_monitor(
        path,
        metrics_port=args.metrics_port,
        alert_cmd=args.alert_cmd,
        alert_url=args.alert_url,
        hang_floor_s=args.hang_floor,
        say=_say(args),
    )
    if monitor.metrics is not None:
        print(f"scope watch: metrics on :{monitor.metrics.port}/metrics", file=sys.stderr)
    start = time.monotonic()
    try:
        while True:
            for event in monitor.tick():
                if args.json:
                    print(json.dumps(event.to_dict(), default=str), flush=True)
            if _ended(path):
                monitor.tick()
                print(f"scope watch: the run ended ({_status(path)})", file=sys.stderr)
                break
            if args.duration is not None and time.monotonic() - start >= args.duration:
                break
            time.sleep(args.interval)
    except KeyboardInterrupt:
        pass
    finally:
        monitor.close()
    return EXIT_OK


def _status(path: Path) -> str:
    from scope.manifest import read_manifest

    try:
        return read_manifest(path).status
    except ScopeError:
        return "unknown"


def _ended(path: Path) -> bool:
    return _status(path) not in ("running", "unknown")


def _replay(path: Path, args: argparse.Namespace) -> int:
    from scope.live.replay import optrace_samples, replay, run_dir_samples

    samples = run_dir_samples(path) if (path / "ranks").is_dir() else optrace_samples(path)
    if not samples:
        raise ScopeError(f"{path}: no step progress to replay (ranks/<r>/progress.jsonl)", EXIT_INPUT)
    result = replay(samples, look_s=args.interval)
    for event in result.events:
        if args.json:
            print(json.dumps(event.to_dict(), default=str))
        else:
            print(f"step {event.step}: {event.line()}")
    if not args.json:
        print(f"scope watch: replayed {result.steps} steps of {len(result.detector.stragglers.rows)} ranks; "
              f"{sum(e.action == 'new' for e in result.events)} finding(s)")  # fmt: skip
    return EXIT_OK
