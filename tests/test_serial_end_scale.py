"""The serial end of an analysis of many ranks (issue 45): what runs in the coordinating process once, after
the per-rank work, must cost time linear in the ranks. Each test holds one figure that was quadratic, or paid
twice, at 16,384 ranks."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pandas as pd
import pytest

from scope.ingest import ingest
from scope.render import summary
from scope.result import Analysis
from scope.store import PARTITIONED, Store, partitioned_ranks


def _budget(ranks: int) -> pd.DataFrame:
    """A step budget as the budget table holds it: a row per rank, step and bucket."""
    rows = []
    for rank in range(ranks):
        for step in (1, 2):
            step_us = 0.0 if rank == 1 else 1000.0 + rank
            for bucket, us in (("compute", 600.0), ("comm_wait", 250.0), ("unexplained", 150.0 + rank)):
                rows.append({"rank": rank, "step": step, "bucket": bucket, "us": us, "step_us": step_us})
    return pd.DataFrame(rows)


def _shares_one_rank_at_a_time(budget: pd.DataFrame) -> dict[int, dict[str, float]]:
    """The definition, rank by rank: each share column's buckets over the rank's profiled step time."""
    out = {}
    for rank, mine in budget.groupby("rank"):
        total = float(mine.drop_duplicates("step")["step_us"].sum())
        by_bucket = mine.groupby("bucket")["us"].sum()
        out[int(rank)] = {
            col: 100.0 * sum(float(by_bucket.get(b, 0.0)) for b in buckets) / total if total > 0 else 0.0
            for col, buckets in summary.SHARE_BUCKETS.items()
        }
    return out


def test_the_summary_shares_are_the_definitions_and_a_rank_without_step_time_reads_zero() -> None:
    budget = _budget(5)
    shares = summary._shares(Analysis(tables={"budget": budget}))
    assert shares == _shares_one_rank_at_a_time(budget)
    assert shares[1] == dict.fromkeys(summary.SHARE_BUCKETS, 0.0)  # no step time: no share, not a division
    assert shares[0]["(wait)"] == pytest.approx(100.0 * 500.0 / 2000.0)
    assert shares[0]["input"] == 0.0  # a bucket no rank has


def test_the_summary_shares_of_20000_ranks_take_well_under_a_second() -> None:
    """A lookup per rank in the grouped index made these 17 s of the serial end at 16,384 ranks."""
    analysis = Analysis(tables={"budget": _budget(20_000)})
    start = time.perf_counter()
    shares = summary._shares(analysis)
    assert time.perf_counter() - start < 1.5
    assert len(shares) == 20_000


def _trace(rank: int) -> dict:
    events = [{"ph": "X", "name": "ProfilerStep#1", "cat": "user_annotation", "ts": 0, "dur": 1000, "pid": 1, "tid": 1}]
    events += [
        {"ph": "X", "name": f"aten::op{i}", "cat": "cpu_op", "ts": 10 + i, "dur": 5, "pid": 1, "tid": 1}
        for i in range(20)
    ]
    return {"distributedInfo": {"rank": rank, "world_size": 3}, "traceEvents": events}


@pytest.fixture
def stored(tmp_path: Path) -> Path:
    for r in range(3):
        (tmp_path / f"rank{r}.json").write_text(json.dumps(_trace(r)))
    ingest(tmp_path, tmp_path / "store")
    return tmp_path


def test_every_ranks_steps_are_read_from_their_files_once_and_each_caller_gets_its_own(stored: Path) -> None:
    store = Store.open(stored / "store")
    first = store.steps()
    assert sorted(first["rank"].unique().tolist()) == [0, 1, 2]
    for part in (stored / "store" / "steps").glob("rank-*.parquet"):
        part.rename(part.with_suffix(".moved"))  # a second read of the files would now find none
    first.loc[:, "rank"] = -1  # a caller changing its frame changes no one else's
    again = store.steps()
    assert sorted(again["rank"].unique().tolist()) == [0, 1, 2]


def test_the_ranks_with_partitions_come_from_one_listing_and_only_whole_names_count(tmp_path: Path) -> None:
    folder = tmp_path / "events"
    folder.mkdir()
    for name in ("rank-00000.parquet", "rank-00007.parquet", "rank-00003.tmp", "rank-x.parquet", "notes.txt"):
        (folder / name).write_bytes(b"")
    assert partitioned_ranks(tmp_path, "events") == {0, 7}
    assert partitioned_ranks(tmp_path, "memory") == set()  # no folder: no rank


def test_a_rank_missing_one_partition_is_read_again_and_the_others_are_reused(stored: Path) -> None:
    table = PARTITIONED[-1]
    (stored / "store" / table / "rank-00001.parquet").unlink()
    again = ingest(stored, stored / "store")
    assert again.parsed == [1] and again.reused == [0, 2]
    assert (stored / "store" / table / "rank-00001.parquet").is_file()


def test_the_median_of_the_other_ranks_is_pandas_median_without_each_rank() -> None:
    """The input-straggler rule compares each rank with the median of the rest: the same numbers as dropping
    the rank and taking pandas' median, on odd and even counts, ties and missing values."""
    import numpy as np
    from scope.analyzers.budget.findings import _median_of_the_others

    rng = np.random.default_rng(45)
    for n in (2, 3, 4, 7, 10, 33):
        for values in (rng.random(n), rng.integers(0, 3, size=n).astype(float)):
            series = pd.Series(values, index=rng.permutation(n) + 5)
            expected = [float(series.drop(k).median()) for k in series.index]
            assert _median_of_the_others(series).tolist() == expected
    with_gap = pd.Series([1.0, float("nan"), 4.0, 2.0])
    assert _median_of_the_others(with_gap).tolist() == [3.0, 2.0, 1.5, 2.5]


def test_the_input_straggler_rule_over_20000_ranks_takes_well_under_a_second() -> None:
    """A median over the other ranks per rank was 11 s of the serial end at 16,384 ranks; the slow loader is
    still the one named."""
    from scope.analyzers.budget.findings import _input_stragglers

    ranks = 20_000
    us = [100.0] * ranks
    us[4321] = 900.0
    steps = pd.DataFrame({"rank": range(ranks), "step": 1, "us": us})
    measure = pd.Series([0.1] * ranks, index=range(ranks))
    start = time.perf_counter()
    assert _input_stragglers(steps, measure) == [4321]
    assert time.perf_counter() - start < 1.5
