"""Analyzers declare themselves (scope.analyzer_spec): each record says the finding kinds and tables its analyzer
emits, the options it reads, and the link rules it brings; the CLI flags, option checks and links follow.

Run every analyzer on real inputs (the sample runs, a published Megatron job, a dataloader trace, failure
logs and Flight Recorder dumps, training logs) and check that what it emitted is what its record declares;
check the `kind` literals of the analyzers' code too, since no input makes every finding.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import subprocess
import sys
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from scope import analyzers as registry
from scope.analysis import Result, options_of, parse_options, run
from scope.analyzer_spec import AnalyzerSpec
from scope.cli import build_parser, main
from scope.cli.analyze import analysis_options
from scope.options import RUN_OPTIONS, Option
from tests import source
from tests.conftest import ROOT, shared_data

SAMPLES = ROOT / "sample_traces"
# Flags of `scope analyze` that are about printing, not analysis options.
PRINTING_FLAGS = {"--help", "--json", "--format", "--tables", "--table", "--no-tables", "--quiet"}


class _Emitted:
    """What each analyzer returned, by analyzer name, over every input."""

    def __init__(self) -> None:
        self.kinds: dict[str, set[str]] = defaultdict(set)
        self.tables: dict[str, set[str]] = defaultdict(set)

    def record(self, name: str, result: Result) -> None:
        self.kinds[name].update(f.kind for f in result.findings)
        self.tables[name].update(result.tables)


def _log_folder(tmp: Path, name: str, text: str) -> Path:
    """A folder holding one log, as a job leaves it (`scope analyze` reads a folder of logs, not a lone .txt)."""
    folder = tmp / name
    folder.mkdir()
    (folder / "job.log").write_text(text, encoding="utf-8")
    return folder


def _inputs(tmp: Path) -> Iterator[Path | tuple[Path, dict[str, Any]]]:
    """Real inputs that make the analyzers speak, with options where an analyzer needs them: each is analyzed
    as `scope analyze` would."""
    from benchmarks.failure_corpus import Case, corpus_cases, run_case, sample_cases

    yield from (SAMPLES / name for name in ("healthy", "straggler", "pipeline", "memory", "hang"))
    yield shared_data("kineto_dataloader", "num_workers_0")
    # GPU traces (HTA's test set): communication streams, HTA's own breakdown, MFU against a given peak
    yield shared_data("hta", "trace_filter"), {"hta_compat": True, "peak_tflops": 100.0}
    yield shared_data("nvrx_fr", "gpu_error_1st")
    job = tmp / "AR"  # one published Megatron job, an operation-level timeline (whatif)
    job.mkdir()
    for name in ("trace-AR.parquet", "meta-AR.yaml"):
        shutil.copy(shared_data("straggler_analysis", name), job / name)
    yield job
    # Failure logs: for each failure class of the corpus and the samples, the first case the diagnosis puts in
    # that class (header stripped). Chosen by what the diagnosis says, not by position: the shared corpus grows,
    # and its first case of a class may be one a correct diagnosis puts in another of its expected kinds.
    cases = [*corpus_cases(shared_data("failure_corpus")), *sample_cases(shared_data("failure_log_samples.txt"))]
    first: dict[str, Case] = {}
    for case in cases:
        if case.expected[0] not in first and run_case(case, tmp).got == case.expected[0]:
            first[case.expected[0]] = case
    for i, case in enumerate(first.values()):
        yield _log_folder(tmp, f"case{i}", case.log)
    for log in sorted(shared_data("training_logs").glob("*.txt")):  # the job's life across restarts (goodput)
        yield _log_folder(tmp, log.stem, log.read_text(encoding="utf-8", errors="replace"))


@pytest.fixture(scope="module")
def emitted(tmp_path_factory: pytest.TempPathFactory) -> _Emitted:
    """Every analyzer's findings and tables over the inputs, attributed to the analyzer that returned them."""
    tmp = tmp_path_factory.mktemp("registry")
    seen = _Emitted()
    load = AnalyzerSpec.load

    def recording(spec: AnalyzerSpec) -> Callable[..., Result]:
        analyze = load(spec)

        def wrapped(ctx: Any) -> Result:
            result = analyze(ctx)
            seen.record(spec.name, result)
            return result

        return wrapped

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(AnalyzerSpec, "load", recording)
        for i, given in enumerate(_inputs(tmp)):
            path, options = given if isinstance(given, tuple) else (given, {})
            try:
                run(path, {"store": tmp / f"store{i}", "workers": 1, **options})
            except Exception as exc:  # a refused input is another test's subject, not this one's
                if getattr(exc, "exit_code", None) is None:
                    raise
    return seen


