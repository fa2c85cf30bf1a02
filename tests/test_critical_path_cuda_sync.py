"""Host waits on the GPU as graph edges: cudaEventRecord -> cudaEventSynchronize, cudaStreamSynchronize,
cudaDeviceSynchronize and a synchronous cudaMemcpy. One hand-built Kineto trace per kind (the runtime
calls, their correlation ids and Kineto's cuda_sync records as a profiled CUDA job writes them: we have
no GPU), then HTA's real event-sync trace (../shared/data/hta/critical_path/cuda_event_sync)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from scope.analyzers.critical_path.core import SYNC, solve
from scope.analyzers.critical_path.kineto import RankPart, rank_part

from scope.ingest import ingest
from tests.conftest import shared_data

STEP_US = 1000.0


def _host(name: str, ts: float, dur: float, corr: int) -> dict:
    return {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur,
            "args": {"correlation": corr}}  # fmt: skip


def _gpu(name: str, stream: int, ts: float, dur: float, corr: int, cat: str = "kernel") -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream, "ts": ts, "dur": dur,
            "args": {"correlation": corr, "stream": stream, "device": 0}}  # fmt: skip


def _part(tmp_path: Path, events: list[dict]) -> RankPart:
    step = {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0.0,
            "dur": STEP_US}  # fmt: skip
    (tmp_path / "traces").mkdir(parents=True)
    (tmp_path / "traces" / "rank0.pt.trace.json").write_text(json.dumps({"traceEvents": [step, *events]}))
    store = ingest(tmp_path / "traces", tmp_path / "store").store
    return rank_part(store.read_events(0).to_pandas(), 0)


def _waits(part: RankPart, call: str) -> tuple[list[str], pd.Series]:
    """The GPU ops whose end the call's completion waits for, and that completion's node."""
    nodes, edges = part.nodes, part.edges
    done = nodes[(nodes["name"] == call) & (nodes["role"] == "complete")]
    assert len(done) == 1, nodes
    into = edges[(edges["dst"] == done.index[0]) & (edges["kind"] == SYNC)]
    return sorted(nodes.loc[into["src"], "name"]), done.iloc[0]


def test_event_synchronize_waits_for_the_recorded_stream_point(tmp_path: Path) -> None:
    part = _part(tmp_path, [
        _host("cudaLaunchKernel", 1, 2, 1), _gpu("before_record", 7, 10, 100, 1),
        _host("cudaEventRecord", 4, 1, 2),
        _host("cudaLaunchKernel", 6, 2, 3), _gpu("after_record_same_stream", 7, 110, 300, 3),
        _host("cudaLaunchKernel", 9, 2, 4), _gpu("other_stream", 20, 10, 102, 4),  # ends later, still before
        _host("cudaEventSynchronize", 12, 103, 5),
    ])  # fmt: skip
    waits, done = _waits(part, "cudaEventSynchronize")
    # not what was enqueued after the record, nor another stream's work that merely ended before the return
    assert waits == ["before_record"]
    assert done["start"] == pytest.approx(110.0) and done["dur"] == pytest.approx(5.0)  # waits from its end


def test_stream_synchronize_waits_for_the_named_stream(tmp_path: Path) -> None:
    sync = {"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 20, "ts": 20, "dur": 390,
            "args": {"cuda_sync_kind": "Stream Sync", "stream": 20, "correlation": 5, "device": 0}}  # fmt: skip
    events = [
        _host("cudaLaunchKernel", 1, 2, 1), _gpu("on_20", 20, 10, 400, 1),
        _host("cudaLaunchKernel", 4, 2, 2), _gpu("on_7", 7, 10, 50, 2),
        _host("cudaStreamSynchronize", 20, 392, 5),
    ]  # fmt: skip
    waits, done = _waits(_part(tmp_path / "named", [*events, sync]), "cudaStreamSynchronize")
    assert waits == ["on_20"] and done["start"] == pytest.approx(410.0)
    # without Kineto's Stream Sync record: the stream this thread enqueued on last
    waits, _ = _waits(_part(tmp_path / "unnamed", events), "cudaStreamSynchronize")
    assert waits == ["on_7"]


def test_device_synchronize_waits_for_every_stream(tmp_path: Path) -> None:
    part = _part(tmp_path, [
        _host("cudaLaunchKernel", 1, 2, 1), _gpu("first_on_7", 7, 10, 50, 1),
        _host("cudaLaunchKernel", 4, 2, 2), _gpu("last_on_7", 7, 60, 50, 2),
        _host("cudaLaunchKernel", 7, 2, 3), _gpu("last_on_20", 20, 10, 300, 3),
        _host("cudaDeviceSynchronize", 12, 300, 4),
        _host("cudaLaunchKernel", 320, 2, 5), _gpu("after_sync", 7, 325, 10, 5),
    ])  # fmt: skip
    waits, done = _waits(part, "cudaDeviceSynchronize")
    assert waits == ["last_on_20", "last_on_7"]
    g_len = solve(_graph(part)).length
    # the path: launch of last_on_20 -> its 300 µs -> the sync's return -> the next launch and kernel
    assert g_len == pytest.approx(335.0 - 0.0, abs=1.0)
    assert done["start"] == pytest.approx(310.0)


def test_a_synchronous_memcpy_waits_for_its_copy(tmp_path: Path) -> None:
    part = _part(tmp_path, [
        _host("cudaLaunchKernel", 1, 2, 1), _gpu("compute", 7, 10, 200, 1),
        _host("cudaMemcpy", 5, 210, 2), _gpu("Memcpy DtoH (Device -> Pageable)", 7, 210, 4, 2, cat="gpu_memcpy"),
    ])  # fmt: skip
    waits, done = _waits(part, "cudaMemcpy")
    assert waits == ["Memcpy DtoH (Device -> Pageable)"]
    assert done["start"] == pytest.approx(214.0) and done["dur"] == pytest.approx(1.0)


def _graph(part: RankPart):  # type: ignore[no-untyped-def]
    from scope.analyzers.critical_path.assemble import PARTICIPANT_COLUMNS, step_graph

    return step_graph([part], pd.DataFrame(columns=PARTICIPANT_COLUMNS), int(part.nodes["step"].iloc[0]))


@pytest.mark.shared_data
def test_hta_event_sync_trace_waits_for_the_kernel_before_the_record(tmp_path: Path) -> None:
    """HTA's trace: Kineto's own Event Sync record names the awaited record (correlation 1533, stream 7);
    the launch order reads the same point: the spin kernel enqueued on stream 7 before that record."""
    store = ingest(shared_data("hta", "critical_path", "cuda_event_sync"), tmp_path / "store").store
    events = store.read_events(0).to_pandas()
    events["step"] = 0  # the trace has no ProfilerStep: one window
    part = rank_part(events, 0)
    waits, done = _waits(part, "cudaEventSynchronize")
    assert len(waits) == 1 and waits[0].startswith("at::cuda::(anonymous namespace)::spin_kernel")
    spin = part.nodes[part.nodes["name"] == waits[0]].iloc[0]
    assert done["start"] == pytest.approx(spin["start"] + spin["dur"])
