"""The native ingest core writes the same store as the pure-Python reference path, and survives bad bytes.

The reference is scope's own msgspec + pyarrow path (SCOPE_NATIVE=0), itself checked against
independent stdlib-json counts in test_ingest_shared_data.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from scope.ingest import ingest
from scope.ingest.dispatch import native_enabled
from tests.conftest import ROOT, SHARED_DATA, shared_data

if not native_enabled():
    if os.environ.get("SCOPE_REQUIRE_NATIVE") == "1":
        pytest.fail("the native ingest core (scope.ingest._native) is not built", pytrace=False)
    pytest.skip("the native ingest core is not built (no C compiler?)", allow_module_level=True)

TABLES = ("events", "steps", "collectives", "memory")


def _ingest(src: Path, store: Path, native: bool, monkeypatch: pytest.MonkeyPatch) -> object:
    monkeypatch.setenv("SCOPE_NATIVE", "1" if native else "0")
    return ingest(src, store, force=True)


def _plain(table: pa.Table) -> pa.Table:
    """Dictionary columns decoded, so both writers' files compare value by value."""
    cols = [c.cast(pa.string()) if pa.types.is_dictionary(c.type) else c for c in table.columns]
    return pa.table(cols, names=table.schema.names)


def _differences(py_store: Path, nat_store: Path, ranks: list[int]) -> list[str]:
    out = []
    for rank in ranks:
        for table in TABLES:
            name = f"{table}/rank-{rank:05d}.parquet"
            want, got = _plain(pq.read_table(py_store / name)), _plain(pq.read_table(nat_store / name))
            if want.schema != got.schema:
                out.append(f"{name}: schema {got.schema} != {want.schema}")
            elif not got.equals(want):
                bad = [c for c in want.schema.names if not got.column(c).equals(want.column(c))]
                out.append(f"{name}: columns {bad} differ ({got.num_rows} vs {want.num_rows} rows)")
    return out


