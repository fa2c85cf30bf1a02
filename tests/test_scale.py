"""Scale: synthesized runs, the Dask engine, and a worker killed mid-ingest."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from benchmarks.synth import SynthSpec, synthesize
from scope.cli import main
from scope.ingest import ingest
from scope.ingest.dispatch import ingest_rank
from scope.ingest.rank import RankJob, RankOutcome
from scope.store import Store
from tests.conftest import ROOT, shared_data

STRAGGLER = 13


@pytest.fixture(scope="session")
def synth_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = shared_data("hta", "trace_filter")
    out = tmp_path_factory.mktemp("synth") / "run"
    synthesize(SynthSpec(ranks=64, source=source, out=out, stragglers=[STRAGGLER], straggler_factor=1.8))
    return out


def test_synth_writes_a_run_directory_with_clock_offsets_and_ground_truth(synth_run: Path, tmp_path: Path) -> None:
    from scope.manifest import read_manifest

    manifest = read_manifest(synth_run)
    assert manifest.world_size == 64 and len(manifest.hosts) == 8
    assert manifest.ground_truth["stragglers"] == [STRAGGLER]
    assert any(h.clock_offset_ns != 0 for h in manifest.hosts)
    store = ingest(synth_run, tmp_path / "s").store
    steps = store.steps()
    assert store.ranks == list(range(64))
    # once clock offsets are applied, every rank starts the first step together (within 1 ms)
    first = steps[steps["step"] == steps["step"].min()]
    assert first["start_ns"].max() - first["start_ns"].min() < 1_000_000
    slowest = steps.groupby("rank")["step_us"].median().idxmax()
    assert slowest == STRAGGLER


def _findings(store_json: Path) -> list[tuple]:
    import json

    data = json.loads(store_json.read_text())
    return sorted((f["kind"], tuple(f["ranks"]), tuple(f["steps"])) for f in data["findings"])


@pytest.mark.slow
def test_local_and_dask_engines_give_the_same_findings(synth_run: Path, tmp_path: Path) -> None:
    local_json, dask_json = tmp_path / "local.json", tmp_path / "dask.json"
    common = [str(synth_run), "-q", "--force"]
    assert main(["analyze", *common, "--store", str(tmp_path / "a"), "--json", str(local_json)]) == 0
    assert (
        main(
            [
                "analyze",
                *common,
                "--store",
                str(tmp_path / "b"),
                "--engine",
                "dask",
                "--workers",
                "2",
                "--json",
                str(dask_json),
            ]
        )
        == 0
    )
    local, dask = _findings(local_json), _findings(dask_json)
    assert local == dask
    stragglers = [f for f in local if f[0] == "straggler"]
    assert stragglers and all(f[1] == (STRAGGLER,) for f in stragglers)
    assert Store.open(tmp_path / "a").steps().equals(Store.open(tmp_path / "b").steps())


def _die_once_on_rank_5(job: RankJob) -> RankOutcome:
    """Kill the worker process the first time rank 5 is parsed (a worker lost mid-ingest)."""
    marker = Path(job.store_dir) / "killed-once"
    if job.rank == 5 and not marker.exists():
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text("x")
        os.kill(os.getpid(), signal.SIGKILL)
    return ingest_rank(job)


@pytest.mark.slow
def test_worker_killed_mid_ingest_is_retried_without_losing_or_duplicating_a_rank(
    synth_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import cloudpickle

    import tests.test_scale as this

    cloudpickle.register_pickle_by_value(this)
    # The worker function is test code: Dask's worker processes unpickle it by importing `tests`, which
    # the suite (run against the installed package) does not put on sys.path; the workers inherit this one.
    monkeypatch.syspath_prepend(str(ROOT))
    store_dir = tmp_path / "store"
    report = ingest(synth_run, store_dir, engine="dask", workers=2, worker=_die_once_on_rank_5)
    assert (store_dir / "killed-once").exists()
    assert report.store.ranks == list(range(64))
    assert sorted(report.parsed) == list(range(64))
    steps = report.store.steps()
    assert steps.groupby("rank").size().nunique() == 1  # every rank once, none twice
    reference = ingest(synth_run, tmp_path / "ref").store
    assert report.store.meta["ranks"]["5"]["n_events"] == reference.meta["ranks"]["5"]["n_events"]
    assert len(list((store_dir / "events").glob("*.parquet"))) == 64
