"""The hook's own records never cost the job: torch.load / torch.save wrapping does no record read or write
on the job's thread, data loads are not checkpoints, a save loaded back mid-run is no restart, and a FIFO
where the hook keeps its records does not stop the job (collectors/hook/checkpoints.py, lifecycle.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from scope.analyzers.goodput import goodput
from scope.collectors.launch_env import SITE_DIR

ROOT = Path(__file__).resolve().parent.parent
JOB = ROOT / "tests" / "jobs" / "load_loop.py"


def _job_env(run_dir: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCOPE_")}
    env.update(PYTHONPATH=os.pathsep.join([str(SITE_DIR), str(ROOT)]), RANK="0", SCOPE_PROFILE_START="-1")
    if run_dir is not None:
        env["SCOPE_RUN_DIR"] = str(run_dir)
    return env


def run_job(run_dir: Path | None, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The job alone (RUN_DIR None) or under the hook, with no profiler window (its cost is not the point)."""
    return subprocess.run(
        [sys.executable, str(JOB), *args],
        env=_job_env(run_dir),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_jobs_together(run_dirs: list[Path | None], go: Path, *args: str) -> list[subprocess.CompletedProcess[str]]:
    """run_job for each folder, all at once, their loops started together once every job is ready (`go`): the
    loops share the host's load, whatever it does meanwhile."""
    cmd = [sys.executable, str(JOB), *args, "--wait-for", str(go)]
    procs = [
        subprocess.Popen(cmd, env=_job_env(d), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for d in run_dirs
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline() == "ready\n", proc.args
    finally:
        go.touch()
    ended = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        ended.append(subprocess.CompletedProcess(cmd, proc.returncode, "ready\n" + out, err))
    return ended


def _value(proc: subprocess.CompletedProcess[str], key: str) -> str:
    assert proc.returncode == 0, proc.stderr[-3000:]
    return next(line.split()[1] for line in proc.stdout.splitlines() if line.startswith(key + " "))


def _records(run: Path, name: str) -> list[dict]:  # type: ignore[type-arg]
    path = run / "ranks" / "0" / name
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Small data shards made beforehand, as a preprocessing script would (no hook)."""
    sys.path.insert(0, str(JOB.parent))
    try:
        import load_loop
    finally:
        sys.path.remove(str(JOB.parent))
    folder = tmp_path_factory.mktemp("shards")
    load_loop.make_shards(folder, 200)
    return folder


@pytest.mark.subprocess
def test_data_shard_loads_cost_the_job_nothing_and_are_not_checkpoints(tmp_path: Path, shards: Path) -> None:
    """2,000 torch.load calls of small shards from the training loop: under the hook the loop takes about
    as long as alone (it took 25x when each load re-read the growing checkpoints.jsonl on the job's thread),
    and goodput counts no checkpoint load and no resume."""
    args = ("--steps", "20", "--shards", str(shards), "--loads-per-step", "100")
    run = tmp_path / "run"
    # Side by side, both loops started together, so that they see the same host load: one after the other at load
    # 11 on 2 cores the plain loop alone took 2.81 s and then 1.88 s, and the hooked one 1.71 s and 1.87 s.
    plain, hooked = run_jobs_together([None, run], tmp_path / "go", *args)
    assert _value(hooked, "checksum") == _value(plain, "checksum")
    alone, under = float(_value(plain, "elapsed")), float(_value(hooked, "elapsed"))
    assert under < 2.0 * alone + 0.5, f"{under:.2f} s under the hook, {alone:.2f} s alone"
    assert [r for r in _records(run, "checkpoints.jsonl") if r["op"] == "load"] == []
    assert "torch.load call(s) taken for data" in (run / "ranks" / "0" / "hook.log").read_text()
    report = goodput(run)
    assert len(report.acc.attempts) == 1 and not report.checkpoints
    assert report.acc.steps_redone == 0 and report.acc.steps_completed == 20


@pytest.mark.subprocess
def test_best_weights_loaded_back_mid_run_are_not_a_restart(tmp_path: Path) -> None:
    """best.pt saved at step 10 and loaded back at step 20, in one process: a checkpoint load, no attempt."""
    run, out = tmp_path / "run", tmp_path / "out"
    out.mkdir()
    proc = run_job(run, "--steps", "30", "--best", str(out))
    assert proc.returncode == 0, proc.stderr
    cps = [(r["op"], r["global_step"]) for r in _records(run, "checkpoints.jsonl")]
    assert cps == [("save", 10), ("load", 20)]
    report = goodput(run)
    assert len(report.acc.attempts) == 1, [a.ended for a in report.acc.attempts]
    assert report.acc.steps_redone == 0 and report.acc.steps_completed == 30
    assert [c.op for c in report.checkpoints] == ["save", "load"]


@pytest.mark.subprocess
def test_a_fifo_where_the_hook_keeps_its_records_never_stops_the_job(tmp_path: Path) -> None:
    """FIFOs at ranks/0/attempts.jsonl and checkpoints.jsonl (which the hook reads at start) and progress.jsonl:
    the job runs to its end as it would alone; hook.log names what it skipped."""
    run, out = tmp_path / "run", tmp_path / "out"
    rank = run / "ranks" / "0"
    rank.mkdir(parents=True)
    out.mkdir()
    for name in ("attempts.jsonl", "checkpoints.jsonl", "progress.jsonl"):
        os.mkfifo(rank / name)
    (rank / "heartbeat.json").write_text(json.dumps({"rank": 0, "pid": 1, "step": 3}))  # an earlier attempt's
    args = ("--steps", "30", "--best", str(out))
    try:
        hooked = run_job(run, *args, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the job did not finish in 60 s: the hook blocked on a FIFO")
    assert _value(hooked, "checksum") == _value(run_job(None, *args), "checksum")
    log = (rank / "hook.log").read_text()
    assert "attempts.jsonl: a FIFO, not a regular file; skipped" in log
    assert "exit after 30 steps" in log


def test_records_of_a_hook_that_logged_every_load_still_count_no_data_load(tmp_path: Path) -> None:
    """checkpoints.jsonl from an older hook: 4,000 small shard loads from the training loop and one real
    resume-time load of a saved checkpoint. Goodput counts the save and that load, not the shards."""
    t0, s = 1_700_000_000 * 10**9, 10**9
    rank = tmp_path / "ranks" / "0"
    rank.mkdir(parents=True)
    attempts = [
        {"event": "start", "attempt": 0, "pid": 1, "time_ns": t0, "proc_start_ns": t0},
        {"event": "end", "attempt": 0, "state": "exited", "step": 40, "global_step": 40, "time_ns": t0 + 50 * s},
    ]
    progress = [{"step": i, "global_step": i, "t_ns": t0 + (5 + i) * s, "attempt": 0} for i in range(1, 41)]
    base = {"attempt": 0, "dur_ns": 10**6, "bytes": 2048}
    cps = [{**base, "op": "save", "api": "torch.save", "path": "/c/last.pt", "step": 3, "global_step": 3,
            "start_ns": t0 + 8 * s, "bytes": 5 << 20}]  # fmt: skip
    cps += [{**base, "op": "load", "api": "torch.load", "path": f"/d/shard{i % 50}.pt", "step": 3 + i // 200,
             "global_step": 3 + i // 200, "start_ns": t0 + 8 * s + i * 10**7} for i in range(4000)]  # fmt: skip
    cps += [{**base, "op": "load", "api": "torch.load", "path": "/c/last.pt", "step": 30, "global_step": 30,
             "start_ns": t0 + 35 * s + s // 2}]  # fmt: skip
    for name, recs in (("attempts.jsonl", attempts), ("progress.jsonl", progress), ("checkpoints.jsonl", cps)):
        (rank / name).write_text("".join(json.dumps(r) + "\n" for r in recs))
    report = goodput(tmp_path)
    assert [(c.op, c.step) for c in report.checkpoints] == [("save", 3), ("load", 30)]
    assert len(report.acc.attempts) == 1 and report.acc.steps_redone == 0
