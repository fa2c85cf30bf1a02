"""Headroom net of the memory outside PyTorch: a rank's CUDA memory trace beside the NVML counters the
sidecar sampled from the recorded replay of NVML's answers (tests/data/nvml_replay: 85.5 GB GPUs with
70 GB used). What NVML counts beyond the rank's peak reserve is its own line in the headroom finding."""

from __future__ import annotations

from pathlib import Path

from scope.collectors.sidecar.nvml import NvmlSource
from scope.collectors.sidecar.nvml_replay import ReplayNvml
from scope.collectors.sidecar.sampler import Sampler

from scope.analysis import run
from tests.test_memory_traces import write_memory_trace

REPLAY = Path(__file__).parent / "data" / "nvml_replay" / "h100_2gpu.json"
TOTAL, USED = 85_520_809_984, 70_000_000_000  # the replay's nvmlDeviceGetMemoryInfo of GPU 0


def test_headroom_is_net_of_memory_outside_pytorch(tmp_path: Path) -> None:
    job = tmp_path / "job"
    figures = write_memory_trace(job / "rank0.pt.trace.json", 1, 0, with_totals=True)
    sampler = Sampler(job, "gpuhost", [NvmlSource(api_factory=lambda: ReplayNvml(REPLAY))], hz=10)
    sampler.open()
    for _ in range(5):  # the recording's five ticks
        sampler.tick_all()
    sampler.stop()
    # 18% of the GPU is left by NVML: below a 20% threshold, so the finding speaks
    analysis = run(job, {"store": tmp_path / "store", "workers": 1, "memory_headroom_pct": 20.0})
    row = analysis.tables["memory_ranks"].set_index("device").loc["cuda:0"]
    assert row["capacity"] == TOTAL  # NVML's capacity, over the trace header's 1 GiB
    assert row["non_pytorch"] == USED - figures["reserved"]
    assert row["headroom"] == TOTAL - USED  # capacity - peak reserved - outside PyTorch
    found = [f for f in analysis.findings if f.kind == "memory_headroom_low"]
    assert len(found) == 1 and found[0].metrics["min_headroom_bytes"] == TOTAL - USED
    assert found[0].metrics["non_pytorch_bytes"] == USED - figures["reserved"]
    assert "outside PyTorch 64.94 GiB" in found[0].summary and "CUDA context, NCCL buffers" in found[0].summary


def test_without_nvml_the_headroom_is_pytorchs_alone(tmp_path: Path) -> None:
    job = tmp_path / "job"
    figures = write_memory_trace(job / "rank0.pt.trace.json", 1, 0, with_totals=True)
    analysis = run(job, {"store": tmp_path / "store", "workers": 1})
    row = analysis.tables["memory_ranks"].set_index("device").loc["cuda:0"]
    assert row["non_pytorch"] == -1 and row["headroom"] == row["capacity"] - figures["reserved"]
