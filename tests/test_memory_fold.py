"""The memory pass's fold: ranks arriving in any order give the tables the ranks' frames concatenated in rank
order gave, and a rank without memory events sends nothing back."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from scope.analyzers.memory.fold import RankFold
from scope.analyzers.memory.rank import STEP_COLUMNS, MemoryJob, RankMemory, rank_memory_or_none

from scope.rankpass.batches import JOIN_EVERY


def _part(rank: int) -> RankMemory:
    steps = pd.DataFrame(
        {
            "rank": [rank, rank],
            "device": ["cuda:0", "cuda:0"],
            "step": [2, 1],  # a rank's own order is kept, not sorted
            "start_allocated": [rank * 10, rank * 10 + 1],
            "end_allocated": [5, 6],
            "peak_allocated": [7, 8],
            "peak_reserved": [-1, 9],
        }
    )
    notes = [f"rank {rank}: a note"] if rank % 7 == 0 else []
    return RankMemory(rank, pd.DataFrame(), steps, pd.DataFrame(), notes)


def test_the_fold_gives_the_rank_ordered_concatenation_whatever_the_arrival_order() -> None:
    ranks = list(range(JOIN_EVERY * 2 + 5))  # past two joins, with a pending rest
    arrival = sorted(ranks, key=lambda r: (r * 7919) % len(ranks))
    fold = RankFold()
    for r in arrival:
        fold.add(_part(r))
        fold.add(None)  # ranks without memory events
    expected = pd.concat([_part(r).steps for r in ranks], ignore_index=True)[STEP_COLUMNS]
    pd.testing.assert_frame_equal(fold.steps.frame(STEP_COLUMNS), expected)
    assert fold.notes() == [f"rank {r}: a note" for r in ranks if r % 7 == 0]
    assert list(fold.devices.frame(["rank", "device"]).columns) == ["rank", "device"]
    assert fold.devices.frame(["rank"]).empty


def test_a_rank_without_memory_events_sends_none(tmp_path: Path) -> None:
    assert rank_memory_or_none(MemoryJob(str(tmp_path), 3)) is None


def test_the_memory_pass_reads_the_ranks_ingest_counted_memory_rows_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ingest counts each rank's "[memory]" rows (meta n_memory); the pass reads only the ranks with some,
    and a store without the count (an older one) is read whole, to the same tables."""
    import pyarrow.parquet as pq
    import scope.analyzers.memory as memory

    from scope.ingest import ingest
    from scope.store import part_path
    from tests.helpers import context

    root = Path(__file__).resolve().parent.parent / "sample_traces"
    store_dir = tmp_path / "store"
    with_memory = ingest(root / "memory", store_dir, workers=1).store
    without = ingest(root / "straggler", tmp_path / "plain", workers=1).store
    for store in (with_memory, without):
        for rank in store.ranks:
            rows = pq.read_metadata(part_path(store.root, "memory", rank)).num_rows
            assert store.meta["ranks"][str(rank)]["n_memory"] == rows
    read: list[int] = []
    original = memory.rank_memory_or_none
    monkeypatch.setattr(memory, "rank_memory_or_none", lambda job: read.append(job.rank) or original(job))
    assert memory.analyze(context(root / "straggler", without.for_analysis())).tables == {}
    assert read == []
    counted = memory.analyze(context(root / "memory", with_memory.for_analysis()))
    assert sorted(read) == with_memory.ranks and counted.tables["memory_ranks"].shape[0] > 0
    read.clear()
    older = with_memory.for_analysis()
    for entry in older.meta["ranks"].values():
        del entry["n_memory"]
    uncounted = memory.analyze(context(root / "memory", older))
    assert sorted(read) == with_memory.ranks
    for name, table in counted.tables.items():
        pd.testing.assert_frame_equal(uncounted.tables[name], table)


def test_a_rank_outcome_not_counted_is_read_not_skipped() -> None:
    """An outcome whose memory rows were never counted (another ingest path, an older worker) defaults to
    -1, which the memory pass reads: only a rank counted at 0 is skipped."""
    from scope.ingest.job import RankOutcome

    assert RankOutcome(rank=0, files=[]).n_memory == -1
