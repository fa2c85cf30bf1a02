"""Allocator snapshots (torch.cuda.memory._dump_snapshot pickles): both formats read into one model, the
timeline replayed with blocks from before recording counted, the peak attributed to its stacks, the
reserve split as segsum does; hostile pickles refused with the file named. The snapshots are made here
in the real formats (keys as torch writes them); the public ones are read where SCOPE_PUBLIC_SNAPSHOTS
points (never committed)."""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

import pytest
from scope.analyzers.memory.snapshot import peak_sites, replay, reserve

from scope.analysis import run
from scope.errors import ScopeError
from scope.memory_snapshot import load_snapshot

MIB = 2**20
USER = "/home/me/train.py"


def frames(*names: str, user_line: int = 10) -> list[dict[str, Any]]:
    """A stack as torch records it: innermost first, the framework's frames above the user's."""
    out = [{"filename": "/usr/lib/python3.11/site-packages/torch/nn/modules/linear.py", "line": 125, "name": "forward"}]
    out += [{"filename": USER, "line": user_line + i, "name": n} for i, n in enumerate(names)]
    return out


def current_snapshot() -> dict[str, Any]:
    """torch >= 2.1: a 64 MiB segment (a 4 MiB block kept from before recording, a 20 MiB activation, 40 MiB
    free) and a trace: weights freed (allocated before recording), activations up and down, a leak kept."""
    base = 0x7F0000000000
    blocks = [
        {
            "address": base,
            "size": 4 * MIB,
            "requested_size": 4 * MIB - 512,
            "state": "active_allocated",
            "frames": frames("init", user_line=5),
        },
        {
            "address": base + 4 * MIB,
            "size": 20 * MIB,
            "requested_size": 20 * MIB,
            "state": "active_allocated",
            "frames": frames("leak", user_line=40),
        },
        {"address": base + 24 * MIB, "size": 40 * MIB, "requested_size": 0, "state": "inactive", "frames": []},
    ]
    segment = {
        "device": 0,
        "address": base,
        "total_size": 64 * MIB,
        "allocated_size": 24 * MIB,
        "active_size": 24 * MIB,
        "requested_size": 24 * MIB - 512,
        "stream": 0,
        "segment_type": "large",
        "segment_pool_id": (0, 0),
        "is_expandable": False,
        "frames": [],
        "blocks": blocks,
    }
    t = 1_700_000_000_000_000
    trace = [
        {
            "action": "free_requested",
            "addr": 0x1000,
            "size": 8 * MIB,
            "stream": 0,
            "time_us": t,
            "frames": frames("drop_weights"),
        },
        {
            "action": "free_completed",
            "addr": 0x1000,
            "size": 8 * MIB,
            "stream": 0,
            "time_us": t + 1,
            "frames": frames("drop_weights"),
        },
        {
            "action": "alloc",
            "addr": 0x2000,
            "size": 30 * MIB,
            "stream": 0,
            "time_us": t + 2,
            "frames": frames("forward", "attention", user_line=20),
        },
        {
            "action": "alloc",
            "addr": 0x3000,
            "size": 10 * MIB,
            "stream": 0,
            "time_us": t + 3,
            "frames": frames("backward", user_line=30),
        },
        {"action": "free_completed", "addr": 0x2000, "size": 30 * MIB, "stream": 0, "time_us": t + 4, "frames": []},
        {"action": "free_completed", "addr": 0x3000, "size": 10 * MIB, "stream": 0, "time_us": t + 5, "frames": []},
        {
            "action": "alloc",
            "addr": base + 4 * MIB,
            "size": 20 * MIB,
            "stream": 0,
            "time_us": t + 6,
            "frames": frames("leak", user_line=40),
        },
    ]
    return {"segments": [segment], "device_traces": [trace], "allocator_settings": {"expandable_segments": False}}


def old_snapshot() -> dict[str, Any]:
    """torch 2.0 (2023): blocks without addresses, their stack in `history`, a trace without times."""
    blocks = [
        {
            "size": 6 * MIB,
            "requested_size": 6 * MIB,
            "state": "active_allocated",
            "history": [{"addr": 0x10, "real_size": 6 * MIB, "frames": frames("embed")}],
        },
        {"size": 2 * MIB, "requested_size": 2 * MIB, "state": "inactive", "history": []},
    ]
    seg = {
        "device": 0,
        "address": 0x10,
        "total_size": 8 * MIB,
        "allocated_size": 6 * MIB,
        "active_size": 6 * MIB,
        "requested_size": 6 * MIB,
        "stream": 0,
        "segment_type": "large",
        "blocks": blocks,
    }
    return {"segments": [seg], "device_traces": [[{"action": "snapshot", "addr": 0, "size": 8 * MIB, "stream": 0}]]}


def write(path: Path, obj: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(obj, protocol=4))
    return path