@pytest.mark.slow  # seconds of analysis on real data (the unit tier stays under 120 s)
def test_every_finding_kind_an_analyzer_emits_is_declared_in_its_record(emitted: _Emitted) -> None:
    for spec in registry.ANALYZERS:
        undeclared = emitted.kinds[spec.name] - set(spec.kinds)
        assert not undeclared, f"{spec.name} emitted {sorted(undeclared)}: declare them in its record's kinds"
    everything = set().union(*emitted.kinds.values())
    # The inputs really exercise the analyzers (a test over no findings proves nothing).
    assert {"straggler", "pipeline_bubble", "hang", "oom", "nccl_error", "slow_worker", "input_bound"} <= everything, (
        everything
    )


@pytest.mark.slow  # seconds of analysis on real data (the unit tier stays under 120 s)
def test_every_table_an_analyzer_returns_is_declared_in_its_record(emitted: _Emitted) -> None:
    for spec in registry.ANALYZERS:
        undeclared = emitted.tables[spec.name] - set(spec.tables)
        assert not undeclared, f"{spec.name} returned tables {sorted(undeclared)}: declare them in its record"
    assert {
        "breakdown",
        "budget",
        "straggler_scores",
        "pipeline",
        "fr",
        "whatif_summary",
        "hta_compat",
        "comm_streams",
    } <= set().union(*emitted.tables.values())


# What a finding is made from: diagnose's anomalies, incidents and signature rows become its findings, kind kept.
FINDING_MAKERS = ("Finding", "Anomaly", "Incident", "Signature")


def _literal_kinds(tree: ast.AST) -> set[str]:
    """String kinds written where findings are made: the first argument of `Finding(...)` or kind= of any
    FINDING_MAKERS call, a literal or an if-else of two."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in FINDING_MAKERS
        ):
            continue
        args = [kw.value for kw in node.keywords if kw.arg == "kind"]
        if not args and getattr(node.func, "id", "") == "Finding":
            args = node.args[:1]  # Finding(kind, severity, summary, ...)
        for arg in args:
            options = [arg.body, arg.orelse] if isinstance(arg, ast.IfExp) else [arg]
            out.update(o.value for o in options if isinstance(o, ast.Constant) and isinstance(o.value, str))
    return out


def test_every_kind_literal_in_the_analyzers_code_is_declared() -> None:
    declared = registry.finding_kinds()
    by_file = {
        str(p.relative_to(ROOT)): _literal_kinds(source.tree(p))
        for p in sorted((ROOT / "analyzers").rglob("*.py"))
        if "compare" not in p.parts  # compare reads two analyses; it emits no findings of its own
    }
    undeclared = {f: sorted(kinds - declared) for f, kinds in by_file.items() if kinds - declared}
    assert not undeclared, f"finding kinds no record declares: {undeclared}"
    assert len(set().union(*by_file.values())) >= 20  # the scan sees the analyzers' findings
    # A package analyzer's literals are its own record's kinds.
    for package in ("diagnose", "pipeline", "whatif", "goodput", "memory"):
        spec = registry.analyzer(package)
        found = set().union(*(k for f, k in by_file.items() if f.startswith(f"analyzers/{package}/")))
        assert found and found <= set(spec.kinds), (package, sorted(found - set(spec.kinds)))


def test_every_record_names_a_loadable_analyzer_and_is_unique() -> None:
    names = [spec.name for spec in registry.ANALYZERS]
    assert len(names) == len(set(names)) == 17
    for spec in registry.ANALYZERS:
        assert callable(spec.load()), spec.name
        assert all(callable(rule) for rule in spec.link_rules), spec.name
    assert {"comm_bound_waits_for_straggler", "contention_explains"} <= {r.__name__ for r in registry.link_rules()}
    pages = {path.stem for path in (ROOT / "app" / "pages").glob("*.py")}
    panels = {panel for spec in registry.ANALYZERS for panel in spec.panels}
    assert panels and panels <= pages, sorted(panels - pages)  # a panel is a dashboard page (app/pages/<panel>.py)


def _analyze_flags(parser: argparse.ArgumentParser) -> set[str]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {s for a in sub.choices["analyze"]._actions for s in a.option_strings if s.startswith("--")}


def test_every_option_is_a_generated_flag_and_no_flag_is_written_by_hand() -> None:
    flags = _analyze_flags(build_parser())
    options = {o.flag for o in options_of()}
    assert {o.flag for o in RUN_OPTIONS} <= options
    assert flags - PRINTING_FLAGS == options


# Flags spelled like an analysis option that are another command's own: `scope run --force` writes into a run
# directory that already holds a run (nothing to do with re-parsing a store).
OWN_FLAGS = {("run", "--force")}


def test_no_command_writes_an_analysis_option_flag_by_hand() -> None:
    """Every command that takes an analysis or run option (analyze, compare, ingest, diagnose) takes the flag
    generated from it: the same help, range and default, never a copy that drifts."""
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    by_flag = {o.flag: o for o in options_of()}
    seen = 0
    for command, parser in sub.choices.items():
        for action in parser._actions:
            for flag in action.option_strings:
                if flag in by_flag and (command, flag) not in OWN_FLAGS:
                    assert action.help and action.help.startswith(by_flag[flag].help), (command, flag, action.help)
                    seen += 1
    assert seen >= len(by_flag) + 3  # analyze has them all; ingest, compare and diagnose some


def test_a_new_option_in_a_record_appears_as_a_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    """What adding an analyzer with an option takes: its record, and its line in the registry."""
    knob = Option("toy_threshold", float, 0.5, "a toy analyzer's threshold", metavar="X", low=0, high=1)
    toy = AnalyzerSpec(name="toy", analyze="scope.analyzers.stall:analyze", options=(knob,), kinds=("toy",))
    monkeypatch.setattr(registry, "ANALYZERS", (*registry.ANALYZERS, toy))
    parser = build_parser()
    assert "--toy-threshold" in _analyze_flags(parser)
    args = parser.parse_args(["analyze", "RUN", "--toy-threshold", "0.25"])
    assert analysis_options(args) == {"toy_threshold": 0.25}
    assert parse_options({"toy_threshold": "0.75"}) == {"toy_threshold": 0.75}
    with pytest.raises(SystemExit):  # the declared range is the flag's
        parser.parse_args(["analyze", "RUN", "--toy-threshold", "2"])
    assert "toy" in registry.finding_kinds()


@pytest.mark.subprocess
def test_the_registry_imports_no_heavy_library(tmp_path: Path) -> None:
    code = (
        "import sys, scope.analyzers as a; assert len(a.ANALYZERS) == 17; "
        "print(','.join(m for m in ('pandas', 'numpy', 'pyarrow', 'duckdb') if m in sys.modules))"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "", f"importing the registry loads {proc.stdout.strip()}"


def test_a_record_changed_in_one_place_changes_the_analysis(monkeypatch: pytest.MonkeyPatch) -> None:
    """Dropping an analyzer's line from the registry drops its flags and its link rules: nothing else names it."""
    without = tuple(s for s in registry.ANALYZERS if s.name != "contention")
    monkeypatch.setattr(registry, "ANALYZERS", without)
    assert "contention_explains" not in {r.__name__ for r in registry.link_rules()}
    monkeypatch.setattr(registry, "ANALYZERS", tuple(replace(s, options=()) for s in without))
    assert _analyze_flags(build_parser()) - PRINTING_FLAGS == {o.flag for o in RUN_OPTIONS}


