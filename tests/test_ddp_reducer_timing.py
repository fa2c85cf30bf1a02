"""DDP's built-in reducer under scope's timed comm hook (collectors/hook/ddp_reducer.py), on real gloo ranks:
the gradients are those of the C++ path bit for bit, its all-reduces are timed, and a comm hook the job
registers after the first forward still runs (the reducer takes one hook only)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
JOB = ROOT / "tests" / "jobs" / "ddp_reducer_job.py"


@pytest.mark.multirank
@pytest.mark.parametrize("view", [[], ["--view"]], ids=["copied", "gradient_as_bucket_view"])
def test_the_timed_reducer_matches_the_builtin_bit_for_bit_and_times_buckets(tmp_path: Path, view: list[str]) -> None:
    out = tmp_path / "report.json"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "3", str(JOB), str(out)]
    cmd += view
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCOPE_")}
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["installed"] == 1 and report["equal"] is True, report
    # 4 steps of at least one bucket each (DDP rebuilds its buckets after the first), all of the gradients
    assert report["calls"] >= 4 + 3 * (report["buckets"] - 1) and report["ns"] > 0, report
    assert report["bytes"] >= 4 * 82_689 * 4, report  # the model's 82,689 float32 gradients, each step
    assert report["late_error"] == "" and report["job_hook_calls"] >= 1, report
