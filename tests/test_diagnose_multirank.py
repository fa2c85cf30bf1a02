"""Real 4-rank gloo jobs under `scope run` with an injected hang, crash and desync: the diagnosis names
the injected rank and the collective. The three jobs start together (one fixture) to share the wait
for the process-group timeouts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from scope.analyzers.diagnose import diagnose

from scope.result import Analysis

ROOT = Path(__file__).resolve().parent.parent
FAULT_RANK = {"hang": 1, "crash": 2, "desync": 3}
pytestmark = pytest.mark.multirank


def scope_run(out: Path, fault: str) -> subprocess.Popen[bytes]:
    cmd = [
        sys.executable,
        "-m",
        "scope",
        "run",
        "--out",
        str(out),
        "--nproc-per-node",
        "4",
        "--no-sidecar",
        "--quiet",
        "--hang-timeout",
        "0",
        "--profile-start",
        "-1",
        "--",
        "-m",
        "scope.collectors.workloads.ddp",
        "--steps",
        "4",
        "--fault",
        fault,
        "--fault-rank",
        str(FAULT_RANK[fault]),
        "--pg-timeout-s",
        "10",
    ]
    log = open(out.parent / f"{fault}.out", "wb")  # noqa: SIM115 - closed by the fixture
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)


@pytest.fixture(scope="session")
def fault_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Analysis, float]]:
    base = tmp_path_factory.mktemp("diagnose_runs")
    procs = {fault: scope_run(base / fault, fault) for fault in FAULT_RANK}
    deadline = time.monotonic() + 240
    for fault, proc in procs.items():
        try:
            proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail(f"scope run --fault {fault} did not end; see {base / (fault + '.out')}")
    out = {}
    for fault in FAULT_RANK:
        t0 = time.perf_counter()
        report = diagnose(base / fault)
        out[fault] = (base / fault, report, time.perf_counter() - t0)
    return out


def truth(run: Path) -> dict:
    return json.loads((run / "ground_truth.json").read_text())


def test_hang_names_the_rank_that_skipped_the_all_reduce(fault_runs: dict) -> None:
    run, report, _ = fault_runs["hang"]
    top = report.findings[0]
    assert top.kind == "hang" and top.ranks == [truth(run)["fault_rank"]] == [1]
    assert top.metrics["details"]["op"] == truth(run)["op"] == "all_reduce"
    assert "never joined all_reduce" in top.summary
    assert "gloo_timeout" in top.metrics["cascade"]["by_code"]


def test_crash_names_the_raising_rank_and_its_exception(fault_runs: dict) -> None:
    run, report, _ = fault_runs["crash"]
    top = report.findings[0]
    assert top.kind == "crash" and top.ranks == [truth(run)["fault_rank"]] == [2]
    assert "injected crash" in top.summary and "ranks/2/stderr.log" in " ".join(top.evidence)
    assert not [f for f in report.findings[1:] if f.severity == "critical"]


def test_desync_names_the_rank_with_the_other_size(fault_runs: dict) -> None:
    run, report, _ = fault_runs["desync"]
    top = report.findings[0]
    assert top.kind == "collective_mismatch" and top.ranks == [truth(run)["fault_rank"]] == [3]
    assert top.metrics["details"]["op"] == "all_reduce" and "[[1024]]" in top.summary


def test_each_diagnosis_takes_well_under_a_second(fault_runs: dict) -> None:
    assert all(elapsed < 5 for _, _, elapsed in fault_runs.values())
