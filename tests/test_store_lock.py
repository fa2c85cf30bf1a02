"""The store's lock (scope/store_lock.py) from the waiter's side: a stopped holder is named by its PID
instead of being waited for without end, and `scope compare` of a store that is being re-analyzed waits
for the writer instead of failing on its half-written tables (issue 41, item 12)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from scope.cli import main
from scope.errors import EXIT_INPUT, EXIT_OK
from tests.conftest import ROOT

HOLD = """
import shutil, sys, time
from pathlib import Path
from scope.store import store_lock
store, mode = Path(sys.argv[1]), sys.argv[2]
with store_lock(store):
    print("held", flush=True)
    if mode == "reanalyze":  # what a re-analysis does to the store it holds: derived tables gone, then new
        keep = store.parent / "kept"
        shutil.copytree(store / "tables", keep / "tables")
        shutil.copy(store / "analysis.json", keep / "analysis.json")
        shutil.rmtree(store / "tables")
        (store / "analysis.json").unlink()
        time.sleep(3)
        shutil.copytree(keep / "tables", store / "tables")
        shutil.copy(keep / "analysis.json", store / "analysis.json")
    else:
        time.sleep(120)
"""


@pytest.fixture(scope="module")
def analyzed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("lock") / "healthy"
    shutil.copytree(ROOT / "sample_traces" / "healthy", run, ignore=shutil.ignore_patterns("store"))
    assert main(["analyze", str(run), "-q", "--no-tables"]) == EXIT_OK
    return run


def _hold(store: Path, mode: str) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(store), mode], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        yield proc
    finally:
        os.kill(proc.pid, signal.SIGCONT)
        proc.kill()
        proc.wait(timeout=30)


@pytest.mark.subprocess
def test_a_stopped_lock_holder_is_named_not_waited_for(analyzed: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for holder in _hold(analyzed / "store", "sleep"):
        os.kill(holder.pid, signal.SIGSTOP)
        t0 = time.monotonic()
        code = main(["analyze", str(analyzed), "-q", "--no-tables", "--force"])
        waited = time.monotonic() - t0
        err = capsys.readouterr().err
        assert code == EXIT_INPUT, err
        assert f"PID {holder.pid}" in err and "is stopped" in err and f"kill -CONT {holder.pid}" in err
        assert waited < 60


@pytest.mark.subprocess
def test_a_timeout_names_the_holder(analyzed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from scope.errors import ScopeError
    from scope.store import store_lock

    monkeypatch.setenv("SCOPE_LOCK_TIMEOUT_S", "1")
    said: list[str] = []
    for holder in _hold(analyzed / "store", "sleep"):
        with pytest.raises(ScopeError) as caught, store_lock(analyzed / "store", on_wait=said.append):
            pass
        assert f"PID {holder.pid}" in caught.value.message and "waited 1 s" in caught.value.message
        assert said and f"PID {holder.pid}" in said[0]


@pytest.mark.subprocess
def test_compare_of_a_store_being_reanalyzed_waits_for_it(
    analyzed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = analyzed / "store"
    for _ in _hold(store, "reanalyze"):
        out = tmp_path / "cmp.json"
        code = main(["compare", str(store), str(store), "-q", "--json", str(out)])
        err = capsys.readouterr().err
        assert code == EXIT_OK, err
        assert "is writing this store; waiting for it" in err
        assert json.loads(out.read_text())["step"]["a_mean_step_us"] > 0
