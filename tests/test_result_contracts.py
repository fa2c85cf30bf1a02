"""One result for every command: goodput and compare are typed results with one JSON contract each, read
back whole (save, load), shown by the one renderer table, and the same object in `scope analyze` as in
their own command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scope.analysis import run
from scope.goodput_result import SECTION, GoodputResult
from scope.render import FORMATS, RENDERERS, render
from scope.result import Analysis
from tests.conftest import shared_data

DATA = Path(__file__).parent / "data" / "goodput"


def _goodput(path: Path) -> GoodputResult:
    from scope.analyzers.goodput import goodput

    return goodput(path).result()


def test_goodput_round_trips_through_save_and_load(tmp_path: Path) -> None:
    result = _goodput(DATA / "torchtitan_restart.log")
    assert result.attempts and result.findings and result.timed
    saved = result.save(tmp_path / "goodput.json")
    back = GoodputResult.load(saved)
    assert back == result
    assert back.to_dict() == json.loads(saved.read_text()) == result.to_dict()


def test_a_goodput_json_of_an_older_or_newer_scope_still_loads(tmp_path: Path) -> None:
    data = _goodput(DATA / "torchtitan_restart.log").to_dict()
    data["a_key_from_a_later_version"] = {"x": 1}
    del data["slowest_steps"]
    back = GoodputResult.from_dict(data)
    assert back.slowest_steps == [] and back.goodput_pct == data["goodput_pct"]


def test_scope_analyze_and_scope_goodput_show_goodput_from_the_same_object(tmp_path: Path) -> None:
    """The analysis keeps goodput's typed result (saved in analysis.json, read back by the dashboard): its
    summary line is the one `scope analyze` prints, its whole report the one `scope goodput` prints."""
    log = shared_data("training_logs", "liguodongiot-llm-action_megatron-deepspeed-llama-note.txt")
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / log.name).write_bytes(log.read_bytes())
    analysis = run(folder, {"workers": 1})
    alone = _goodput(folder)
    assert analysis.goodput is not None
    kept = analysis.goodput.to_dict()
    assert {k: v for k, v in kept.items() if k != "attempts"} == {
        k: v for k, v in alone.to_dict().items() if k != "attempts"
    }
    saved = Analysis.load(folder / "scope_store")
    assert saved is not None and saved.goodput == analysis.goodput
    from scope.render.goodput import summary_line

    assert summary_line(alone) in render(analysis, "text")
    assert render(saved.goodput, "text") == render(analysis.goodput, "text")


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_result_type_has_every_format(fmt: str) -> None:
    for kind in ("Analysis", "GoodputResult", "ComparisonResult"):
        assert (kind, fmt) in RENDERERS
    result = _goodput(DATA / "torchtitan_restart.log")
    text = render(result, fmt)
    if fmt == "json":
        assert GoodputResult.from_dict(json.loads(text)) == result
    else:
        assert "Goodput" in text and str(result.attempts[0]["attempt"]) in text


def test_an_analysis_without_goodput_has_none() -> None:
    assert Analysis().goodput is None
    assert Analysis(sections={SECTION: {"path": "x", "clock": "none"}}).goodput == GoodputResult("x", "none")


SAMPLE = Path(__file__).resolve().parent.parent / "sample_traces"


@pytest.fixture(scope="module")
def comparison(tmp_path_factory: pytest.TempPathFactory) -> object:
    """The sample healthy run against its straggler run (copies: each gets its store), compared once."""
    import shutil

    from scope.compare import compare_paths

    base = tmp_path_factory.mktemp("compare")
    for name in ("healthy", "straggler"):
        shutil.copytree(SAMPLE / name, base / name)
    return compare_paths(base / "healthy", base / "straggler", {"workers": 1})


def test_a_comparison_round_trips_through_save_and_load(comparison: object, tmp_path: Path) -> None:
    from scope.compare import Comparison
    from scope.compare.result import ComparisonResult

    assert isinstance(comparison, Comparison)
    result = comparison.result()
    assert result.step["buckets"] and result.ranks["rows"] and result.a.path.endswith("healthy")
    saved = result.save(tmp_path / "compare.json")
    back = ComparisonResult.load(saved)
    assert back == result and back.to_dict() == json.loads(saved.read_text())
    assert render(back, "text") == render(result, "text")
    assert render(back, "markdown") == render(result, "markdown")
    assert ComparisonResult.from_dict(json.loads(render(result, "json"))) == result


def test_each_dashboard_compares_its_own_run_b(tmp_path: Path) -> None:
    """Run B is the app's (RunData), not a module's: two dashboards in one process compare with their
    own B, and one without --compare has none."""
    from scope.app.data import RunData
    from scope.app.pages import compare as page

    one = RunData(SAMPLE / "healthy", analyze=False, compare=SAMPLE / "straggler")
    two = RunData(SAMPLE / "healthy", analyze=False, compare=tmp_path / "gone")
    alone = RunData(SAMPLE / "healthy", analyze=False)
    assert (one.compare_with, two.compare_with, alone.compare_with) == (SAMPLE / "straggler", tmp_path / "gone", None)
    assert page.comparison(alone) is None
    from collections.abc import MutableMapping

    tables = [n for n, value in vars(page).items() if isinstance(value, MutableMapping) and not n.startswith("__")]
    assert tables == ["SOURCE_WORDS"]  # words, not state: no run B (nor what was shown of it) kept by the module
