"""The peak attributed to module and op from a real profile: a tiny torch job on the CPU recorded with
profile_memory=True, with_modules=True, with_stack=True and record_shapes=True, in which one module (Hog)
holds most of the peak through one op (aten::repeat)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from scope.analysis import run
from scope.ingest.dispatch import native_enabled
from tests.torch_jobs import run_profiled_job

MIB = 2**20

JOB = """
import sys
import torch
from torch.profiler import ProfilerActivity, profile

class Hog(torch.nn.Module):
    def forward(self, x):
        return x.repeat(1, 1024)  # 64 x 65536 floats: 16 MiB, held for backward

class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(64, 64)
        self.hog = Hog()

    def forward(self, x):
        return self.hog(self.proj(x)).sum()

torch.manual_seed(0)
model, x = Head(), torch.randn(64, 64)
opts = dict(profile_memory=True, with_modules=True, with_stack=True, record_shapes=True)
with profile(activities=[ProfilerActivity.CPU], **opts) as prof:
    for _ in range(2):
        model(x).backward()
prof.export_chrome_trace(sys.argv[1])
"""


@pytest.fixture(scope="module")
def real_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("attrib") / "job"
    folder.mkdir()
    script = folder.parent / "job.py"
    script.write_text(JOB)
    proc = run_profiled_job([sys.executable, str(script), str(folder / "rank0.pt.trace.json")], timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return folder


PATHS = [False, True] if native_enabled() else [False]


@pytest.mark.parametrize("native", PATHS, ids=lambda n: "native" if n else "python")
def test_the_peak_is_attributed_to_the_module_and_op_that_hold_it(
    real_trace: Path, native: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCOPE_NATIVE", "1" if native else "0")
    analysis: Any = run(real_trace, {"store": tmp_path / "store", "workers": 1})
    table = analysis.tables["memory_peak_allocators"]
    top = table.iloc[0]
    assert top["device"] == "cpu" and top["rank"] == 0
    assert top["module"].endswith("Hog_0") and top["module"].startswith("Head_0")
    assert top["op"] == "aten::repeat" and top["bytes"] >= 16 * MIB
    # the rest of the peak is smaller, and every allocator row is a real module/op pair or said to be none
    assert (table["bytes"].iloc[1:] < top["bytes"]).all()
    peak = analysis.tables["memory_ranks"].iloc[0]["peak_allocated"]
    assert table["bytes"].sum() <= peak


def test_a_snapshot_site_names_its_module_path_and_aten_op(tmp_path: Path) -> None:
    """Frames as _record_memory_history(stacks="all") writes them: C++ dispatcher frames, then Python."""
    import pickle

    from scope.analyzers.memory.snapshots import snapshot_rows

    from scope.memory_snapshot import load_snapshot

    torch_nn = "/usr/lib/python3/site-packages/torch/nn"
    stack = [
        {"filename": "??", "line": 0, "name": "at::_ops::addmm::call(at::Tensor const&, at::Tensor const&)"},
        {"filename": f"{torch_nn}/functional.py", "line": 0, "name": "linear"},
        {"filename": f"{torch_nn}/modules/linear.py", "line": 125, "name": "forward"},
        {"filename": "/src/model.py", "line": 30, "name": "forward"},
        {"filename": "/src/train.py", "line": 10, "name": "train"},
    ]
    entry = {"action": "alloc", "addr": 4096, "size": 64 * MIB, "stream": 0, "time_us": 1, "frames": stack}
    path = tmp_path / "s.pickle"
    path.write_bytes(pickle.dumps({"segments": [], "device_traces": [[entry]]}))
    _, sites, _ = snapshot_rows(load_snapshot(path), 0)
    assert sites[0]["module"] == "model.py:30/linear.py:125" and sites[0]["op"] == "aten::addmm"
    assert sites[0]["site"] == "forward /src/model.py:30" and sites[0]["bytes"] == 64 * MIB
