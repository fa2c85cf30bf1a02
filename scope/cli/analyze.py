"""`scope analyze PATH`: ingest (cached), run every analyzer, print findings then tables."""

from __future__ import annotations

import argparse
import importlib
import json
from pathlib import Path
from typing import Any

from scope.errors import EXIT_OK, EXIT_PARTIAL

NAME = "analyze"
HELP = "analyze a run: findings (stragglers, comm-bound steps, failures, ...) and per-rank, per-step tables"


def _analyzer_modules() -> list[Any]:
    import analyzers

    return [importlib.import_module(name) for name in analyzers.ANALYZERS]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from scope.cli.common import add_engine_arguments

    parser.add_argument("path", type=Path, help="run directory, folder of traces (and logs), or one trace file")
    parser.add_argument("--json", metavar="FILE", default=None, help="write the result as JSON ('-' for stdout)")
    parser.add_argument("--no-tables", action="store_true", help="print findings only")
    add_engine_arguments(parser)
    for module in _analyzer_modules():
        if hasattr(module, "add_arguments"):
            module.add_arguments(parser)


def analyze_path(args: argparse.Namespace) -> tuple[dict[str, Any], bool]:
    """Run ingest and the analyzers; return (report dict, partial input?). Also used by demo and app."""
    import pandas as pd

    from scope.analysis import Context
    from scope.cli.ingest import run_ingest
    from scope.errors import ScopeError
    from scope.ingest.discover import discover
    from scope.report import build_report

    store, partial, warnings = None, False, []
    try:
        report = run_ingest(args)
        store, partial, warnings = report.store, report.partial, report.warnings + report.errors
    except ScopeError as exc:
        if getattr(exc, "stops_analysis", False) or not _has_non_trace_inputs(args.path):
            raise
    options = {k: v for k, v in vars(args).items() if not k.startswith("_")}
    ctx = Context(path=Path(args.path), store=store, options=options)
    findings, tables = [], {}
    for module in _analyzer_modules():
        if not _reads_store(module, store):
            continue
        result = module.analyze(ctx)
        findings.extend(result.findings)
        tables.update(result.tables)
    run = store.run if store else _run_without_store(args.path, discover)
    ranks = store.ranks_table() if store else pd.DataFrame()
    steps = store.steps() if store else pd.DataFrame()
    report_dict = build_report(
        run, ranks.drop(columns=["pg_config"], errors="ignore"), steps, findings, tables, warnings
    )
    if store:
        for name, df in tables.items():
            store.write_table(name, df)
        (store.root / "analysis.json").write_text(json.dumps(report_dict, indent=1))
    return report_dict, partial


def _reads_store(module: Any, store: Any) -> bool:
    """Analyzers of kernel-level traces skip an operation-level timeline (they would misread its ops)."""
    import analyzers

    return store is None or store.meta.get("layout") != "optrace" or module.__name__ in analyzers.OPTRACE_ANALYZERS


def _has_non_trace_inputs(path: Path) -> bool:
    """Logs, dumps or a manifest without traces can still be diagnosed."""
    path = Path(path)
    return path.is_dir() and any(p.is_file() for p in path.rglob("*"))


def _run_without_store(path: Path, discover: Any) -> dict[str, Any]:
    try:
        found = discover(Path(path))
    except Exception:
        return {"source": str(Path(path).resolve())}
    return found.manifest.to_dict() if found.manifest else {"source": str(Path(path).resolve())}


def run(args: argparse.Namespace) -> int:
    from scope.cli.common import stdout, write_json
    from scope.report import render_findings

    report, partial = analyze_path(args)
    if args.json:
        write_json(args.json, report)
    if args.json != "-":
        render_findings(stdout, report["findings"])
        if not args.no_tables:
            _print_tables(stdout, report)
    return EXIT_PARTIAL if partial else EXIT_OK


def _print_tables(console: Any, report: dict[str, Any]) -> None:
    import pandas as pd

    from scope.report import frame_table, steps_table

    if report["steps"]:
        console.print(steps_table(pd.DataFrame(report["steps"])))
    skip = {"scope_version", "run", "ranks", "steps", "findings", "warnings"}
    for name, rows in report.items():
        if name not in skip and isinstance(rows, list) and rows:
            console.print(frame_table(name, pd.DataFrame(rows)))