def test_current_format_replays_with_blocks_from_before_recording(tmp_path: Path) -> None:
    snap = load_snapshot(write(tmp_path / "snap.pickle", current_snapshot()))
    assert snap.format == "current" and snap.entries() == 7
    rep = replay(snap, 0)
    # before recording: the 8 MiB freed in the trace and the 4 MiB still active without an alloc
    assert rep.initial_bytes == 12 * MIB
    assert rep.peak_bytes == (12 - 8 + 30 + 10) * MIB and rep.peak_entry == 3
    sites = peak_sites(snap, rep)
    assert [(s.site, s.bytes, s.phase) for s in sites] == [
        (f"forward {USER}:20", 30 * MIB, "forward"),
        (f"backward {USER}:30", 10 * MIB, "backward"),
        (f"init {USER}:5", 4 * MIB, "forward"),
    ]
    res = reserve(snap, 0)
    assert (res.reserved, res.allocated, res.internal_free, res.external_free) == (64 * MIB, 24 * MIB, 512, 40 * MIB)
    assert res.largest_free_block == 40 * MIB and res.stranded == 0


def test_2023_format_takes_addresses_from_the_segment_and_stacks_from_history(tmp_path: Path) -> None:
    snap = load_snapshot(write(tmp_path / "old.pickle", old_snapshot()))
    assert snap.format == "2023"
    assert [b.address for b in snap.segments[0].blocks] == [0x10, 0x10 + 6 * MIB]
    rep = replay(snap, 0)
    assert rep.peak_bytes == 6 * MIB == rep.initial_bytes  # only the state at the snapshot: no alloc in the trace
    assert peak_sites(snap, rep)[0].site == f"embed {USER}:10"


def test_torch_1_segment_list_is_read(tmp_path: Path) -> None:
    snap = load_snapshot(write(tmp_path / "list.pickle", old_snapshot()["segments"]))
    assert snap.traces == [] and reserve(snap, 0).reserved == 8 * MIB


class _Evil:
    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, ("touch /tmp/scope-pwned",))


def _bomb() -> bytes:
    """13 KB that stand for 10^7 blocks: 3,000 segments share one list of 3,000 blocks."""
    blocks = [{"size": 512, "state": "inactive"}] * 3_000
    segment = {"device": 0, "address": 0, "total_size": 512, "blocks": blocks}
    return pickle.dumps({"segments": [segment] * 3_000, "device_traces": []}, protocol=4)


def _nested() -> bytes:
    """863 bytes that stand for 2^60 values, where a string is expected (str() of it would never end)."""
    layer: list[Any] = ["x"]
    for _ in range(60):
        layer = [layer, layer]
    entry = {"action": layer, "addr": 1, "size": 1, "frames": [{"filename": layer, "line": layer, "name": "f"}]}
    return pickle.dumps({"segments": [], "device_traces": [[entry]]}, protocol=4)


def test_a_field_of_the_wrong_type_is_never_converted(tmp_path: Path) -> None:
    path = tmp_path / "nested.pickle"
    path.write_bytes(_nested())
    snap = load_snapshot(path)  # read at once: the bomb sits where a string belongs, and is not expanded
    assert snap.traces[0][0][0] == "?" and snap.stack(snap.traces[0][0][4]) == (("?", -1, "f"),)


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (pickle.dumps({"segments": [], "device_traces": [[_Evil()]]}), "refusing global"),
        (_bomb(), "pickle bomb"),
        (pickle.dumps(current_snapshot())[:300], "truncated"),
        (pickle.dumps({"entries": []}), "not a memory snapshot"),
        (b"", "empty"),
        (b'{"segments": []}', "not a pickle"),
    ],
    ids=["global", "bomb", "truncated", "not-snapshot", "empty", "json"],
)
def test_hostile_or_broken_pickles_are_refused_with_the_file_named(content: bytes, words: str, tmp_path: Path) -> None:
    path = tmp_path / "rank0_snapshot.pickle"
    path.write_bytes(content)
    with pytest.raises(ScopeError) as err:
        load_snapshot(path)
    assert str(path) in str(err.value) and words in str(err.value)
    assert not Path("/tmp/scope-pwned").exists()


def test_an_oversized_snapshot_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = write(tmp_path / "big.pickle", current_snapshot())
    with pytest.raises(ScopeError, match="refused"):
        load_snapshot(path, max_bytes=100)


