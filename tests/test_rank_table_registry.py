"""The per-rank tables as declared data (scope/rankpass): a table added as one module and one registry line,
read by an analyzer added as one module and one registry line, runs end to end in the one pass; the pass
makes only what the analysis reads; the registry refuses declarations that cannot be made."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from scope import analyzers
from scope.analysis import Context
from scope.cli import main
from scope.ingest import ingest
from scope.rankpass import registry as tables_registry
from scope.rankpass import run as rankpass_run
from scope.rankpass.registry import TABLE_MODULES, Registry, default_registry
from scope.rankpass.spec import RankTable
from scope.rankpass.timeline import RankJob
from scope.rankpass.view import WINDOW_COLUMNS
from scope.store import Store
from tests import source
from tests.helpers import inventory
from tests.rank_table_toy import busiest

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_traces" / "straggler"


@pytest.fixture
def toy_registered(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The two registry lines: the toy table's module, the toy analyzer's record."""
    monkeypatch.setattr(tables_registry, "TABLE_MODULES", (*TABLE_MODULES, "tests.rank_table_toy.events_per_step"))
    monkeypatch.setattr(analyzers, "ANALYZERS", (*analyzers.ANALYZERS, busiest.ANALYZER))
    default_registry.cache_clear()
    yield
    default_registry.cache_clear()


def _expected_events_per_step(store: Store) -> pd.DataFrame:
    """The toy table computed another way: every rank's events and steps read whole, counted in pandas."""
    rows = []
    for rank in store.ranks:
        ts = store.read_events(rank, columns=["ts_ns"]).column("ts_ns").to_numpy()
        for step in store.read_steps(rank).itertuples():
            rows.append((rank, step.step, int(((ts >= step.start_ns) & (ts < step.end_ns)).sum())))
    return pd.DataFrame(rows, columns=["rank", "step", "events"])


def test_a_table_and_an_analyzer_added_as_two_modules_and_two_registry_lines_run_end_to_end(
    toy_registered: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    passes: list[tuple[int, tuple[str, ...]]] = []
    original = rankpass_run.rank_parts

    def counted(plan: rankpass_run.Plan, job: Any) -> Any:
        passes.append((job.rank, tuple(t.name for t in plan.travelling)))
        return original(plan, job)

    monkeypatch.setattr(rankpass_run, "rank_parts", counted)
    out, store_dir = tmp_path / "analysis.json", tmp_path / "store"
    assert main(["analyze", str(SAMPLE), "--store", str(store_dir), "--workers", "1", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    store = Store.open(store_dir)
    expected = _expected_events_per_step(store)
    mean = expected.groupby("rank")["events"].mean()
    assert data["busiest_rank"] == [{"rank": int(mean.idxmax()), "events": float(mean.max())}]
    assert mean.max() > mean.min()  # a busiest rank to find: the answer is not any rank's
    # the toy table was made in the one pass with every table the analyzers read: one read of each rank
    assert sorted(rank for rank, _ in passes) == store.ranks
    assert {frozenset(tables) for _, tables in passes} == {
        frozenset(name for spec in analyzers.ANALYZERS for name in spec.reads)
    }


def test_the_pass_makes_what_is_read_and_what_it_needs_only(toy_registered: None, tmp_path: Path) -> None:
    store = ingest(SAMPLE, tmp_path / "store", workers=1).store.for_analysis()
    ctx = Context(inputs=inventory(SAMPLE), store=store, options={"workers": 1}, reads=busiest.ANALYZER.reads)
    table = ctx.table("events_per_step")
    expected = _expected_events_per_step(store)
    pd.testing.assert_frame_equal(table, expected, check_dtype=False)
    assert sorted(ctx.rank_tables.made) == ["events_per_step"]
    assert ctx._matched is None  # no table read reads the matching: the collectives were never matched
    # a table nobody declared is still made when asked for (in a pass of its own)
    assert not ctx.table("breakdown").empty and ctx._matched is not None


def _table(name: str, needs: tuple[str, ...] = ()) -> RankTable:
    return RankTable(name=name, make=lambda view: np.empty(0), needs=needs)


def test_the_registry_refuses_what_cannot_be_made() -> None:
    with pytest.raises(ValueError, match="declared twice"):
        Registry([_table("a"), _table("a")])
    with pytest.raises(ValueError, match="needs \\['nowhere'\\]"):
        Registry([_table("a", ("nowhere",))])
    with pytest.raises(ValueError, match="circle: a -> b -> a"):
        Registry([_table("a", ("b",)), _table("b", ("a",))])
    with pytest.raises(KeyError, match="no per-rank table 'nowhere'"):
        default_registry()["nowhere"]
    plan = [t.name for t in Registry([_table("c", ("b", "a")), _table("b", ("a",)), _table("a")]).plan(["c"])]
    assert plan == ["a", "b", "c"]


def test_every_table_an_analyzer_reads_is_declared() -> None:
    declared = set(default_registry().names())
    for spec in analyzers.ANALYZERS:
        assert set(spec.reads) <= declared, (spec.name, sorted(set(spec.reads) - declared))


def test_the_rank_pass_room_imports_no_analyzer_and_not_the_analysis() -> None:
    """scope/rankpass is below the analysis and the analyzers: they import it, it imports neither (the
    analysis once imported a private module of analyzers/, and a 19-file import circle ran through it)."""
    import ast

    room = ROOT / "scope" / "rankpass"
    found = []
    for path in sorted(room.rglob("*.py")):
        for node in source.nodes(path):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [(path.name, n) for n in names if n.startswith(("scope.analyzers", "scope.analysis"))]
    assert found == []
    assert list(room.rglob("*.py"))  # the room is where this test looks


def test_a_table_reading_the_whole_steps_partition_gets_it_though_the_pass_reads_the_windows_alone(
    tmp_path: Path,
) -> None:
    store = ingest(SAMPLE, tmp_path / "store", workers=1).store
    rank = store.ranks[-1]
    seen: dict[str, Any] = {}

    def whole(view: Any) -> None:
        seen["read"], seen["frame"] = view.step_table.column_names, view.steps

    rankpass_run.rank_parts(
        rankpass_run.Plan((RankTable(name="whole_steps", make=whole),)), RankJob(str(store.root), rank)
    )
    assert seen["read"] == list(WINDOW_COLUMNS)
    expected = store.read_steps(rank)
    assert len(expected.columns) > len(WINDOW_COLUMNS) and len(expected) > 1
    pd.testing.assert_frame_equal(seen["frame"], expected)
