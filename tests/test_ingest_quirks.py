"""Traces as real PyTorch versions and users' tools wrote them: each quirk is injected into a real trace
from ../shared/data and checked, in both ingest paths, against what stdlib json says should be there."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from scope.ingest import ingest
from scope.ingest.dispatch import native_enabled
from tests.conftest import shared_data

SAMPLED = ("hta", "trace_filter", "sampled_rank-0.json.gz")
PATHS = [True, False] if native_enabled() else [False]
pytestmark = pytest.mark.shared_data


def _trace() -> dict[str, Any]:
    return json.loads(gzip.decompress(shared_data(*SAMPLED).read_bytes()))


def _ingest(folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    out = []
    for native in PATHS:
        monkeypatch.setenv("SCOPE_NATIVE", "1" if native else "0")
        out.append(ingest(folder, tmp_path / f"store-{int(native)}", force=True))
    return out


def _write(folder: Path, name: str, data: bytes | str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data.encode() if isinstance(data, str) else data)
    return folder


def _rows(report: Any) -> list[tuple[int, int, str]]:
    """(ts_ns, dur_ns, name) of the stored events, in store order."""
    rank = report.store.ranks[0]
    t = pq.read_table(report.store.root / "events" / f"rank-{rank:05d}.parquet", columns=["ts_ns", "dur_ns", "name"])
    t = pa.table(
        [c.cast(pa.string()) if pa.types.is_dictionary(c.type) else c for c in t.columns], names=t.column_names
    )
    return list(zip(*(t.column(c).to_pylist() for c in t.column_names), strict=True))


def _n_complete(events: list[dict[str, Any]]) -> int:
    return sum(1 for e in events if e.get("ph") == "X")


def test_sessions_concatenated_in_one_file_are_all_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Injected: the same trace written twice into one file (two profiler sessions appended)."""
    raw = gzip.decompress(shared_data(*SAMPLED).read_bytes())
    folder = _write(tmp_path / "src", "rank0.json", raw + b"\n" + raw)
    want = 2 * _n_complete(_trace()["traceEvents"])
    for report in _ingest(folder, tmp_path, monkeypatch):
        assert report.store.meta["ranks"]["0"]["n_events"] == want
        assert any("rank0.json: 2 profiler sessions concatenated" in w for w in map(str, report.warnings)), (
            report.warnings
        )
        assert not report.partial


def test_ts_and_dur_as_strings_read_like_numbers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Injected: every ts and dur written as a JSON string ("ts": "1682725898236763")."""
    trace = _trace()
    clean = _write(tmp_path / "clean", "rank0.json", json.dumps(trace))
    for e in trace["traceEvents"]:
        for key in ("ts", "dur"):
            if key in e:
                e[key] = str(e[key])
    strings = _write(tmp_path / "strings", "rank0.json", json.dumps(trace))
    for want, got in zip(
        _ingest(clean, tmp_path / "a", monkeypatch), _ingest(strings, tmp_path / "b", monkeypatch), strict=True
    ):
        assert _rows(got) == _rows(want)


def test_negative_and_missing_dur(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Injected: dur -5 on 20 complete events and no dur at all on 20 others."""
    trace = _trace()
    xs = [e for e in trace["traceEvents"] if e.get("ph") == "X" and not e["name"].startswith("ProfilerStep")]
    picked = random.Random(5).sample(xs, 40)
    for e in picked[:20]:
        e["dur"] = -5
    for e in picked[20:]:
        del e["dur"]
    folder = _write(tmp_path / "src", "rank0.json", json.dumps(trace))
    for report in _ingest(folder, tmp_path, monkeypatch):
        rows = _rows(report)
        assert len(rows) == _n_complete(trace["traceEvents"])  # none lost
        assert min(dur for _, dur, _ in rows) >= 0
        assert any(
            "rank0.json: 20 complete events with a negative dur, read as 0" in w for w in map(str, report.warnings)
        )


