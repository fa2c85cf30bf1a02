"""`scope dashboard PATH`: serve the interactive dashboard of one run (read-only, 127.0.0.1 by default)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from scope.errors import EXIT_OK, EXIT_USAGE
from scope.options import bounded

NAME = "dashboard"
HELP = "serve the interactive dashboard of a run (heat-map, timeline, collectives, counters, failure)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", type=Path, help="run directory, folder of traces, or a store")
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)"
    )
    parser.add_argument(
        "--port",
        type=bounded(int, 0, 65535),
        default=os.environ.get("SCOPE_DASHBOARD_PORT", "8050"),  # a string default goes through type=int
        help="port (default $SCOPE_DASHBOARD_PORT, else 8050; 0 picks a free one)",
    )
    parser.add_argument(
        "--token",
        default=os.environ.get("SCOPE_DASHBOARD_TOKEN"),
        help="require this access token on every request (?token=T or header X-Scope-Token; "
        "default: $SCOPE_DASHBOARD_TOKEN). On the command line it shows in `ps` to every user: "
        "prefer the variable or --token-file",
    )
    parser.add_argument(
        "--token-file",
        type=Path,
        default=None,
        metavar="FILE",
        help="read the access token from the first line of FILE (kept out of `ps`)",
    )
    parser.add_argument(
        "--refresh",
        type=bounded(float, 0),
        default=5.0,
        metavar="SECONDS",
        help="re-check the run for new data this often and re-analyze it (0: never; default 5)",
    )
    parser.add_argument("--open", action="store_true", help="open a browser tab")
    parser.add_argument(
        "--compare",
        type=Path,
        default=None,
        metavar="B",
        help="another run (run directory, trace folder or store) for the Compare page: what changed from this run to B",
    )


def run(args: argparse.Namespace) -> int:
    from scope.app.server import serve
    from scope.errors import ScopeError

    if not args.path.exists():
        raise ScopeError(f"{args.path}: no such file or directory")
    if args.compare is not None and not args.compare.exists():
        raise ScopeError(f"--compare {args.compare}: no such file or directory")
    if args.token_file is not None:
        try:
            args.token = args.token_file.read_text().splitlines()[0].strip() if args.token_file.stat().st_size else ""
        except (OSError, IndexError) as exc:
            raise ScopeError(f"--token-file {args.token_file}: cannot read ({exc})", EXIT_USAGE) from None
    serve(
        args.path,
        host=args.host,
        port=args.port,
        token=args.token,
        open_browser=args.open,
        refresh_s=args.refresh,
        compare=args.compare,
    )
    return EXIT_OK
