"""What scope promises about the store (README "What scope promises under faults"): it writes and deletes
only inside a folder it created, it never publishes a store half-written, and a read-only input still
gets a store (in the per-user cache, said in the output)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scope.cli import main
from scope.errors import EXIT_USAGE
from scope.ingest import store_dir_for
from scope.store import MARKER_NAME, Store, cache_store_dir
from tests.fsfaults import make_read_only, small_fs

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_traces" / "straggler"


def _snapshot(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _users_results(folder: Path) -> Path:
    """A results folder of the user's that happens to use the store's names."""
    (folder / "tables").mkdir(parents=True)
    (folder / "events").mkdir()
    (folder / "tables" / "summary.parquet").write_bytes(b"PAR1 the user's table")
    (folder / "events" / "rank-00000.parquet").write_bytes(b"PAR1 the user's events")
    (folder / "analysis.json").write_text('{"mine": true}')
    (folder / "notes.txt").write_text("do not lose me")
    return folder


def test_store_on_a_folder_scope_did_not_make_is_refused_and_nothing_in_it_changes(tmp_path, capsys) -> None:
    users = _users_results(tmp_path / "results")
    before = _snapshot(users)
    code = main(["analyze", str(SAMPLE), "--store", str(users), "-q"])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert "is not a scope store" in err and "Traceback" not in err
    assert _snapshot(users) == before
    assert not (users / MARKER_NAME).exists()


def test_default_store_location_held_by_a_users_folder_is_refused(tmp_path, capsys) -> None:
    traces = tmp_path / "traces"
    shutil.copytree(SAMPLE / "ranks" / "0" / "traces", traces)
    users = _users_results(traces / "scope_store")
    before = _snapshot(users)
    assert main(["analyze", str(traces), "-q"]) == EXIT_USAGE
    assert "--store" in capsys.readouterr().err
    assert _snapshot(users) == before


def test_a_new_or_empty_folder_is_claimed_with_the_marker_and_reused(tmp_path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["analyze", str(SAMPLE), "--store", str(empty), "-q", "--no-tables"]) == 0
    assert (empty / MARKER_NAME).is_file() and Store.open(empty).ranks == [0, 1, 2, 3]
    # a file the user drops into the store is not scope's: a re-analysis leaves it alone
    (empty / "tables" / "keep.txt").write_text("mine")
    assert main(["analyze", str(SAMPLE), "--store", str(empty), "-q", "--no-tables", "--force"]) == 0
    assert (empty / "tables" / "keep.txt").read_text() == "mine"


def test_a_store_written_before_the_marker_is_still_scopes(tmp_path) -> None:
    store = tmp_path / "store"
    assert main(["analyze", str(SAMPLE), "--store", str(store), "-q", "--no-tables"]) == 0
    (store / MARKER_NAME).unlink()  # as older scope versions left it
    assert main(["analyze", str(SAMPLE), "--store", str(store), "-q", "--no-tables"]) == 0
    assert (store / MARKER_NAME).is_file()
    # the same layout with one foreign file beside it is not
    (store / MARKER_NAME).unlink()
    (store / "report.pdf").write_bytes(b"%PDF")
    assert main(["analyze", str(SAMPLE), "--store", str(store), "-q", "--no-tables"]) == EXIT_USAGE


@pytest.mark.subprocess
def test_read_only_input_gets_its_store_in_the_user_cache_and_says_so(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("SCOPE_CACHE_DIR", str(tmp_path / "cache"))
    with small_fs(tmp_path / "ro", "8m") as mount:
        run = mount / "run"
        shutil.copytree(SAMPLE, run, ignore=shutil.ignore_patterns("store"))
        make_read_only(mount)
        code = main(["analyze", str(run), "-q", "--no-tables"])
        err = capsys.readouterr().err
        assert code == 0, err
        cached = cache_store_dir(run)
        assert "Traceback" not in err and str(cached) in err and "not writable" in err
        assert Store.open(cached).ranks == [0, 1, 2, 3] and (cached / "analysis.json").is_file()
        assert store_dir_for(run) == cached  # where the dashboard looks
        # --store on the read-only disk: one clear line, no traceback
        code = main(["analyze", str(run), "--store", str(mount / "s"), "-q"])
        err = capsys.readouterr().err
        assert code == EXIT_USAGE and "cannot write the store" in err and "Traceback" not in err


@pytest.mark.subprocess
def test_two_concurrent_analyses_of_one_folder_both_publish_every_rank(tmp_path) -> None:
    run = tmp_path / "run"
    shutil.copytree(SAMPLE, run, ignore=shutil.ignore_patterns("store"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "scope", "analyze", str(run), "-q", "--json"]
    procs = [
        subprocess.Popen(
            [*cmd, str(tmp_path / f"out{i}.json")], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        for i in range(3)
    ]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()
    for i in range(3):
        report = json.loads((tmp_path / f"out{i}.json").read_text())
        assert report["run"]["traced_ranks"] == [0, 1, 2, 3]
    saved = json.loads((run / "store" / "analysis.json").read_text())
    assert saved["run"]["traced_ranks"] == [0, 1, 2, 3]
    assert not [p.name for p in (run / "store").rglob("*.tmp")]


def test_a_write_protected_folder_is_left_alone_even_by_root(tmp_path, monkeypatch, capsys) -> None:
    """A shared data set made read-only by its mode bits (r-x): root could write there; scope does not."""
    monkeypatch.setenv("SCOPE_CACHE_DIR", str(tmp_path / "cache"))
    traces = tmp_path / "shared" / "traces"
    shutil.copytree(SAMPLE / "ranks" / "0" / "traces", traces)
    before = sorted(p.name for p in traces.iterdir())
    traces.chmod(0o555)
    try:
        assert main(["analyze", str(traces), "-q", "--no-tables"]) == 0
        assert "not writable" in capsys.readouterr().err
        assert sorted(p.name for p in traces.iterdir()) == before
        assert (cache_store_dir(traces) / "analysis.json").is_file()
        assert store_dir_for(traces) == cache_store_dir(traces)
    finally:
        traces.chmod(0o755)


def test_a_second_store_inside_the_input_is_not_read_as_input(tmp_path: Path, capsys) -> None:
    """A folder of traces holding an older store under another name (`--store FOLDER/results`, or one
    copied in): its analysis.json and meta.json were read as traces (exit 4, 'not a Kineto trace')."""
    folder = tmp_path / "traces"
    folder.mkdir()
    for trace in SAMPLE.glob("ranks/*/traces/*.json.gz"):
        shutil.copy(trace, folder / trace.name)
    assert main(["analyze", str(folder), "--store", str(folder / "results"), "-q", "--no-tables"]) == 0
    capsys.readouterr()
    shutil.copytree(folder / "results", folder / "old_analysis")
    (folder / "old_analysis" / MARKER_NAME).unlink()  # one written before the marker: known by its layout
    out = tmp_path / "again.json"
    code = main(["analyze", str(folder), "-q", "--no-tables", "--json", str(out)])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "results" not in err and "old_analysis" not in err
    assert not [w for w in json.loads(out.read_text())["warnings"] if "results" in w or "old_analysis" in w]
