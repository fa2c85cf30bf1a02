"""scope.analysis.run as a library: a typed Analysis, options as data, save/load through the store."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from scope.analyzers import analyzer
from scope.analyzers.stragglers_spec import STRAGGLER_THRESHOLD

from scope.analysis import Option, options_of, parse_options, run
from scope.cli import build_parser
from scope.cli.analyze import analysis_options
from scope.errors import EXIT_USAGE, ScopeError
from scope.finding import Finding
from scope.result import REPORT_KEYS, Analysis
from scope.store import Store, analysis_path, part_path
from tests.helpers import context

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_traces" / "straggler"


@pytest.fixture(scope="module")
def straggler(tmp_path_factory: pytest.TempPathFactory) -> tuple[Analysis, Path]:
    store = tmp_path_factory.mktemp("lib") / "store"
    return run(SAMPLE, {"store": store}), store


def test_run_returns_a_typed_analysis_that_names_the_injected_straggler(straggler: tuple[Analysis, Path]) -> None:
    analysis, store = straggler
    truth = json.loads((SAMPLE / "ground_truth.json").read_text())
    assert all(isinstance(f, Finding) for f in analysis.findings)
    kinds = {f.kind for f in analysis.findings if truth["fault_rank"] in f.ranks}
    assert "straggler" in kinds
    assert sorted(analysis.steps["rank"].unique()) == [0, 1, 2, 3]
    assert {"breakdown", "collectives", "straggler_scores"} <= set(analysis.tables)
    assert analysis.exit_code == 0 and analysis_path(store).is_file()


def test_save_then_load_round_trips_the_json_contract(straggler: tuple[Analysis, Path]) -> None:
    analysis, store = straggler
    loaded = Analysis.load(store)
    assert loaded is not None
    assert [f.to_dict() for f in loaded.findings] == [f.to_dict() for f in analysis.findings]
    saved = json.loads(analysis_path(store).read_text())
    assert list(saved)[: len(REPORT_KEYS)] == list(REPORT_KEYS)
    assert saved == loaded.to_dict() | {"scope_version": saved["scope_version"]}
    assert loaded.tables["breakdown"]["rank"].dtype.kind == "i"  # parquet keeps the types JSON loses


def test_load_is_tolerant_of_unknown_and_missing_keys(tmp_path: Path) -> None:
    finding = {"kind": "straggler", "severity": "warning", "summary": "s", "from_the_future": 1}
    analysis_path(tmp_path).write_text(json.dumps({"findings": [finding], "new_table": [{"a": 1}], "extra": 3}))
    loaded = Analysis.load(tmp_path)
    assert loaded is not None and loaded.findings[0].kind == "straggler"
    assert list(loaded.tables["new_table"]["a"]) == [1] and loaded.run == {} and loaded.warnings == []
    assert Analysis.load(tmp_path / "nothing") is None
    analysis_path(tmp_path).write_text("{not json")
    with pytest.raises(ScopeError, match=r"analysis\.json: unreadable"):
        Analysis.load(tmp_path)


def test_options_are_data_and_the_cli_flags_follow_them() -> None:
    names = [o.name for o in options_of()]
    assert len(names) == len(set(names))
    args = build_parser().parse_args(["analyze", "RUN", "--straggler-threshold", "0.5", "--pp-chunks", "2"])
    assert analysis_options(args) == {"straggler_threshold": 0.5, "pp_chunks": 2}
    assert STRAGGLER_THRESHOLD in analyzer("stragglers").options
    assert parse_options({"straggler_threshold": "0.5", "hta_compat": "true"}) == {
        "straggler_threshold": 0.5,
        "hta_compat": True,
    }
    with pytest.raises(ScopeError, match="unknown analysis option 'straggler_treshold'") as info:
        parse_options({"straggler_treshold": 0.5})
    assert info.value.exit_code == EXIT_USAGE
    with pytest.raises(ScopeError, match="not one of"):
        parse_options({"pp_schedule": "zigzag"})
    assert Option("n_things", int).flag == "--n-things"


def test_no_analyzer_imports_argparse() -> None:
    for path in (ROOT / "analyzers").rglob("*.py"):
        assert "import argparse" not in path.read_text(), path


def test_an_option_changes_the_verdict(straggler: tuple[Analysis, Path], tmp_path: Path) -> None:
    store = tmp_path / "store"
    shutil.copytree(straggler[1], store)
    strict = run(SAMPLE, {"store": store, "straggler_threshold": 0.01, "straggler_min_loss": 10.0})
    assert "straggler" not in {f.kind for f in strict.findings}


def test_shared_results_are_lazy_members_of_the_context(straggler: tuple[Analysis, Path]) -> None:
    store = Store.open(straggler[1])
    ctx = context(SAMPLE, store)
    assert ctx._tables is None and ctx._matched is None
    bd = ctx.table("breakdown")
    assert ctx._matched is not None  # the breakdown needs the matched collectives
    assert ctx.table("breakdown") is bd and ctx.breakdown is bd and sorted(bd["rank"].unique()) == store.ranks
    assert len(store.read_steps(2)) == len(bd[bd["rank"] == 2])
    assert store.read_collectives(99).empty
    assert store.part_path("steps", 2) == part_path(store.root, "steps", 2)


def test_demo_compares_the_analysis_with_the_ground_truth(straggler: tuple[Analysis, Path]) -> None:
    from scope.cli.demo import compare_with_ground_truth

    line = compare_with_ground_truth(SAMPLE, straggler[0].findings)
    assert line.startswith("scope demo: the analysis found the injected straggler on rank 2"), line
    assert "did not name" in compare_with_ground_truth(SAMPLE, [])
