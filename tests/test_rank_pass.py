"""The per-rank pass: one read of each rank's events makes the breakdown, the budget, the communication
streams, the trace's FLOPs, the operators' tables and the pipeline candidates (scope/rankpass)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from scope.analyzers import comm_streams, mfu, ops, pipeline

from scope.analysis import Context
from scope.ingest import ingest
from scope.store import Store
from tests.conftest import shared_data
from tests.helpers import context

ROOT = Path(__file__).resolve().parent.parent


def _store(source: Path, where: Path) -> Store:
    return ingest(source, where, workers=1).store


def _tables(ctx: Context) -> dict[str, pd.DataFrame]:
    out: dict[str, pd.DataFrame] = {}
    for analyzer in (comm_streams, mfu, ops, pipeline):
        out.update(analyzer.analyze(ctx).tables)
    return out


@pytest.mark.parametrize("source", [shared_data("hta", "nccl_parser_config"), ROOT / "sample_traces" / "pipeline"])
def test_each_rank_is_read_once_for_every_per_rank_table(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store(source, tmp_path / "store")
    reads: Counter[int] = Counter()
    original = Store.read_events

    def counted(self: Store, rank: int, *args: Any, **kwargs: Any) -> Any:
        reads[rank] += 1
        return original(self, rank, *args, **kwargs)

    monkeypatch.setattr(Store, "read_events", counted)
    ctx = context(source, store, workers=1)
    tables = _tables(ctx)
    candidates = set(ctx.table("pipeline_candidates")["rank"])
    # one read per rank for all of them; the pipeline analyzer reads its candidates once more (its own
    # map), and nothing else reads a rank again (before: six reads of every rank, seven of a pipeline's)
    assert reads == Counter({r: 1 + (r in candidates) for r in store.ranks}), reads
    assert "op_stats" in tables
    if source.name == "pipeline":  # the pipeline analyzer still finds the schedule, from its candidates only
        assert candidates == set(store.ranks) and "pipeline_summary" in tables, sorted(tables)
    else:
        assert "comm_streams" in tables and "host_budget" in tables


def test_a_breakdown_given_by_hand_leaves_the_other_tables_as_the_pass_makes_them(tmp_path: Path) -> None:
    source = shared_data("hta", "nccl_parser_config")
    store = _store(source, tmp_path / "store")
    whole = context(source, store, workers=1)
    want = _tables(whole)
    by_hand = context(source, store, workers=1)
    by_hand.breakdown = whole.breakdown  # as tests and library users may do
    got = _tables(by_hand)
    assert sorted(got) == sorted(want) and want
    for name in want:
        pd.testing.assert_frame_equal(got[name], want[name], check_exact=True)
