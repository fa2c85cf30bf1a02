"""Ranks' small tables travel to the driver as Arrow batches and are joined there (scope/rankpass/batches.py):
the joined frame is the one pandas would make of the ranks' frames, whatever the batching."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
from pandas.testing import assert_frame_equal

from scope.rankpass import batches as _batches
from scope.rankpass.batches import ArrowBatches, as_batch


def _rank_frame(rank: int) -> pd.DataFrame:
    rows = 1 + rank % 3
    return pd.DataFrame({
        "rank": np.full(rows, rank, dtype=np.int64),
        "step": np.arange(rows, dtype=np.int32) % 2,  # steps repeat within a rank: ties keep its order
        "us": np.linspace(0.5, 2.5, rows),
        "bucket": [f"b{(rank + i) % 4}" for i in range(rows)],
        "peer": np.arange(rows, dtype=np.int64) + rank,
    })  # fmt: skip


@pytest.mark.parametrize("join_every", [1, 4, 256])
def test_joined_batches_are_the_concatenated_frames_sorted_stably(
    monkeypatch: pytest.MonkeyPatch, join_every: int
) -> None:
    monkeypatch.setattr(_batches, "JOIN_EVERY", join_every)
    frames = [_rank_frame(r) for r in (5, 2, 9, 0, 7, 3, 1)]  # the order ranks finish in
    batches = ArrowBatches()
    for frame in frames:
        batches.add(pickle.loads(pickle.dumps(as_batch(frame))))  # as from a worker
    got = batches.joined(["rank", "step"], ["rank", "step", "bucket", "us", "peer"])
    want = pd.concat(frames, ignore_index=True)[["rank", "step", "bucket", "us", "peer"]]
    want = want.sort_values(["rank", "step"], kind="stable").reset_index(drop=True)
    assert_frame_equal(got, want, check_exact=True)
    assert not len(batches)  # let go once joined


def test_columns_as_arrays_and_a_column_without_values_in_some_ranks() -> None:
    """The budget's ranks send arrays; a text column that is None in every row of one rank (null in
    Arrow) takes the others' type when joined."""
    parts = [
        {"rank": np.array([0, 0]), "kind": np.array(["a", None], dtype=object), "x": np.array([1.0, np.nan])},
        {"rank": np.array([1]), "kind": np.array([None], dtype=object), "x": np.array([2.0])},
        {"rank": np.array([], dtype=np.int64), "kind": np.array([], dtype=object), "x": np.array([])},
    ]
    batches = ArrowBatches()
    for part in parts:
        batches.add(as_batch(part))
    got = batches.joined(["rank"])
    assert got["rank"].tolist() == [0, 0, 1]
    assert got["kind"].iloc[0] == "a" and got["kind"].isna().tolist() == [False, True, True]
    assert np.isnan(got["x"].iloc[1]) and got["x"].iloc[2] == 2.0


def test_no_rows_give_an_empty_frame_with_the_columns() -> None:
    batches = ArrowBatches()
    batches.add(as_batch(pd.DataFrame()))
    batches.add(None)
    assert as_batch({}) is None and as_batch(None) is None
    empty = batches.joined(["rank"], ["rank", "step"])
    assert empty.empty and list(empty.columns) == ["rank", "step"]


def test_a_column_of_mixed_values_or_arrow_chunks_travels() -> None:
    """A name read as a number in one event makes an object column of mixed types, and a frame of
    pandas' Arrow-backed text may hold several chunks: neither may cost the rank its tables."""
    mixed = pd.DataFrame({"rank": [0, 0, 0], "name": ["nccl:all_reduce", 7, None]})
    chunked = pd.concat([pd.DataFrame({"rank": [1], "name": pd.array(["a"], dtype="string[pyarrow]")})] * 2)
    batches = ArrowBatches()
    for frame in (mixed, chunked.reset_index(drop=True)):
        batches.add(as_batch(frame))
    got = batches.joined(["rank"])
    assert got["rank"].tolist() == [0, 0, 0, 1, 1]
    assert got["name"].tolist()[:2] == ["nccl:all_reduce", "7"] and got["name"].isna().tolist()[2]
    assert got["name"].tolist()[3:] == ["a", "a"]
