"""The per-rank pass on the store's Arrow columns (scope/rankpass/arrays.py) and its shortcuts give what the
frame-based code gave: the arrays, the training thread, the order of nested operators, the operators'
counts and the dask batch's prefold of them. (benchmarks/rank_pass.py --save/--check compares every table
before and after a change to the pass on whole inputs.)"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from scope.ingest import ingest
from scope.rankpass import intervals as iv
from scope.rankpass import op_counts
from scope.rankpass.arrays import Ev, EventColumns, training_thread
from scope.rankpass.budget import Host, main_thread_of
from scope.rankpass.tables import op_stats
from scope.rankpass.timeline import main_thread
from tests.conftest import shared_data


@pytest.fixture(scope="module")
def rank_events(tmp_path_factory: pytest.TempPathFactory) -> pa.Table:
    """Rank 0 of a real 2-rank GPU run, as the store gives it to the pass."""
    store = ingest(shared_data("hta", "trace_filter"), tmp_path_factory.mktemp("store"), workers=1).store
    return store.read_events(store.ranks[0])


def _fields(ev: Ev) -> dict[str, object]:
    return {k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in vars(ev).items()}


@pytest.mark.shared_data
def test_the_arrays_of_the_arrow_columns_are_those_of_the_frame(rank_events: pa.Table) -> None:
    frame = rank_events.to_pandas()
    assert _fields(Ev.of(EventColumns(rank_events))) == _fields(Ev.of(frame))
    # a table read in several row groups, each with a dictionary of its own: one dictionary, as pandas's
    halves = pa.concat_tables(
        [_own_dictionaries(rank_events.slice(0, 1000)), _own_dictionaries(rank_events.slice(1000))]
    )
    assert halves.column("name").num_chunks == 2
    assert _fields(Ev.of(EventColumns(halves))) == _fields(Ev.of(halves.to_pandas()))


def _own_dictionaries(table: pa.Table) -> pa.Table:
    columns = [
        c.combine_chunks().dictionary_decode().dictionary_encode() if pa.types.is_dictionary(c.type) else c
        for c in table.columns
    ]
    return pa.table(columns, names=table.column_names)


@pytest.mark.shared_data
def test_the_training_thread_is_the_one_marking_steps_else_the_busiest(rank_events: pa.Table) -> None:
    """One rule (arrays.training_thread) behind the frame's main_thread and the arrays' main_thread_of,
    checked against the counts themselves."""
    frame = rank_events.to_pandas()
    marks = frame.loc[(frame["kind"] == "step") & (frame["thread"] >= 0), "thread"].value_counts()
    assert len(marks) and main_thread(frame) == int(marks.index[marks == marks.max()].min())
    assert main_thread_of(Ev.of(EventColumns(rank_events))) == main_thread(frame)
    # without step marks: the thread with the most operator time
    no_marks = frame[frame["kind"] != "step"]
    op_time = no_marks[(no_marks["kind"] == "cpu_op") & (no_marks["thread"] >= 0)].groupby("thread")["dur_ns"].sum()
    assert op_time.size > 1 and main_thread(no_marks) == int(op_time.idxmax())
    assert main_thread_of(Ev.of(no_marks)) == main_thread(no_marks)


def test_the_training_thread_lowest_id_among_equals_and_none_without_operators() -> None:
    thread = np.array([7, 3, 7, 3, -1, -1, -1])
    step = np.array([True, True, True, True, True, True, True])
    assert training_thread(thread, np.ones(7, np.int64), step, ~step) == 3  # 2 marks each; -1 never counts
    dur = np.array([5, 2, 1, 4, 99, 0, 0])
    assert training_thread(thread, dur, ~step, step) == 3  # 6 ns against 6 ns
    assert training_thread(thread, dur, ~step, ~step) is None


def test_operators_ordered_by_start_then_length_as_a_lexsort_orders_them() -> None:
    rng = np.random.default_rng(5)
    for n in (0, 1, 2, 50, 4000):
        ts = rng.integers(0, max(n // 4, 1), n)  # many equal starts
        end = ts + rng.integers(0, 6, n)
        assert iv.by_start(ts, end).tolist() == np.lexsort((ts - end, ts)).tolist()
        presorted = np.sort(ts)
        assert iv.by_start(presorted, end).tolist() == np.lexsort((presorted - end, presorted)).tolist()


def test_counted_groups_are_the_sorted_groups() -> None:
    """_Text.groups counts dense keys; the sort it replaced (still used where keys are too spread out)
    gives the same keys, calls and ns, in the same order."""
    rng = np.random.default_rng(9)
    names = np.array([f"op{i}" for i in range(40)] + ["", np.nan], dtype=object)
    text = op_counts._Text(
        kind=rng.integers(0, 3, 5000),
        name=rng.integers(0, len(names), 5000),
        kinds=np.array(["comm", "compute", np.nan], dtype=object),
        names=names,
        empty=40,
    )
    parent = rng.choice([40, 3, 17, 41], 5000)
    dur = rng.integers(-5, 10**9, 5000)  # a negative duration or two, as broken traces hold
    mask = rng.random(5000) < 0.7
    width = len(names)
    got = text.groups(mask, parent, dur)
    want = op_counts._sorted_groups((text.kind[mask] * width + text.name[mask]) * width + parent[mask], dur[mask])
    for g, w in zip(got, want, strict=True):
        assert g.tolist() == w.tolist()


@pytest.mark.shared_data
def test_a_batch_prefolded_on_its_worker_gives_the_table_of_its_ranks_parts(rank_events: pa.Table) -> None:
    host = Host.of(EventColumns(rank_events))
    counts, _ = op_counts.rank_count_columns(EventColumns(rank_events).ints("step"), host)
    parts = []
    for steps in (2, 3, 5):  # three ranks with the same counts and different profiled steps
        rows = op_counts.fold_columns(counts, steps)
        assert rows is not None
        batch = pa.RecordBatch.from_pandas(pd.DataFrame(rows), preserve_index=False)
        parts.append(batch.replace_schema_metadata({b"rank_steps": str(steps).encode()}))

    def table(batches: list[pa.RecordBatch | None]) -> pd.DataFrame:
        fold = op_stats.Fold()
        for b in batches:
            fold.add(b)
        return fold.table()

    by_rank = table(list(parts))
    assert len(by_rank) and by_rank["ranks"].max() == 3
    pd.testing.assert_frame_equal(table([op_stats.prefold(parts)]), by_rank, check_exact=False, rtol=1e-12)


def test_a_rank_without_events_columns_reads_none() -> None:
    columns = EventColumns(pa.table({"ts_ns": pa.array([], pa.int64())}))
    assert columns.size == 0 and "ts_ns" in columns and "name" not in columns
    assert columns.ints("ts_ns").dtype == np.int64
