"""No input layout makes a command hang or read without end: FIFOs named like traces and logs, a link to
/dev/zero. Only regular files are opened; the others are named and skipped."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TRACE = next((ROOT / "sample_traces" / "straggler" / "ranks" / "0" / "traces").glob("*.json.gz"))


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    folder = tmp_path / "traces"
    folder.mkdir()
    shutil.copy(TRACE, folder / TRACE.name)
    os.mkfifo(folder / "rank1.json")
    os.mkfifo(folder / "rank3.pt.trace.json")
    os.mkfifo(folder / "rank1.stderr.log")
    (folder / "rank2.stderr.log").symlink_to("/dev/zero")
    return folder


def scope(*args: str) -> subprocess.CompletedProcess[str]:
    # a hang fails the test by its timeout; the memory limit catches an unbounded read of /dev/zero
    cmd = [
        sys.executable,
        "-c",
        "import resource,sys; resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30)); "
        "from scope.cli import main; sys.exit(main(sys.argv[1:]))",
        *args,
    ]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("command", [["analyze", "-q", "--no-tables"], ["diagnose"]])
@pytest.mark.subprocess
def test_fifos_and_device_links_are_named_and_skipped(hostile: Path, command: list[str]) -> None:
    done = scope(command[0], str(hostile), *command[1:])
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode in (3, 4), done.stdout + done.stderr
    for name, what in (
        ("rank1.json", "a FIFO"),
        ("rank1.stderr.log", "a FIFO"),
        ("rank2.stderr.log", "a character device"),
    ):
        assert f"{name}: {what}, not a regular file; skipped" in done.stderr + done.stdout


@pytest.mark.parametrize(
    "where",
    ["ranks/1/traces/notes.txt", "hosts/vm/counters/gpu/000.parquet", "ranks/2/traces/x.json->/dev/null"],
)
def test_a_skipped_fifo_or_device_anywhere_in_the_input_makes_the_result_partial(tmp_path: Path, where: str) -> None:
    """The README's promise, wherever the file is: among the traces but not named like one, a counter chunk,
    a link to a device (each was skipped with exit 0). A run's control requests are not inputs."""
    from scope.cli import main

    run = tmp_path / "run"
    shutil.copytree(ROOT / "sample_traces" / "straggler", run, ignore=shutil.ignore_patterns("store"))
    name, _, target = where.partition("->")
    place = run / name
    place.parent.mkdir(parents=True, exist_ok=True)
    if target:
        place.symlink_to(target)
    else:
        os.mkfifo(place)
    (run / "control").mkdir(exist_ok=True)
    os.mkfifo(run / "control" / "request.json")
    for command in (["analyze", "-q", "--no-tables"], ["diagnose"]):
        assert main([command[0], str(run), *command[1:]]) == 4, command
