"""A real 4-rank torchrun gloo job, profiled, ingested: all-reduces matched to steps on every rank."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from scope.cli import main
from scope.ingest import ingest
from tests.torch_jobs import run_profiled_job

JOB = Path(__file__).parent / "jobs" / "profiled_ddp.py"


@pytest.fixture(scope="session")
def gloo_traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("gloo_ddp")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "4", str(JOB), str(out)]
    proc = run_profiled_job(cmd, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


@pytest.mark.multirank
def test_real_gloo_job_ingests_with_allreduces_matched_to_steps(gloo_traces: Path, tmp_path: Path) -> None:
    report = ingest(gloo_traces, tmp_path / "store")
    store = report.store
    assert store.ranks == [0, 1, 2, 3]
    assert not report.errors and not report.partial
    assert store.run["backend"] == "gloo" and store.run["world_size"] == 4
    steps = store.steps()
    assert sorted(set(steps["step"])) == [2, 3, 4]  # schedule: wait 1, warmup 1, active 3
    coll = store.collectives()
    assert set(coll["op"]) == {"all_reduce"}
    assert (coll["pg"] == "0").all() and (coll["group_size"] == 4).all()
    # DDP's gradient bucket: both Linear(256,256) layers = 131,584 floats = 526,336 bytes per all-reduce
    assert (coll["bytes"] == 526_336).all()
    per_rank_step = coll.groupby(["rank", "step"]).size().unstack()
    assert list(per_rank_step.columns) == [2, 3, 4]
    assert (per_rank_step == 1).all().all()
    # same per-group sequence on every rank: seq i is the same step everywhere
    by_seq = coll.pivot(index="seq", columns="rank", values="step")
    assert (by_seq.nunique(axis=1) == 1).all()
    events = store.read_events(0, columns=["kind", "step", "thread"]).to_pandas()
    assert (events[events["kind"] == "cpu_op"]["step"] >= 0).mean() > 0.9


@pytest.mark.multirank
def test_analyze_cli_on_the_real_job(gloo_traces: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    out = tmp_path / "a.json"
    assert main(["analyze", str(gloo_traces), "--store", str(tmp_path / "s"), "--json", str(out), "-q"]) == 0
    data = json.loads(out.read_text())
    assert {"scope_version", "run", "ranks", "steps", "findings"} <= set(data)
    assert [r["rank"] for r in data["ranks"]] == [0, 1, 2, 3]
    assert len(data["steps"]) == 12 and all(s["step_us"] > 0 for s in data["steps"])
    text = capsys.readouterr().out
    assert "Per rank (profiled steps; shares of step time)" in text  # the one compact summary