def _assert_same_store(src: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    py = _ingest(src, tmp_path / "py", False, monkeypatch)
    nat = _ingest(src, tmp_path / "nat", True, monkeypatch)
    assert nat.store.ranks == py.store.ranks
    assert nat.warnings == py.warnings
    assert nat.errors == py.errors
    assert _differences(tmp_path / "py", tmp_path / "nat", py.store.ranks) == []


def _trace_sources() -> list[Path]:
    sources: list[Path] = []
    root = SHARED_DATA / "hta"
    if root.exists():
        sources += sorted(
            {
                p.parent
                for p in root.rglob("*")
                if p.name.endswith((".json", ".json.gz")) and not {"scope_store", "store"} & set(p.parts)
            }
        )
    # tracelens/ holds two jobs (an MI300X and a B200 trace): a folder that is refused, so file by file
    sources += sorted((SHARED_DATA / "tracelens").glob("*.json.gz"))
    return sources


@pytest.mark.shared_data
@pytest.mark.parametrize("src", _trace_sources() or [None], ids=lambda p: p.name if p else "none")
def test_native_store_equals_python_store_on_real_traces(
    src: Path | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if src is None:
        shared_data("hta")
    _assert_same_store(src, tmp_path, monkeypatch)


@pytest.mark.slow  # seconds of analysis on real data (the unit tier stays under 120 s)
@pytest.mark.shared_data
def test_eight_ranks_in_threads_equal_the_python_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = shared_data("hta", "nccl_parser_config", "nccl_data.json.gz")
    text = gzip.decompress(source.read_bytes()).decode()
    folder = tmp_path / "eight"
    folder.mkdir()
    for rank in range(8):
        body = text.replace('"rank": 0', f'"rank": {rank}', 1).replace('"world_size": 2', '"world_size": 8', 1)
        (folder / f"rank-{rank}.json.gz").write_bytes(gzip.compress(body.encode(), compresslevel=1))
    _assert_same_store(folder, tmp_path, monkeypatch)


# ------------------------------------------------------------------ hand-made traces


def _event(i: int, **extra: object) -> dict:
    return {
        "ph": "X",
        "cat": "cpu_op",
        "name": f"aten::op{i % 7}",
        "pid": 1,
        "tid": 2,
        "ts": 1000 + i,
        "dur": 1,
        **extra,
    }


def _trace(events: list[dict], rank: int = 0) -> dict:
    return {
        "distributedInfo": {"backend": "gloo", "rank": rank, "world_size": 1},
        "traceEvents": [_event(0, name="ProfilerStep#3", ts=999, dur=10**6), *events],
        "baseTimeNanoseconds": 1_700_000_000_000_000_000,
    }


def _write(folder: Path, text: str | bytes, name: str = "rank0.json") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    data = text.encode() if isinstance(text, str) else text
    (folder / name).write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    return folder


def test_odd_but_valid_values_read_like_the_reference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    events = [
        _event(0, name='quote " backslash \\ tab \t é 😀 \u2028'),
        _event(1, ts=1.5e3, dur="2.25"),
        _event(2, pid="Spans", tid=2**70, args={"correlation": "42", "External id": 3.0, "stream": 2**66}),
        _event(3, ts="1234.5678", args={"flops": 12.5, "device": None, "Collective name": None}),
        _event(4, args={"nested": {"deep": [[[[{"a": [1, 2, {"b": "c"}]}]]]]}, "Input Dims": [[2, 3]]}),
        {"ph": "i", "name": "instant", "ts": 5},
        [1, 2, 3],
        _event(5, cat="kernel", name="ncclDevKernel_AllReduce_Sum_f32", args={"device": 0, "stream": 7}),
        _event(6, name="gloo:all_reduce", args={"Input Dims": [[4, 4]], "Input type": ["float"]}),
    ]
    src = _write(tmp_path / "src", json.dumps(_trace(events)))
    _assert_same_store(src, tmp_path, monkeypatch)
    names = set(pq.read_table(tmp_path / "nat/events/rank-00000.parquet").column("name").to_pylist())
    assert 'quote " backslash \\ tab \t é 😀 \u2028' in names


def test_unsorted_events_with_ties_and_hours_of_span_sort_like_the_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The native core sorts by time with a radix sort over digits of the time since the first event: shuffled
    events, many sharing a timestamp (their file order must stay), spread over ~10 hours (more digits than
    a short trace uses) and one before the step's start, are ordered as the reference's stable sort orders them."""
    rng = random.Random(7)
    times = [1000 + rng.choice([0, 5, 5, 5, 17, 2**35, 2**35 + 1, 36 * 10**9]) for _ in range(400)] + [3]
    events = [_event(i, ts=t, name=f"aten::op{i}") for i, t in enumerate(times)]
    rng.shuffle(events)
    src = _write(tmp_path / "src", json.dumps(_trace(events)))
    _assert_same_store(src, tmp_path, monkeypatch)
    ts = pq.read_table(tmp_path / "nat/events/rank-00000.parquet").column("ts_ns").to_pylist()
    assert ts == sorted(ts) and len(set(ts)) < len(ts) / 10


def test_odd_memory_events_read_like_the_reference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The memory table: totals as strings, floats, huge or absent; Bytes that is not an integer (the
    event is dropped by both); device ids beyond int32; another instant event named otherwise."""

    def mem(ts: float, args: dict[str, object], name: str = "[memory]") -> dict[str, object]:
        return {
            "ph": "i",
            "cat": "cpu_instant_event",
            "s": "t",
            "name": name,
            "pid": 1,
            "tid": 1,
            "ts": ts,
            "args": args,
        }

    events = [
        _event(0),
        mem(
            10,
            {"Bytes": 512, "Total Allocated": 512, "Total Reserved": 2048, "Device Type": 1, "Device Id": 0, "Addr": 7},
        ),
        mem(
            11, {"Bytes": -512, "Total Allocated": "0", "Total Reserved": 2048.0, "Device Type": 6, "Device Id": 2**40}
        ),
        mem(12, {"Bytes": 1.5, "Total Allocated": 2}),
        mem(13, {"Bytes": "64", "Device Type": 0}),
        mem(14, {"Bytes": 2**70, "Device Type": 0}),
        mem(15, {"Bytes": 8}),
        mem(16, {"Bytes": 8}, name="[memory] other"),
        mem(17, {"Device Type": 1}),
    ]
    src = _write(tmp_path / "src", json.dumps(_trace(events)))
    _assert_same_store(src, tmp_path, monkeypatch)
    table = pq.read_table(tmp_path / "nat/memory/rank-00000.parquet")
    assert table.column("bytes").to_pylist() == [512, -512, 8]
    assert table.column("device_id").to_pylist() == [0, -1, -1]


def test_events_across_read_blocks_all_arrive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Over 4 MB of events of uneven size, so some straddle the native reader's block boundaries."""
    rng = random.Random(7)
    events = [_event(i, args={"pad": "x" * rng.randrange(0, 3000)}) for i in range(6000)]
    src = _write(tmp_path / "src", json.dumps(_trace(events), indent=rng.choice([None, 1])), "rank0.json.gz")
    _assert_same_store(src, tmp_path, monkeypatch)
    assert pq.read_metadata(tmp_path / "nat/events/rank-00000.parquet").num_rows == 6001


@pytest.mark.parametrize("later_step", [4, 5000, 2**31 - 2])
def test_events_counted_per_step_like_the_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, later_step: int
) -> None:
    """The native core counts a step's events by kind in an array (steps close together) or a dict (steps
    numbered far apart: 3 and 5,000 or 2**31 - 2); both give the steps table the Python path gives."""
    events = [_event(i, ts=1000 + i) for i in range(30)]
    events += [_event(40, name=f"ProfilerStep#{later_step}", ts=2_000_000, dur=10**6)]
    events += [_event(50 + i, ts=2_000_100 + i, cat=("kernel" if i % 3 else "cpu_op")) for i in range(40)]
    src = _write(tmp_path / "src", json.dumps(_trace(events)))
    _assert_same_store(src, tmp_path, monkeypatch)
    steps = pq.read_table(tmp_path / "nat/steps/rank-00000.parquet").to_pylist()
    assert [s["step"] for s in steps] == [3, later_step]
    assert sum(s["n_cpu_op"] for s in steps) > 0 and sum(s["n_compute"] for s in steps) > 0


@pytest.mark.parametrize("depth", [600, 5000])
def test_large_and_deep_events_are_kept_by_both_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, depth: int
) -> None:
    """A 6 MB event (bigger than a read chunk) and args nested DEPTH deep (past either decoder's
    recursion) are valid JSON: both paths keep them and every event after them, and write one store."""
    events = [_event(i) for i in range(10)]
    events.append(_event(10, args={"big": "y" * (6 << 20)}))
    events += [_event(i) for i in range(11, 20)]
    events.append(_event(20, args={"deep": "DEEP"}))
    events += [_event(i) for i in range(21, 30)]
    text = json.dumps(_trace(events)).replace('"DEEP"', "[" * depth + "]" * depth)
    src = _write(tmp_path / "src", text, "rank0.json")
    _assert_same_store(src, tmp_path, monkeypatch)
    assert pq.read_metadata(tmp_path / "py/events/rank-00000.parquet").num_rows == 31


