"""`scope compare` and the dashboard's compare page on runs that are not as expected (issue 41, item 10): a
run with no profiled steps under --fail-if-slower, a damaged table in a cached store, a store made before
the op_stats table, a B deleted or replaced while the dashboard shows it. The runs are the real dataloader
pair (ResNet-50, num_workers 0 and 4; ../shared/data/kineto_dataloader), analyzed once per module."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from scope.cli import main
from scope.errors import EXIT_INPUT, EXIT_OK
from tests.conftest import shared_data

pytestmark = pytest.mark.shared_data


@pytest.fixture(scope="module")
def analyzed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The pair with their stores (links to the traces: the data stays in ../shared/data)."""
    root = tmp_path_factory.mktemp("compare_faults")
    for name in ("num_workers_0", "num_workers_4"):
        (root / name).mkdir()
        for trace in shared_data("kineto_dataloader", name).iterdir():
            (root / name / trace.name).symlink_to(trace)
        # No cross-rank critical path (half of each analysis's 2 s): no test here reads it, and the runs the
        # dashboard and compare analyze again keep their default options.
        args = [
            "analyze",
            str(root / name),
            "-q",
            "--critical-path-max-events",
            "1",
            "--json",
            str(root / f"{name}.json"),
        ]
        assert main(args) == EXIT_OK
    return root


@pytest.fixture
def pair(analyzed: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the analyzed pair this test may damage (links kept as links, stores copied)."""
    out = []
    for name in ("num_workers_0", "num_workers_4"):
        shutil.copytree(analyzed / name, tmp_path / name, symlinks=True)
        out.append(tmp_path / name)
    return out[0], out[1]


def _damage(table: Path) -> None:
    table.write_bytes(table.read_bytes()[:100])  # a write cut short: no Parquet footer


@pytest.mark.slow  # analyzes two runs: seconds (the unit tier stays under 120 s)
def test_fail_if_slower_on_a_run_without_profiled_steps_is_a_clear_error(
    pair: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The CI gate on a run that failed before its profiled steps: a sentence naming that run, exit 3 (was
    a TypeError, exit 1)."""
    failed = tmp_path / "failed_early"
    failed.mkdir()
    (failed / "rank0.log").write_text("RuntimeError: CUDA error: out of memory\n")
    code = main(["compare", str(pair[0]), str(failed), "-q", "--fail-if-slower", "5%"])
    err = capsys.readouterr().err
    assert code == EXIT_INPUT, err
    assert "internal error" not in err and f"B ({failed}) has no profiled steps" in err


@pytest.mark.slow  # analyzes a run twice and builds the dashboard: seconds (the unit tier stays under 120 s)
def test_a_damaged_table_in_a_cached_store_is_made_again_by_compare_and_the_dashboard(
    pair: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from scope.app.data import RunData

    a, b = pair
    _damage(b / "scope_store" / "tables" / "budget.parquet")
    out = tmp_path / "cmp.json"
    assert main(["compare", str(a), str(b), "-q", "--json", str(out)]) == EXIT_OK, capsys.readouterr().err
    data = json.loads(out.read_text())
    assert data["b"]["reused_analysis"] is False and data["step"]["buckets"][0]["label"] == "input pipeline"
    _damage(b / "scope_store" / "tables" / "budget.parquet")
    served = RunData(b)
    assert "damaged analysis table" in served.message and served.is_stale()
    assert served.start_analysis()
    served.wait(120)
    table = served.snapshot.analysis.table("budget") if served.snapshot.analysis else None
    assert table is not None and not table.empty, served.message


def test_a_store_from_before_the_op_stats_table_compares_by_its_events(
    pair: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = (p / "scope_store" for p in pair)
    fresh = tmp_path / "fresh.json"
    assert main(["compare", str(a), str(b), "-q", "--json", str(fresh)]) == EXIT_OK
    for store in (a, b):  # as an older scope left it: no op_stats table, in the JSON or beside it
        (store / "tables" / "op_stats.parquet").unlink()
        saved = json.loads((store / "analysis.json").read_text())
        saved.pop("op_stats", None)
        (store / "analysis.json").write_text(json.dumps(saved))
    old = tmp_path / "old.json"
    code = main(["compare", str(a), str(b), "-q", "--json", str(old)])
    assert code == EXIT_OK, capsys.readouterr().err
    ops_fresh, ops_old = (json.loads(p.read_text())["ops"]["changed"] for p in (fresh, old))
    assert ops_old and [o["name"] for o in ops_old[:5]] == [o["name"] for o in ops_fresh[:5]]
    assert ops_old[0]["delta_us"] == pytest.approx(ops_fresh[0]["delta_us"], rel=1e-6)


@pytest.mark.slow  # re-analyzes B twice: seconds (the unit tier stays under 120 s)
def test_the_compare_page_follows_b_replaced_or_deleted(pair: tuple[Path, Path]) -> None:
    from scope.app.pages import compare as page
    from scope.app.server import create_app

    a, b = pair
    app = create_app(a, refresh_s=0, compare=b)
    data = app.scope_data  # type: ignore[attr-defined]
    data.wait(120)
    first = str(page.layout(data, {}).to_plotly_json())
    assert "enumerate(DataLoader)#_MultiProcessing" in first and "changed on disk" not in first
    for trace in b.iterdir():  # B replaced by another run: num_workers_0's trace in place of its own
        if trace.is_symlink():
            trace.unlink()
    for trace in shared_data("kineto_dataloader", "num_workers_0").iterdir():
        (b / trace.name).symlink_to(trace)
    again = str(page.layout(data, {}).to_plotly_json())
    assert "changed on disk" in again and "enumerate(DataLoader)#_MultiProcessing" not in again
    shutil.rmtree(b)
    gone = str(page.layout(data, {}).to_plotly_json())
    assert "Run B is gone" in gone and "compare-waterfall" not in gone
