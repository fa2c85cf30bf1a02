"""No silent success: an input with nothing readable, or an option whose package is missing, never
ends in "nothing abnormal detected" with exit 0."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from scope.cli import main
from scope.errors import EXIT_INPUT, EXIT_PARTIAL, EXIT_USAGE
from tests.conftest import ROOT, shared_data

SAMPLED = ("hta", "trace_filter", "sampled_rank-0.json.gz")


def _err(capsys: pytest.CaptureFixture[str]) -> str:
    """stderr with the console's line wrapping undone."""
    return capsys.readouterr().err.replace("\n", "")


def _corrupt_gzip(folder: Path, name: str = "rank0.json.gz") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(b"\x1f\x8b\x08\x00" + b"not deflate data" * 4)
    return folder


@pytest.mark.parametrize("command", ["analyze", "ingest"])
def test_a_folder_of_only_a_corrupt_gzip_is_an_input_error(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _corrupt_gzip(tmp_path / "run")
    assert main([command, str(folder), "-q"] if command == "ingest" else [command, str(folder)]) == EXIT_INPUT
    captured = capsys.readouterr()
    err = captured.err.replace("\n", "")
    assert "no readable trace" in err and "rank0.json.gz: corrupt" in err, err
    assert "nothing abnormal" not in captured.out


@pytest.mark.parametrize("command", ["analyze", "ingest"])
def test_a_folder_with_no_input_at_all_is_an_input_error(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "run").mkdir()
    assert main([command, str(tmp_path / "run")]) == EXIT_INPUT
    captured = capsys.readouterr()
    assert "nothing abnormal" not in captured.out and "No failure found" not in captured.out
    assert str(tmp_path / "run") in captured.err.replace("\n", "")


def test_diagnose_a_folder_of_only_unreadable_traces_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _corrupt_gzip(tmp_path / "run")
    assert main(["diagnose", str(folder)]) == EXIT_INPUT
    assert "nothing to diagnose" in _err(capsys)


@pytest.mark.shared_data
def test_unreadable_traces_beside_logs_leave_the_logs_diagnosed_and_exit_4(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _corrupt_gzip(tmp_path / "run")
    (folder / "train.log").write_text("[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered\n")
    assert main(["analyze", str(folder), "--no-tables"]) == EXIT_PARTIAL
    assert "rank0.json.gz: corrupt" in _err(capsys)
    # and one good trace beside the corrupt one: exit 4 with the bad one named
    good = tmp_path / "mixed"
    _corrupt_gzip(good, "rank1.json.gz")
    (good / "rank0.json.gz").write_bytes(shared_data(*SAMPLED).read_bytes())
    assert main(["ingest", str(good), "-q"]) == EXIT_PARTIAL
    assert "rank1.json.gz: corrupt" in _err(capsys)


def test_a_trace_with_no_complete_event_alone_is_an_input_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    body = {"distributedInfo": {"rank": 0, "world_size": 1}, "traceEvents": [{"ph": "i", "name": "x", "ts": 1}]}
    (folder / "rank0.json.gz").write_bytes(gzip.compress(json.dumps(body).encode()))
    assert main(["analyze", str(folder)]) == EXIT_INPUT
    assert "no complete events" in _err(capsys)


@pytest.mark.shared_data
@pytest.mark.subprocess
def test_engine_dask_without_dask_fails_up_front_with_the_install_command(tmp_path: Path) -> None:
    """dask made really unimportable in a child process (a finder that refuses it), not a stub."""
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "rank0.json.gz").write_bytes(shared_data(*SAMPLED).read_bytes())
    script = textwrap.dedent(
        f"""
        import sys
        class NoDask:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("dask", "distributed"):
                    raise ModuleNotFoundError(f"No module named {{name!r}}")
                return None
        sys.meta_path.insert(0, NoDask())
        from scope.cli import main
        sys.exit(main(["analyze", {str(folder)!r}, "--engine", "dask", "--json", {str(tmp_path / "out.json")!r}]))
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == EXIT_USAGE, proc.stdout + proc.stderr
    assert "pip install 'scope-profiler[dask]'" in proc.stderr
    assert "nothing abnormal" not in proc.stdout
    assert not (tmp_path / "out.json").exists()


def test_attach_by_pid_without_py_spy_fails_up_front(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """py-spy hidden (not on PATH, none beside the interpreter): no run directory is started."""
    from scope.collectors.sidecar import attach

    monkeypatch.setattr(attach, "find_py_spy", lambda: None)
    out = tmp_path / "watch"
    assert main(["attach", "--pid", str(os.getpid()), "--out", str(out), "--seconds", "0.2"]) == EXIT_USAGE
    said = _err(capsys)
    assert "py-spy" in said and "pip install 'scope-profiler[attach]'" in said and "--no-stacks" in said
    assert not out.exists()


def test_run_on_a_gpu_machine_without_nvidia_ml_py_fails_up_front(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from scope import deps

    monkeypatch.setattr(deps, "nvidia_gpu_present", lambda: True)
    monkeypatch.setattr(deps, "installed", lambda module: module != "pynvml")
    out = tmp_path / "run"
    assert main(["run", "--out", str(out), "--", sys.executable, "-c", "pass"]) == EXIT_USAGE
    said = _err(capsys)
    assert "nvidia-ml-py" in said and "pip install 'scope-profiler[nvml]'" in said and "--no-sidecar" in said
    assert not out.exists()


def test_a_gpu_is_seen_from_the_driver_files(tmp_path: Path) -> None:
    from scope.deps import nvidia_gpu_present

    gpus = tmp_path / "gpus"
    assert not nvidia_gpu_present(gpus, tmp_path / "nvidia0")
    (gpus / "0000:07:00.0").mkdir(parents=True)
    assert nvidia_gpu_present(gpus, tmp_path / "nvidia0")