def test_truncated_anywhere_keeps_what_the_reference_keeps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = json.dumps(_trace([_event(i, args={"External id": i}) for i in range(60)]), indent=1)
    rng = random.Random(3)
    start = text.index("traceEvents")
    for k, cut in enumerate(sorted(rng.sample(range(start + 20, len(text) - 1), 25))):
        src = _write(tmp_path / f"cut{k}", text[:cut])
        nat = _ingest(src, tmp_path / f"nat{k}", True, monkeypatch)
        py = _ingest(src, tmp_path / f"py{k}", False, monkeypatch)
        kept = {r: m["n_events"] for r, m in nat.store.meta["ranks"].items()}
        assert kept == {r: m["n_events"] for r, m in py.store.meta["ranks"].items()}, f"cut at {cut}"
        assert any("truncated" in w and "rank0.json" in w for w in map(str, nat.warnings)), nat.warnings


def test_corrupt_bytes_never_crash_and_keep_the_events_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = json.dumps(_trace([_event(i) for i in range(200)])).encode()
    start = text.index(b"traceEvents") + 20
    rng = random.Random(11)
    for k in range(40):
        data = bytearray(text)
        at = rng.randrange(start, len(data) - 2)
        data[at : at + 3] = bytes(rng.randrange(256) for _ in range(3))
        src = _write(tmp_path / f"bad{k}", bytes(data))
        report = _ingest(src, tmp_path / f"store{k}", True, monkeypatch)
        for meta in report.store.meta["ranks"].values():
            assert meta["n_events"] <= 201
            if meta["salvaged"]:  # events before the damage are all kept
                assert meta["n_events"] >= text[:at].count(b'"ph": "X"') - 1


def test_concatenated_and_damaged_gzip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    body = json.dumps(_trace([_event(i) for i in range(3000)])).encode()
    half = len(body) // 2
    members = gzip.compress(body[:half]) + gzip.compress(body[half:])
    src = _write(tmp_path / "members", members, "rank0.json.gz.tmp")
    (src / "rank0.json.gz.tmp").rename(src / "rank0.json.gz")
    _assert_same_store(src, tmp_path / "a", monkeypatch)
    garbage = _write(tmp_path / "garbage", gzip.compress(body) + b"\x00trailing junk", "rank0.json.gz.tmp")
    (garbage / "rank0.json.gz.tmp").rename(garbage / "rank0.json.gz")
    _assert_same_store(garbage, tmp_path / "b", monkeypatch)


@pytest.mark.subprocess
def test_ingest_never_loads_pyarrow_pandas_or_numpy(tmp_path: Path) -> None:
    """Their import costs more than parsing a few-MB trace: the native path must not need them."""
    src = _write(tmp_path / "src", json.dumps(_trace([_event(i) for i in range(50)])))
    code = textwrap.dedent(
        f"""
        import sys
        from scope.ingest import ingest
        report = ingest({str(src)!r}, {str(tmp_path / "store")!r})
        assert report.store.meta["ranks"]["0"]["n_events"] == 51
        print(sorted(m for m in ("pyarrow", "pandas", "numpy") if m in sys.modules))
        """
    )
    env = {**os.environ, "SCOPE_NATIVE": "1"}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
