"""Memory over time from the traces' "[memory]" events: each device type and schema the profiler writes,
read by both ingest paths, with the peak equal to the trace's own maximum Total Allocated; real runs of
the sample workloads with a leak and with a stage-imbalanced pipeline; HTA's CUDA trace and an old
(pre-1.10) trace without totals."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from scope.analysis import run
from scope.ingest.dispatch import native_enabled
from tests.conftest import ROOT, shared_data
from tests.torch_jobs import run_profiled_job

MIB = 2**20
BASE_US = 1_700_000_000_000_000


def _memory_event(
    ts_us: float, nbytes: int, addr: int, dev_type: int, dev_id: int, totals: tuple[int, int] | None
) -> dict[str, Any]:
    args: dict[str, Any] = {"Device Type": dev_type, "Device Id": dev_id, "Addr": addr, "Bytes": nbytes}
    if totals is not None:
        args.update({"Total Allocated": totals[0], "Total Reserved": totals[1]})
    return {
        "ph": "i",
        "cat": "cpu_instant_event",
        "s": "t",
        "name": "[memory]",
        "pid": 1,
        "tid": 1,
        "ts": ts_us,
        "args": args,
    }


def write_memory_trace(path: Path, dev_type: int, dev_id: int, with_totals: bool, rank: int = 0) -> dict[str, int]:
    """A trace in Kineto's format: 4 ProfilerSteps, each allocating and freeing activations, with a block
    allocated before the profile freed in step 1 (an unmatched free). Returns the figures it was built with."""
    events: list[dict[str, Any]] = []
    allocated, reserved = 100 * MIB, 256 * MIB  # held before the profile began
    peak = 0
    addr = 0x7F0000000000
    for step in range(4):
        t0 = 1000.0 * step
        events.append(
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": f"ProfilerStep#{step}",
                "pid": 1,
                "tid": 1,
                "ts": t0,
                "dur": 900.0,
            }
        )
        events.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": t0 + 10, "dur": 50.0})
        blocks = []
        for i, size in enumerate((8 * MIB, 24 * MIB, (step + 1) * 16 * MIB)):
            allocated += size
            reserved = max(reserved, allocated + 64 * MIB)
            peak = max(peak, allocated)
            addr += 0x10000000
            blocks.append((addr, size))
            events.append(
                _memory_event(
                    t0 + 100 + 10 * i, size, addr, dev_type, dev_id, (allocated, reserved) if with_totals else None
                )
            )
        for i, (a, size) in enumerate(blocks):
            allocated -= size
            events.append(
                _memory_event(
                    t0 + 500 + 10 * i, -size, a, dev_type, dev_id, (allocated, reserved) if with_totals else None
                )
            )
        if step == 1:  # a block from before the profile
            allocated -= 4 * MIB
            events.append(
                _memory_event(
                    t0 + 800, -4 * MIB, 0x1000, dev_type, dev_id, (allocated, reserved) if with_totals else None
                )
            )
    header = {
        "schemaVersion": 1,
        "deviceProperties": [{"id": dev_id, "name": "GPU", "totalGlobalMem": 1024 * MIB}] if dev_type else [],
        "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 1},
        "baseTimeNanoseconds": BASE_US * 1000,
        "traceEvents": events,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(header))
    return {"peak": peak, "reserved": reserved}


def _analyze(folder: Path, tmp: Path, native: bool, monkeypatch: pytest.MonkeyPatch, **options: Any) -> Any:
    monkeypatch.setenv("SCOPE_NATIVE", "1" if native else "0")
    return run(folder, {"store": tmp / f"store-{native}", "workers": 1, **options})


PATHS = [False, True] if native_enabled() else [False]


@pytest.mark.parametrize("native", PATHS, ids=lambda n: "native" if n else "python")
@pytest.mark.parametrize(("dev_type", "dev_id", "label"), [(1, 0, "cuda:0"), (6, 3, "hip:3"), (0, -1, "cpu")])
def test_each_device_type_peaks_at_the_traces_own_total(
    dev_type: int, dev_id: int, label: str, native: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    figures = write_memory_trace(tmp_path / "t" / "rank0.pt.trace.json", dev_type, dev_id, with_totals=True)
    analysis = _analyze(tmp_path / "t", tmp_path, native, monkeypatch)
    ranks = analysis.tables["memory_ranks"]
    row = ranks[ranks["device"] == label].iloc[0]
    assert row["source"] == "totals"
    assert row["peak_allocated"] == figures["peak"]  # exactly the trace's maximum Total Allocated
    assert row["peak_reserved"] == figures["reserved"]
    assert row["peak_step"] == 3  # the last step allocates most
    assert row["unmatched_frees"] == 1 and row["unmatched_free_bytes"] == 4 * MIB
    assert row["total_mismatches"] == 0
    steps = analysis.tables["memory_steps"]
    mine = steps[steps["device"] == label].sort_values("step")
    assert mine["step"].tolist() == [0, 1, 2, 3]
    assert mine["end_allocated"].tolist() == [100 * MIB, 96 * MIB, 96 * MIB, 96 * MIB]
    assert mine["peak_allocated"].tolist() == [148 * MIB, 164 * MIB, 176 * MIB, 192 * MIB]
    timeline = analysis.tables["memory_timeline"]
    assert timeline[timeline["device"] == label]["allocated"].max() == figures["peak"]
    expected_capacity = 1024 * MIB if dev_type else -1
    assert row["capacity"] == expected_capacity
    assert row["headroom"] == (1024 * MIB - figures["reserved"] if dev_type else -1)


@pytest.mark.parametrize("native", PATHS, ids=lambda n: "native" if n else "python")
def test_old_traces_without_totals_are_a_running_sum_with_its_problem_said(
    native: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_memory_trace(tmp_path / "t" / "rank0.pt.trace.json", 1, 0, with_totals=False)
    analysis = _analyze(tmp_path / "t", tmp_path, native, monkeypatch)
    row = analysis.tables["memory_ranks"].iloc[0]
    assert row["source"] == "running_sum" and row["peak_reserved"] == -1
    # the sum starts at 0, falls by the 4 MiB freed from before the profile, and is lifted by it
    assert row["peak_allocated"] == (8 + 24 + 64) * MIB
    notes = [str(w) for w in analysis.warnings if "no Total Allocated" in str(w)]
    assert notes and "1 frees (4.0 MiB)" in notes[0] and "lifted" in notes[0], analysis.warnings


def test_headroom_and_fragmentation_are_judged_against_the_device(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    figures = write_memory_trace(tmp_path / "t" / "rank0.pt.trace.json", 1, 0, with_totals=True)
    tight = figures["reserved"] / 2**30 * 1.05  # a device 5% larger than the reservation
    analysis = _analyze(tmp_path / "t", tmp_path, True, monkeypatch, device_memory_gib=tight)
    kinds = {f.kind: f for f in analysis.findings}
    low = kinds["memory_headroom_low"]
    assert low.ranks == [0] and 4.0 < low.metrics["min_headroom_pct"] < 5.5
    roomy = _analyze(tmp_path / "t", tmp_path / "b", True, monkeypatch, device_memory_gib=64.0)
    assert "memory_headroom_low" not in {f.kind for f in roomy.findings}


@pytest.mark.slow  # seconds of analysis on real data (the unit tier stays under 120 s)
@pytest.mark.shared_data
def test_hta_cuda_trace_peak_equals_its_max_total_allocated(tmp_path: Path) -> None:
    src = shared_data("hta", "df_index_resolver", "df_index_resolver.json.gz")
    events = json.loads(gzip.decompress(src.read_bytes()))["traceEvents"]
    cuda = [e["args"] for e in events if e.get("name") == "[memory]" and e["args"].get("Device Type") == 1]
    analysis = run(src.parent, {"store": tmp_path / "store", "workers": 1})
    ranks = analysis.tables["memory_ranks"].set_index("device")
    assert ranks.loc["cuda:1", "peak_allocated"] == max(a["Total Allocated"] for a in cuda)
    assert ranks.loc["cuda:1", "peak_reserved"] == max(a["Total Reserved"] for a in cuda)
    assert ranks.loc["cuda:1", "events"] == len(cuda)
    frag = [f for f in analysis.findings if f.kind == "fragmentation"]
    # 12.8 GB reserved at a 6.6 GB allocation peak: the cache holds 5.7 GiB it does not use
    assert frag and 5.5 * 2**30 < frag[0].metrics["unallocated_bytes"]["1:cuda:1"] < 6 * 2**30


@pytest.mark.shared_data
def test_old_v100_trace_has_no_totals_and_says_so(tmp_path: Path) -> None:
    analysis = run(shared_data("kineto_dataloader", "num_workers_0"), {"store": tmp_path / "store", "workers": 1})
    ranks = analysis.tables["memory_ranks"].set_index("device")
    assert set(ranks.index) == {"cpu", "cuda:0"}
    assert (ranks["source"] == "running_sum").all()
    assert sum("no Total Allocated" in str(w) for w in analysis.warnings) == 2


@pytest.mark.multirank
def test_a_leaking_rank_is_named_by_its_growth(ddp_run: Any, tmp_path: Path) -> None:
    analysis = run(ddp_run("memory_leak"), {"store": tmp_path / "store"})
    growth = [f for f in analysis.findings if f.kind == "memory_growth"]
    assert len(growth) == 1 and growth[0].ranks == [2], [f.summary for f in analysis.findings]
    rate = growth[0].metrics["max_growth_bytes_per_step"]
    assert 3.5 * MIB < rate < 4.5 * MIB  # the fault keeps 4 MiB a step
    ranks = analysis.tables["memory_ranks"]
    assert set(ranks["rank"]) == {0, 1, 2, 3} and set(ranks["device"]) == {"cpu"}


@pytest.mark.multirank
def test_the_heavier_pipeline_stage_is_named_by_its_peak(tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "4"]
    cmd += ["-m", "scope.collectors.workloads.pipeline", "--schedule", "1f1b", "--microbatches", "8"]
    cmd += ["--steps", "5", "--profile-dir", str(traces), "--profile-memory"]
    cmd += ["--fault", "pipeline-imbalance", "--fault-rank", "1"]
    proc = run_profiled_job(cmd, timeout=300, cwd=ROOT)  # once more if torch itself aborted
    assert proc.returncode == 0, proc.stderr[-3000:]
    analysis = run(traces, {"store": tmp_path / "store"})
    imbalance = [f for f in analysis.findings if f.kind == "memory_imbalance"]
    assert len(imbalance) == 1 and imbalance[0].ranks == [1], [f.summary for f in analysis.findings]
    peaks = imbalance[0].metrics["peak_allocated_bytes"]
    assert peaks[1] > 1.5 * imbalance[0].metrics["median_peak_bytes"]
    by_stage = imbalance[0].metrics["peak_by_stage"]  # the pipeline analyzer's stages: rank r runs stage r
    assert sorted(by_stage) == [0, 1, 2, 3] and max(by_stage, key=by_stage.__getitem__) == 1
    assert "(pipeline stage 1)" in imbalance[0].summary