TOY_ANALYZER = '''
"""A toy analyzer, written as a user would add one: its code and its record in one module."""

from scope.analyzer_spec import AnalyzerSpec
from scope.causality import Link
from scope.finding import Finding
from scope.options import Option

LIMIT = Option("toy_limit", int, 3, "how many ranks the toy looks at", metavar="N", low=1)


def analyze(ctx):
    import pandas as pd

    from scope.analysis import Result

    ranks = sorted(ctx.store.ranks)[: ctx.option("toy_limit", LIMIT.default)]
    finding = Finding("toy_note", "warning", f"the toy looked at {len(ranks)} ranks", ranks=ranks)
    return Result(findings=[finding], tables={"toy": pd.DataFrame({"rank": ranks})})


def toy_explains_everything_else(findings):
    toys = [f for f in findings if f.kind == "toy_note"]
    return [Link(toys[0], f, why="toy") for f in findings if toys and f.kind != "toy_note"]


ANALYZER = AnalyzerSpec(
    name="toy",
    analyze=f"{__name__}:analyze",
    options=(LIMIT,),
    tables=("toy",),
    kinds=("toy_note",),
    link_rules=(toy_explains_everything_else,),
)
'''


def test_an_analyzer_added_as_one_module_and_one_registry_line_runs_end_to_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One new module (its code and its record) and one line in the registry: `scope analyze` has its flag, runs
    it, stores its table, and its link rule hangs the other analyzers' findings under its own."""
    (tmp_path / "toy_analyzer.py").write_text(TOY_ANALYZER)
    monkeypatch.syspath_prepend(str(tmp_path))
    import toy_analyzer  # type: ignore[import-not-found]

    monkeypatch.setattr(registry, "ANALYZERS", (*registry.ANALYZERS, toy_analyzer.ANALYZER))  # the one line
    out = tmp_path / "analysis.json"
    store = tmp_path / "store"
    code = main(["analyze", str(SAMPLES / "straggler"), "--store", str(store), "--toy-limit", "2", "--json", str(out)])
    assert code == 0
    data = json.loads(out.read_text())
    [toy] = [f for f in data["findings"] if f["kind"] == "toy_note"]
    assert toy["ranks"] == [0, 1] and data["toy"] == [{"rank": 0}, {"rank": 1}]
    others = [f for f in data["findings"] if f["kind"] != "toy_note"]
    assert others and all(f["caused_by"] == toy["id"] for f in others)
    assert (store / "tables" / "toy.parquet").exists()
