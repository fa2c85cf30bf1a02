"""The `scope` command line: one module per subcommand under scope/cli/.

Each subcommand module defines NAME, HELP, `add_arguments(parser)` and `run(args) -> int`, and
keeps heavy imports inside `run` so `scope --help` stays fast. Register a new one in COMMANDS.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import traceback
from collections.abc import Sequence
from types import ModuleType

from scope import __version__
from scope.errors import EXIT_INTERNAL, EXIT_USAGE, ScopeError

COMMANDS = (
    "scope.cli.ingest",
    "scope.cli.analyze",
    "scope.cli.compare",
    "scope.cli.diagnose",
    "scope.cli.sample",
    "scope.cli.run",
    "scope.cli.attach",
    "scope.cli.demo",
    "scope.cli.dashboard",
    "scope.cli.synth",
)

EPILOG = """exit codes: 0 ok; 1 internal error; 2 usage; 3 unusable input; 4 finished with inputs
skipped or salvaged (see warnings); 5 the training job failed (run, demo); 6 run B slower than A
(compare --fail-if-slower)."""


def _load_commands() -> list[ModuleType]:
    return [importlib.import_module(name) for name in COMMANDS]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="scope",
        description="Cluster performance profiler and failure diagnoser for distributed PyTorch training.",
        epilog=EPILOG,
    )
    parser.add_argument("--version", action="version", version=f"scope {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _load_commands():
        cmd = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.add_arguments(cmd)
        cmd.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    if not getattr(args, "_run", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(args._run(args))
    except ScopeError as exc:
        print(f"scope: error: {exc.message}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("scope: interrupted", file=sys.stderr)
        return 130
    except Exception:
        traceback.print_exc()
        print("scope: internal error (a bug in scope; please report it with the trace above)", file=sys.stderr)
        return EXIT_INTERNAL


def entry_point() -> None:
    sys.exit(main())
