"""`make demo` when the dashboard's port is taken (issue 41, item 14): `make demo` cannot pass --port, so the
demo checks the port before its run and serves on a free one it prints, instead of failing at the end.

The port is held by a real listening socket; the dashboard is really served and fetched over HTTP."""

from __future__ import annotations

import io
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import redirect_stderr
from pathlib import Path

import pytest

from scope.analysis import run as run_analysis
from scope.cli.demo import demo_port
from scope.ports import port_taken
from tests.conftest import ROOT

SERVING = re.compile(r"scope dashboard: serving .* at http://127\.0\.0\.1:(\d+)/")


@pytest.fixture
def held_port() -> Iterator[int]:
    """A port another program listens on (as Dash's default 8050 often is)."""
    with socket.create_server(("127.0.0.1", 0)) as holder:
        yield int(holder.getsockname()[1])


def test_a_held_port_is_taken_and_a_closed_one_is_free(held_port: int) -> None:
    assert port_taken("127.0.0.1", held_port)
    with socket.create_server(("127.0.0.1", 0)) as probe:
        closed = int(probe.getsockname()[1])
    assert not port_taken("127.0.0.1", closed) and not port_taken("127.0.0.1", 0)


def test_the_demo_chooses_a_free_port_before_its_run(held_port: int, capsys: pytest.CaptureFixture[str]) -> None:
    assert demo_port("127.0.0.1", held_port) == 0
    said = capsys.readouterr().out
    assert f"port {held_port} is in use" in said and "free port, printed when it starts" in said
    with socket.create_server(("127.0.0.1", 0)) as probe:
        free = int(probe.getsockname()[1])
    assert demo_port("127.0.0.1", free) == free and capsys.readouterr().out == ""


@pytest.mark.slow  # serves the dashboard for 6 s: seconds (the unit tier stays under 120 s)
def test_the_demo_serves_on_a_free_port_when_its_port_is_taken(tmp_path: Path, held_port: int) -> None:
    """The demo's serving step with the port held: it serves elsewhere, prints that URL, and the URL answers."""
    from scope.app.server import serve

    run = tmp_path / "healthy"
    shutil.copytree(ROOT / "sample_traces" / "healthy", run, ignore=shutil.ignore_patterns("store"))
    run_analysis(run)  # analyzed first: the server starts no background analysis to outlive the test
    said = io.StringIO()

    def serve_briefly() -> None:
        with redirect_stderr(said):
            serve(run, port=held_port, refresh_s=0, stop_after_s=6, free_port_if_taken=True)

    server = threading.Thread(target=serve_briefly, daemon=True)
    server.start()
    deadline = time.monotonic() + 20
    while not SERVING.search(said.getvalue()) and time.monotonic() < deadline:
        time.sleep(0.05)
    found = SERVING.search(said.getvalue())
    assert found, said.getvalue()
    port = int(found.group(1))
    assert port != held_port
    assert f"port {held_port} is in use by another program; serving on a free port" in said.getvalue()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as page:
        assert page.status == 200 and b"scope" in page.read()
    server.join(timeout=30)  # stderr is redirected while it serves: nothing may outlive the test
    assert not server.is_alive()


@pytest.mark.multirank
def test_scope_demo_says_so_before_it_launches_the_job(tmp_path: Path, held_port: int) -> None:
    """The CLI path: the notice is the first thing `scope demo` prints, before the job starts (then the
    test stops it; the job itself is the quick-start test's)."""
    env = {**os.environ, "SCOPE_DASHBOARD_PORT": str(held_port)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "scope", "demo", "--out", str(tmp_path / "run"), "--steps", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=tmp_path,
        start_new_session=True,  # its own process group, so the job it starts is stopped with it
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        second = proc.stdout.readline()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
    assert f"port {held_port} is in use" in first, first + second
    assert second.startswith("scope demo: straggler on 4 ranks"), first + second