def test_analyze_reads_snapshots_per_rank_and_names_fragmentation(tmp_path: Path) -> None:
    frag = current_snapshot()
    seg = frag["segments"][0]
    # 2 GiB reserved of which 1.5 GiB sits free in 3 blocks between allocations: fragmentation
    seg["total_size"] = 2048 * MIB
    seg["blocks"][2]["size"] = 512 * MIB
    seg["blocks"] += [
        {
            "address": 0x7F0000000000 + 536 * MIB,
            "size": 512 * MIB,
            "requested_size": 0,
            "state": "inactive",
            "frames": [],
        },
        {
            "address": 0x7F0000000000 + 1048 * MIB,
            "size": 488 * MIB,
            "requested_size": 0,
            "state": "inactive",
            "frames": [],
        },
        {
            "address": 0x7F0000000000 + 1536 * MIB,
            "size": 512 * MIB,
            "requested_size": 512 * MIB,
            "state": "active_allocated",
            "frames": frames("kv_cache"),
        },
    ]
    write(tmp_path / "job" / "rank2_snapshot.pickle", frag)
    write(tmp_path / "job" / "rank0_snapshot.pickle", old_snapshot())
    (tmp_path / "job" / "rank1_snapshot.pickle").write_bytes(_bomb())
    analysis = run(tmp_path / "job", {"store": tmp_path / "store"})
    table = analysis.tables["memory_snapshots"].set_index("rank")
    assert sorted(table.index) == [0, 2]
    assert table.loc[2, "external_free"] == 1512 * MIB and table.loc[2, "stranded_free"] == 1000 * MIB
    found = [f for f in analysis.findings if f.kind == "fragmentation"]
    assert len(found) == 1 and found[0].ranks == [2] and found[0].metrics["source"] == "snapshot"
    assert "expandable_segments:True" in found[0].suggestion
    bad = [w for w in analysis.warnings if "rank1_snapshot" in str(w)]
    assert bad and "pickle bomb" in str(bad[0])
    # a snapshot named like a rank's file is not taken for a broken Flight Recorder dump
    assert not [f for f in analysis.findings if "Flight Recorder" in f.summary]


PUBLIC = Path(os.environ.get("SCOPE_PUBLIC_SNAPSHOTS", "/nonexistent"))


@pytest.mark.shared_data
def test_public_flexgen_oom_snapshot_is_demand_not_fragmentation() -> None:
    path = PUBLIC / "oom_snapshot.pickle"
    if not path.exists():
        pytest.skip(
            f"public snapshot not available: set SCOPE_PUBLIC_SNAPSHOTS to a folder with {path.name} "
            "(Yiyi-philosophy/LLM-inference, Apache-2.0)"
        )
    snap = load_snapshot(path)
    res = reserve(snap, 0)
    assert snap.format == "2023"
    assert res.reserved - res.allocated < 0.001 * res.reserved  # reserved ~ allocated: demand
    assert replay(snap, 0).peak_bytes == res.allocated


def test_compare_names_the_peak_change_and_the_sites_it_came_from(tmp_path: Path) -> None:
    from scope.compare import compare_paths
    from scope.render.compare import render_compare
    from tests.test_memory_traces import write_memory_trace

    a, b = tmp_path / "a", tmp_path / "b"
    write_memory_trace(a / "rank0.pt.trace.json", 1, 0, with_totals=True)
    write_memory_trace(b / "rank0.pt.trace.json", 1, 0, with_totals=True)
    bigger = current_snapshot()
    bigger["device_traces"][0][2]["size"] = 50 * MIB  # the attention activation grew by 20 MiB
    write(a / "rank0_snapshot.pickle", current_snapshot())
    write(b / "rank0_snapshot.pickle", bigger)
    data = compare_paths(a, b).to_dict()["memory"]
    assert data["change_bytes"] == 0  # the traces' peaks are the same
    assert data["sites"][0]["site"] == f"forward {USER}:20" and data["sites"][0]["change_bytes"] == 20 * MIB
    assert "Memory (peak allocated per rank)" in render_compare(compare_paths(a, b).result())


def test_the_peak_is_placed_in_the_annotations_open_at_its_time(tmp_path: Path) -> None:
    from scope.analyzers.memory.snapshots import snapshot_rows

    snap_dict = current_snapshot()
    t = 1_700_000_000_000_000
    snap_dict["external_annotations"] = [
        {"stage": "START", "name": "ProfilerStep#7", "device": 0, "time_us": t},
        {"stage": "START", "name": "## backward ##", "device": 0, "time_us": t + 2},
        {"stage": "END", "name": "## backward ##", "device": 0, "time_us": t + 4},
        {"stage": "START", "name": "optimizer.step", "device": 0, "time_us": t + 5},
    ]
    rows = snapshot_rows(load_snapshot(write(tmp_path / "s.pickle", snap_dict)), 0).rows
    # the peak is at entry 3 (t + 3): inside step 7's backward range
    assert rows[0]["peak_time_us"] == t + 3
    assert rows[0]["peak_annotations"] == "ProfilerStep#7 > ## backward ##"
    assert rows[0]["peak_phase"] == "backward"


def test_one_analysis_replays_each_device_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The row, the peak sites and the flame graph share one replay: it is most of a snapshot's analysis
    time (a 1M-entry snapshot's replay took as long as its reading, and it ran twice)."""
    import scope.analyzers.memory.snapshots as snapshots

    calls: list[int] = []

    def counted(snap: Any, device: int) -> Any:
        calls.append(device)
        return replay(snap, device)

    monkeypatch.setattr(snapshots, "replay", counted)
    write(tmp_path / "job" / "rank0_snapshot.pickle", current_snapshot())
    analysis = run(tmp_path / "job", {"store": tmp_path / "store"})
    assert calls == [0]
    assert len(analysis.tables["memory_peak_flame"]) > 1 and len(analysis.tables["memory_peak_sites"]) > 0
