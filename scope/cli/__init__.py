"""The `scope` command line: one module per subcommand under scope/cli/.

Each subcommand module defines NAME, HELP, `add_arguments(parser)` and `run(args) -> int`, and
keeps heavy imports inside `run` so `scope --help` stays fast. Register a new one in COMMANDS.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import sys
import traceback
from collections.abc import Sequence
from types import ModuleType

from scope import __version__
from scope.errors import DISK_ERRNOS, EXIT_INPUT, EXIT_INTERNAL, EXIT_USAGE, ScopeError

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
    "scope.cli.goodput",
    "scope.cli.watch",
)

EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a command whose reader went away
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
    from scope.engine import use_system_allocator

    use_system_allocator()  # before anything imports pyarrow
    parser = build_parser()
    try:
        args, extras = parser.parse_known_args(argv)
        if extras:
            _unrecognized(parser, getattr(args, "command", None), extras)
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
    except BrokenPipeError:
        return _reader_went_away()
    except OSError as exc:
        if exc.errno in DISK_ERRNOS:  # the disk refused a write: say which file and why, not "a bug in scope"
            return _disk_refused(exc)
        return _internal_error()
    except Exception:
        return _internal_error()


def _internal_error() -> int:
    traceback.print_exc()
    print("scope: internal error (a bug in scope; please report it with the trace above)", file=sys.stderr)
    return EXIT_INTERNAL


def _disk_refused(exc: OSError) -> int:
    where = exc.filename or "a file scope writes"
    print(f"scope: error: {where}: {exc.strerror}; free space there or write elsewhere (--store)", file=sys.stderr)
    return EXIT_INPUT


def _unrecognized(parser: argparse.ArgumentParser, command: str | None, extras: list[str]) -> None:
    """Report unknown arguments with the usage of the command they were given to (not the top-level
    one), and for a misspelled option the closest one it has: `--stragler-threshold` -> did you mean
    `--straggler-threshold`? Exits 2, as argparse does."""
    target = parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            target = action.choices[command]
    known = [o for action in target._actions for o in action.option_strings if o.startswith("--")]
    hints = []
    for extra in extras:
        name = extra.split("=", 1)[0]
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.75) if name.startswith("--") else []
        if close:
            hints.append(f"{name}: did you mean {close[0]}?")
    target.error(f"unrecognized arguments: {' '.join(extras)}" + "".join(f"\n  {h}" for h in hints))


def _reader_went_away() -> int:
    """The output's reader closed the pipe (`scope diagnose --signatures | head`): it has all it wants.
    Stop quietly, as a command killed by SIGPIPE does (exit 141), and send what is still buffered to
    /dev/null, so that Python's flush at exit does not report the closed pipe a second time."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return EXIT_BROKEN_PIPE


def entry_point() -> None:
    code = main()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        code = _reader_went_away()
    sys.exit(code)
