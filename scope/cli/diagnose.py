"""`scope diagnose PATH [--json FILE]`: the root cause of a failed or hung run, its rank, host and evidence."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from scope.errors import EXIT_OK, EXIT_USAGE, ScopeError

if TYPE_CHECKING:
    from scope.inputs import Inventory
    from scope.result import Analysis

NAME = "diagnose"
HELP = "name the root cause of a failed or hung run (logs, Flight Recorder dumps, kernel messages)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from scope.cli.common import add_run_arguments

    parser.add_argument(
        "path",
        type=Path,
        nargs="?",
        help="run directory, or any folder (or file) of logs, dmesg captures and FR dumps",
    )
    parser.add_argument("--json", metavar="FILE", default=None, help="write the diagnosis as JSON ('-' for stdout)")
    add_run_arguments(parser, only=("workers",))
    parser.add_argument(
        "--signatures",
        action="store_true",
        help="list the known error signatures with their origin: scope's, and the user's rows from scope.toml / "
        "[tool.scope] of PATH (or the current folder); with --json: as JSON; then exit",
    )


def run(args: argparse.Namespace) -> int:
    """The diagnose analyzer alone, rendered: its Analysis as text, or as the Analysis JSON (with the
    diagnosis' sections: path, verdict, nccl, inputs, elapsed_s) under --json."""
    from scope.analyzers.diagnose import diagnose
    from scope.cli.common import write_json
    from scope.escapes import strip_escapes
    from scope.render.diagnosis import render_diagnosis

    if args.signatures:
        return _list_signatures(args.json, args.path or Path.cwd())
    if args.path is None:
        raise ScopeError("scope diagnose: a PATH is needed (or --signatures)", EXIT_USAGE)
    from scope.inputs import Inventory

    inputs = Inventory.scan(args.path)  # PATH listed once: the diagnosis and the check below read it
    analysis = diagnose(inputs, workers=args.workers)
    _check_something_read(Path(args.path), analysis, inputs)
    if args.json:
        write_json(args.json, analysis.to_dict())
    if args.json != "-":
        print(strip_escapes(render_diagnosis(analysis)), end="")  # nothing a log holds reaches the terminal raw
    return analysis.exit_code


def _list_signatures(json_path: str | None, where: Path) -> int:
    from dataclasses import asdict

    from scope.analyzers.diagnose.knowledge.signatures import SIGNATURES
    from scope.analyzers.diagnose.knowledge.user_signatures import find_user_signatures
    from scope.cli.common import write_json
    from scope.render import terminal_width, wrap

    user = find_user_signatures(where)
    rows = (*user, *SIGNATURES)  # in the order they are tried: the user's first
    if json_path:
        write_json(json_path, {"signatures": [asdict(s) for s in rows]})
        if json_path == "-":
            return EXIT_OK
    width = terminal_width()
    for s in rows:
        origin = "" if s.origin == "scope" else f", from {s.origin}"
        lines = wrap(f"{s.id}  [{s.kind}, {s.cause}, confidence {s.confidence}{origin}]", width, "", "  ")
        for name, value in (
            ("means", s.meaning),
            ("fix", s.remedy),
            ("era", s.era),
            ("source", s.reference),
            ("match", " | ".join(s.patterns)),
        ):
            lines += wrap(value, width, f"  {name + ':':<8}", " " * 10)
        print("\n".join(lines))
    mine = f" and {len(user)} of the user's ({user[0].origin})" if user else ""
    print(f"{len(SIGNATURES)} signatures of scope's{mine}")
    return EXIT_OK


def _check_something_read(path: Path, analysis: Analysis, inputs: Inventory) -> None:
    """Files, but not one log or dump read among them: say so (exit 3) rather than "No failure found".
    Only here, not in diagnose(): `scope analyze` diagnoses folders of traces alone, where nothing to
    read is normal."""
    read = analysis.sections.get("inputs") or {}
    if read.get("logs") or read.get("dumps") or read.get("ranks"):
        return
    # the input's own files the post-mortem looks at (its inventory lists no store, nothing hidden)
    files = [e.path for e in inputs.evidence()] if path.is_dir() else []
    if not files:
        return
    names = ", ".join(p.name for p in files[:5]) + (f" and {len(files) - 5} more" if len(files) > 5 else "")
    why = f" ({'; '.join(map(str, analysis.warnings[:5]))})" if analysis.warnings else ""
    raise ScopeError(
        f"{path}: nothing to diagnose: no readable log, Flight Recorder dump or kernel messages among {names}{why}"
    )