def test_events_out_of_order_give_the_same_events(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Injected: the event array shuffled."""
    trace = _trace()
    ordered = _write(tmp_path / "ordered", "rank0.json", json.dumps(trace))
    random.Random(9).shuffle(trace["traceEvents"])
    shuffled = _write(tmp_path / "shuffled", "rank0.json", json.dumps(trace))
    for want, got in zip(
        _ingest(ordered, tmp_path / "a", monkeypatch), _ingest(shuffled, tmp_path / "b", monkeypatch), strict=True
    ):
        got_rows, want_rows = _rows(got), _rows(want)
        assert [r[0] for r in got_rows] == sorted(r[0] for r in got_rows)  # stored in time order
        assert sorted(got_rows) == sorted(want_rows)
        assert got.store.meta["ranks"]["0"]["n_steps"] == want.store.meta["ranks"]["0"]["n_steps"]


def test_distributed_info_disagreeing_with_the_file_name_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Injected: the rank-0 trace saved as rank-3.json."""
    trace = _trace()
    assert trace["distributedInfo"]["rank"] == 0
    folder = _write(tmp_path / "src", "trainer_rank-3.json", json.dumps(trace))
    for report in _ingest(folder, tmp_path, monkeypatch):
        assert report.store.ranks == [0]
        assert any(
            "trainer_rank-3.json: distributedInfo says rank 0, the file name rank 3" in w
            for w in map(str, report.warnings)
        ), report.warnings


def test_an_impossible_base_time_is_ignored_with_a_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by the fuzzer: a baseTimeNanoseconds past int64 overflowed the shift to the run clock."""
    trace = _trace()
    t0 = min(float(e["ts"]) for e in trace["traceEvents"] if "ts" in e)
    for e in trace["traceEvents"]:  # relative timestamps: the form that gets the base time added
        if "ts" in e:
            e["ts"] = float(e["ts"]) - t0
    clean = _write(tmp_path / "clean", "rank0.json", json.dumps(trace))
    trace["baseTimeNanoseconds"] = 92233720368547758081700000000000000000
    bad = _write(tmp_path / "bad", "rank0.json", json.dumps(trace))
    for want, got in zip(
        _ingest(clean, tmp_path / "a", monkeypatch), _ingest(bad, tmp_path / "b", monkeypatch), strict=True
    ):
        assert len(_rows(got)) == len(_rows(want))
        assert any("rank0.json: baseTimeNanoseconds" in w and "ignored" in w for w in map(str, got.warnings)), (
            got.warnings
        )


def test_several_ranks_in_one_file_are_named_and_the_run_is_partial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Injected: rank 0's trace and the same trace relabelled rank 1 appended into one file."""
    raw = gzip.decompress(shared_data(*SAMPLED).read_bytes())
    other = json.loads(raw)
    other["distributedInfo"]["rank"] = 1
    folder = _write(tmp_path / "src", "all_ranks.json", raw + b"\n" + json.dumps(other).encode())
    for report in _ingest(folder, tmp_path, monkeypatch):
        assert report.store.meta["ranks"]["0"]["n_events"] == 2 * _n_complete(_trace()["traceEvents"])  # none lost
        assert any(
            "all_ranks.json: several ranks in one file (2 profiler sessions of ranks 0, 1)" in w
            for w in map(str, report.warnings)
        ), report.warnings
        assert report.partial


def test_sessions_of_one_rank_are_not_taken_for_several_ranks(tmp_path: Path) -> None:
    """The scan reads across its chunk boundaries: 3 sessions of one rank give that rank 3 times."""
    from scope.ingest import sessions

    raw = gzip.decompress(shared_data(*SAMPLED).read_bytes())
    path = tmp_path / "rank0.json.gz"
    path.write_bytes(gzip.compress(raw + raw + raw))
    assert sessions.ranks_in_file(path) == [0, 0, 0]
    assert sessions.several_ranks_warning(str(path), 2) is None


def test_ranks_merged_into_one_session_are_named_and_the_run_is_partial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Injected: a second process's copy of the events (pid and tid + 1, 1 ms later) merged into the same
    traceEvents array: one session, one distributedInfo, two ranks' ProfilerStep windows at once."""
    trace = _trace()
    steps = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e["name"].startswith("ProfilerStep#")]
    assert len(steps) >= 2, "the sampled trace has ProfilerStep windows"
    cpu = [e for e in trace["traceEvents"] if e.get("ph") == "X" and isinstance(e.get("tid"), int)]
    copies = [{**e, "pid": e["pid"] + 1, "tid": e["tid"] + 1, "ts": e["ts"] + 1000} for e in cpu]
    trace["traceEvents"] += copies
    folder = _write(tmp_path / "src", "merged.json", json.dumps(trace))
    for report in _ingest(folder, tmp_path, monkeypatch):
        assert report.store.meta["ranks"]["0"]["n_events"] == _n_complete(trace["traceEvents"])  # none lost
        assert any(
            "merged.json: several ranks in one file (2 threads run ProfilerStep" in w for w in map(str, report.warnings)
        )
        assert report.partial


def test_one_process_steps_are_not_taken_for_merged_ranks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real trace as recorded: its ProfilerStep windows never overlap on two threads."""
    folder = _write(tmp_path / "src", "rank0.json", json.dumps(_trace()))
    for report in _ingest(folder, tmp_path, monkeypatch):
        assert not any("several ranks" in w for w in map(str, report.warnings)), report.warnings
        assert not report.partial
