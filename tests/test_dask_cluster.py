"""`--engine dask --scheduler ADDRESS` on a cluster started with Dask's own CLI (`dask scheduler`,
`dask worker ADDRESS --nworkers 2 --nthreads 1`): the findings and tables of the local engine, a worker
killed mid-run retried, a rank whose worker always dies named, an unreachable scheduler named."""

from __future__ import annotations

import json
import os
import re
import signal
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from benchmarks.dask_cli import CliCluster, cli_cluster, free_port
from benchmarks.synth import SynthSpec, synthesize
from scope.cli import main
from scope.errors import EXIT_INPUT, ScopeError
from scope.ingest import ingest
from scope.ingest.dispatch import ingest_rank
from scope.ingest.rank import RankJob, RankOutcome
from tests.conftest import ROOT, shared_data

RANKS, STRAGGLER = 16, 11
# A worker lost under a task fails the task at once (the default lets it kill 3 workers first), and
# scope submits it again: a death costs one nanny restart, not four. One task at a time per worker
# thread: no other rank's task is on the worker when it dies (it would be lost with it, and retried).
ONE_DEATH_PER_TRY = {
    "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0",
    "DASK_DISTRIBUTED__SCHEDULER__WORKER_SATURATION": "1.0",
}
# The fault-injecting workers below are test code, which the scheduler and workers import as the
# coordinator does (a user's cluster runs the same environment as its client).
FROM_HERE = {"PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dask-synth") / "run"
    source = shared_data("hta", "trace_filter")
    synthesize(SynthSpec(ranks=RANKS, source=source, out=out, stragglers=[STRAGGLER], straggler_factor=1.8))
    return out


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CliCluster]:
    """Two workers; stopped when the module is done, and checked to leave no process behind."""
    logs = tmp_path_factory.mktemp("dask-logs")
    seen: list[psutil.Process] = []
    with cli_cluster(2, logs, env={**ONE_DEATH_PER_TRY, **FROM_HERE}) as started:
        seen += started.processes()
        assert len(seen) >= 4, [p.cmdline() for p in seen]  # scheduler, `dask worker`, its nannies, workers
        yield started
        seen += started.processes()  # workers the nannies restarted
    left = [p.pid for p in seen if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not left, f"cluster processes left running: {left}"


def _analysis(path: Path) -> dict:
    data = json.loads(path.read_text())
    assert data["findings"], data.get("warnings")
    return data


@pytest.mark.slow
@pytest.mark.shared_data
def test_cli_cluster_gives_the_local_engines_findings_and_tables(
    run: Path, cluster: CliCluster, tmp_path: Path
) -> None:
    common = [str(run), "-q", "--force", "--no-tables"]
    local_json, dask_json = tmp_path / "local.json", tmp_path / "dask.json"
    assert main(["analyze", *common, "--store", str(tmp_path / "a"), "--json", str(local_json)]) == 0
    dask_args = ["--engine", "dask", "--scheduler", cluster.address]
    assert main(["analyze", *common, "--store", str(tmp_path / "b"), *dask_args, "--json", str(dask_json)]) == 0
    local, dask = _analysis(local_json), _analysis(dask_json)
    assert set(local) == set(dask)
    for key in local:  # findings and every table: nothing in the JSON depends on where ranks ran
        assert local[key] == dask[key], key
    stragglers = [f for f in local["findings"] if f["kind"] == "straggler"]
    assert stragglers and all(f["ranks"] == [STRAGGLER] for f in stragglers)


def _die_once_on_rank_5(job: RankJob) -> RankOutcome:
    """SIGKILL the worker the first time rank 5 is parsed (a worker lost mid-run)."""
    marker = Path(job.store_dir) / "killed-once"
    if job.rank == 5 and not marker.exists():
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text("x")
        os.kill(os.getpid(), signal.SIGKILL)
    return ingest_rank(job)


def _always_die_on_rank_5(job: RankJob) -> RankOutcome:
    if job.rank == 5:
        os.kill(os.getpid(), signal.SIGKILL)
    return ingest_rank(job)


@pytest.mark.slow
@pytest.mark.shared_data
def test_a_worker_killed_mid_run_has_its_ranks_run_again(run: Path, cluster: CliCluster, tmp_path: Path) -> None:
    store_dir = tmp_path / "store"
    report = ingest(run, store_dir, engine="dask", scheduler=cluster.address, worker=_die_once_on_rank_5)
    assert (store_dir / "killed-once").exists()  # the worker did die under rank 5
    assert sorted(report.parsed) == list(range(RANKS)) and report.store.ranks == list(range(RANKS))
    assert report.store.steps().groupby("rank").size().nunique() == 1  # every rank once, none twice


@pytest.mark.slow
@pytest.mark.shared_data
def test_a_rank_whose_worker_always_dies_is_named_not_left_out(run: Path, cluster: CliCluster, tmp_path: Path) -> None:
    with pytest.raises(ScopeError) as caught:
        ingest(run, tmp_path / "store", engine="dask", scheduler=cluster.address, worker=_always_die_on_rank_5)
    message = caught.value.message
    # the batch of ranks that held rank 5 (its size follows the workers connected at the time)
    named = re.search(r"ranks? (\d+)(?:-(\d+))? lost on ", message)
    assert named and int(named[1]) <= 5 <= int(named[2] or named[1]), message
    assert cluster.address in message and "died on each of 3 tries" in message, message
    assert caught.value.exit_code == EXIT_INPUT


@pytest.mark.shared_data
def test_an_unreachable_scheduler_is_named(
    run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import scope.dask_engine

    monkeypatch.setattr(scope.dask_engine, "CONNECT_TIMEOUT_S", 0.25)  # refused at once; Dask retries until then
    address = f"tcp://127.0.0.1:{free_port()}"  # nothing listens there
    out = tmp_path / "out.json"
    code = main(["analyze", str(run), "-q", "--engine", "dask", "--scheduler", address, "--json", str(out)])
    assert code == EXIT_INPUT
    err = capsys.readouterr().err
    assert f"cannot reach the Dask scheduler at {address}" in err, err
    assert not out.exists()
