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
