"""The native snapshot reader (scope.ingest._native.read_snapshot): the same snapshot as the pure-Python
path reads, a 100k-entry snapshot at a speed floor, and hostile pickles refused by opcode."""

from __future__ import annotations

import os
import pickle
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scope.analyzers.memory.snapshot import peak_sites, replay, reserve

from benchmarks.memory import synthetic_snapshot
from scope.errors import ScopeError
from scope.ingest.dispatch import native_enabled
from scope.memory_snapshot import Snapshot, load_snapshot

if not native_enabled():
    if os.environ.get("SCOPE_REQUIRE_NATIVE") == "1":
        pytest.fail("the native ingest core (scope.ingest._native) is not built", pytrace=False)
    pytest.skip("the native ingest core is not built (no C compiler?)", allow_module_level=True)

from scope.ingest import _native  # after the skip: the module may not be built


def two_devices(entries: int) -> dict[str, Any]:
    """The benchmark's realistic snapshot with a second device holding the first third of the trace."""
    snap = synthetic_snapshot(entries, seed=3)
    trace = snap["device_traces"][0]
    snap["device_traces"].append(trace[: entries // 3])
    return snap


def read(path: Path, monkeypatch: pytest.MonkeyPatch, native: bool) -> Snapshot:
    with monkeypatch.context() as m:
        m.setenv("SCOPE_NATIVE", "1" if native else "0")
        return load_snapshot(path)


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_native_and_python_paths_read_the_same_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, protocol: int
) -> None:
    path = tmp_path / "snap.pickle"
    path.write_bytes(pickle.dumps(two_devices(3_000), protocol=protocol))
    fast, slow = read(path, monkeypatch, True), read(path, monkeypatch, False)
    assert [len(t) for t in fast.traces] == [3_000, 1_000]
    for a, b in zip(fast.traces, slow.traces, strict=True):
        for col in ("action", "addr", "size", "time_us"):
            assert np.array_equal(getattr(a, col), getattr(b, col))
        # handles differ (interned by content vs one per list): the frames they stand for do not
        assert [fast.stack(h) for h in a.stack[:200]] == [slow.stack(h) for h in b.stack[:200]]
    for device in (0, 1):
        rf, rs = replay(fast, device), replay(slow, device)
        assert rf.peak_bytes == rs.peak_bytes > 0 and rf.peak_entry == rs.peak_entry
        assert [(s.site, s.bytes) for s in peak_sites(fast, rf)] == [(s.site, s.bytes) for s in peak_sites(slow, rs)]
    assert reserve(fast, 0) == reserve(slow, 0)
    # 2,000 call paths over 600 frames: interned once each, however many entries hold them
    assert len(fast.stacks.frames) <= 600 and fast.stacks.count() <= 2_000


def test_replay_matches_a_plain_walk_of_the_trace(tmp_path: Path) -> None:
    """The array replay's peak equals a dict-walk of the same entries, blocks from before recording included."""
    snap = synthetic_snapshot(5_000, seed=7)
    trace = snap["device_traces"][0]
    del trace[:50]  # frees of blocks allocated before the trace starts
    path = tmp_path / "s.pickle"
    path.write_bytes(pickle.dumps(snap))
    live: dict[int, int] = {}
    seen: set[int] = set()
    for e in trace:
        if e["action"] == "alloc":
            seen.add(e["addr"])
        elif e["action"] == "free_completed" and e["addr"] not in seen and e["addr"] not in live:
            live[e["addr"]] = e["size"]
    level = peak = sum(live.values())
    for e in trace:
        if e["action"] == "alloc":
            live[e["addr"]] = e["size"]
            level += e["size"]
        elif e["action"] == "free_completed" and e["addr"] in live:
            level -= live.pop(e["addr"])
        peak = max(peak, level)
    assert replay(load_snapshot(path), 0).peak_bytes == peak


def test_a_100k_entry_snapshot_reads_about_as_fast_as_a_bare_unpickle(tmp_path: Path) -> None:
    """The floor: 100k entries with 20-40 frames each, read and replayed within 1.5x of pickle.loads alone
    (which neither checks nor analyzes), and in under 5 s on a busy 2-core machine. The pure-Python path
    takes several times pickle.loads; the native reader about as long."""
    data = pickle.dumps(synthetic_snapshot(100_000))
    path = tmp_path / "big.pickle"
    path.write_bytes(data)
    bare = fast = float("inf")
    for _ in range(2):  # best of two: another job on the machine may take a core for a while
        start = time.perf_counter()
        pickle.loads(data)
        bare = min(bare, time.perf_counter() - start)
        start = time.perf_counter()
        snap = load_snapshot(path)
        rep = replay(snap, 0)
        fast = min(fast, time.perf_counter() - start)
    # within 1.5x of a bare pickle.loads: clean-clone CI read 0.18 s against 0.14 s once (the replay now also
    # keeps the blocks from before recording at the peak); the pure-Python path takes several times it
    assert fast < 5.0 and fast < 1.5 * bare, f"native read + replay {fast:.2f} s, bare pickle.loads {bare:.2f} s"
    assert len(snap.traces[0]) == 100_000 and rep.peak_bytes > 0
    assert isinstance(snap.traces[0].addr, np.ndarray)  # columns, not a dict per entry


def _op(code: bytes) -> bytes:
    return b"\x80\x04" + code


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (_op(b"\x8c\x05posix\x8c\x06system\x93."), "refusing global"),
        (_op(b"cposix\nsystem\n."), "refusing global"),
        (_op(b"}\x8c\x01a)R."), "builds objects"),
        (_op(b"}}b."), "builds objects"),
        (_op(b"}2."), "unsupported pickle opcode"),
        (_op(b"}r\xff\xff\xff\x7f."), "memo index"),
        (_op(b"j\x05\x00\x00\x00."), "memo reference"),
        (_op(b"\x8b\xff\xff\xff\x7f"), "truncated"),
        (_op(b"X\xff\xff\xff\x7f"), "truncated"),
        (_op(b"\x8c\x02\xc3\x28."), "UTF-8"),
        (_op(b"\x8a\x50" + b"\x01" * 80 + b"."), "integer"),
        (_op(b"]}a}."), "stack not a single value"),
        (_op(b"e."), "no mark"),
        (_op(b"}(]\x85\x8c\x01au."), "unhashable"),
    ],
    ids=[
        "stack-global",
        "global",
        "reduce",
        "build",
        "dup",
        "memo-put",
        "memo-get",
        "long4",
        "unicode",
        "utf8",
        "long1",
        "two-values",
        "no-mark",
        "unhashable",
    ],
)
def test_hostile_pickles_are_refused_by_the_native_reader(content: bytes, words: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=words):
        _native.read_snapshot(content, 10_000)
    path = tmp_path / "rank0_snapshot.pickle"
    path.write_bytes(content)
    with pytest.raises(ScopeError) as err:
        load_snapshot(path)
    assert str(path) in str(err.value)


def test_a_deep_nest_is_read_without_recursion(tmp_path: Path) -> None:
    """200,000 nested lists in 600 KB: the reader keeps no C recursion, so no stack overflow."""
    deep = b"]" * 200_000 + b"a" * 199_999
    path = tmp_path / "deep.pickle"
    path.write_bytes(_op(b"}\x8c\x08segments" + deep + b"s."))
    snap = load_snapshot(path)  # not a snapshot's shape: no segment, no trace, and no crash
    assert snap.segments == [] and snap.traces == []
