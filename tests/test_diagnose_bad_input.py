"""A bad file costs only that file: `scope diagnose` and `scope analyze` name it, read the rest, exit 4.

And scope's own collector logs (hook.log, sidecar.log) are never taken for the job's failure."""

from __future__ import annotations

import json
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from scope.analyzers.diagnose import diagnose, failed
from scope.collectors.hook.hooklog import HookLog

from scope.errors import EXIT_PARTIAL

ROOT = Path(__file__).resolve().parents[1]
HEALTHY = ROOT / "sample_traces" / "healthy"
DEEP = 50_000
OOM_LINE = (
    "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total "
    "capacity of 79.10 GiB of which 1.02 GiB is free.\n"
)


def _deep_json(head: str = "") -> str:
    return "{" + head + '"entries": ' + "[" * DEEP + "]" * DEEP + "}"


def _folder_with_bad_files(tmp_path: Path) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "rank1.log").write_text(OOM_LINE)
    (tmp_path / "fr_rank0.json").write_text(_deep_json('"version": "2.10", "pg_config": {}, '))
    (tmp_path / "nested").mkdir()
    (tmp_path / "nested" / "error.json").write_text('{"message": ' + "[" * DEEP + "]" * DEEP + "}")
    (tmp_path / "nested" / "ras.json").write_text(
        '{"nccl_version": "2.28.9", "communicators_count": 1, "communicators": ' + "[" * DEEP + "]" * DEEP + "}"
    )
    return tmp_path


def test_deep_json_anywhere_costs_only_that_file(tmp_path: Path) -> None:
    report = diagnose(_folder_with_bad_files(tmp_path))
    assert report.findings and report.findings[0].kind == "oom" and report.findings[0].ranks == [1]
    unreadable = report.sections["inputs"]["unreadable"]
    assert len(unreadable) == 3, unreadable
    for name in ("fr_rank0.json", "nested/error.json", "nested/ras.json"):
        assert any(name in u for u in unreadable), (name, unreadable)
    assert all(u in list(map(str, report.warnings)) for u in unreadable)
    # typed by the reader that failed: each record names its file, and says the diagnosis is partial
    files = {w.file for w in report.warnings if w.partial}
    assert files == {"fr_rank0.json", "nested/error.json", "nested/ras.json"}, report.warnings
    assert report.exit_code == EXIT_PARTIAL


@pytest.mark.parametrize("command", ["diagnose", "analyze"])
@pytest.mark.subprocess
def test_cli_exits_4_and_names_the_bad_files(tmp_path: Path, command: str) -> None:
    folder = _folder_with_bad_files(tmp_path / "in")
    out = subprocess.run(
        [sys.executable, "-m", "scope", command, str(folder), "--json", "-"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert out.returncode == EXIT_PARTIAL, out.stderr[-2000:]
    assert "internal error" not in out.stderr
    data = json.loads(out.stdout)
    assert any("fr_rank0.json" in w and "nested too deeply" in w for w in data["warnings"])
    assert data["findings"][0]["kind"] == "oom"


def test_a_pickle_that_is_not_a_dump_is_named_and_skipped(tmp_path: Path) -> None:
    fr = tmp_path / "ranks" / "0" / "fr"
    fr.mkdir(parents=True)
    (fr / "001-exit.pkl").write_bytes(pickle.dumps({"model": "resnet", "version": 3, "weights": [0.1] * 8}))
    (fr / "002-exit.pkl").write_bytes(pickle.dumps({"entries": 5}))
    (fr / "003-exit.pkl").write_bytes(b"\x80\x04\x95garbage")
    (tmp_path / "ranks" / "1").mkdir(parents=True)
    (tmp_path / "ranks" / "1" / "stderr.log").write_text(OOM_LINE)
    report = diagnose(tmp_path)
    assert report.findings[0].kind == "oom" and report.sections["inputs"]["dumps"] == 0
    unreadable = " | ".join(report.sections["inputs"]["unreadable"])
    for name in ("001-exit.pkl", "002-exit.pkl", "003-exit.pkl"):
        assert name in unreadable
    assert "not a Flight Recorder dump" in unreadable and "corrupt" in unreadable


def test_a_bad_run_json_costs_only_the_manifest(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text('{"schema_version": ' + "[" * DEEP + "]" * DEEP + "}")
    (tmp_path / "ranks" / "1").mkdir(parents=True)
    (tmp_path / "ranks" / "1" / "stderr.log").write_text(OOM_LINE)
    report = diagnose(tmp_path)
    assert report.findings[0].kind == "oom"
    assert any(u.startswith("run.json:") for u in report.sections["inputs"]["unreadable"])
    assert any(w.file == "run.json" and w.partial for w in report.warnings)


def _hook_error(path: Path) -> None:
    """The hook's own logger, as in a real run, catching a real exception."""
    log = HookLog()
    log.open(path)
    try:
        json.loads("{not json")
    except ValueError as exc:
        log.error("heartbeat write failed", exc)
    log.close()


def test_hook_log_errors_on_a_completed_run_are_not_a_crash(tmp_path: Path) -> None:
    run = tmp_path / "healthy"
    shutil.copytree(HEALTHY, run)
    assert json.loads((run / "run.json").read_text())["status"] == "completed"
    _hook_error(run / "ranks" / "0" / "hook.log")
    (run / "hosts" / "vm").mkdir(parents=True, exist_ok=True)
    (run / "hosts" / "vm" / "sidecar.log").write_text("Traceback (most recent call last):\nOSError: [Errno 5] nvml\n")
    report = diagnose(run)
    assert not failed(report) and not report.findings, [f.summary for f in report.findings]
    notes = [w for w in map(str, report.warnings) if "scope's collector logged errors" in w]
    assert len(notes) == 2 and any("ranks/0/hook.log" in n for n in notes)
    assert report.sections["inputs"]["unreadable"] == []


def test_the_hooks_record_of_the_jobs_exception_is_not_a_collector_error(tmp_path: Path) -> None:
    """hook.log says `uncaught RuntimeError: ... Connection closed by peer` when the job's rank raised: the
    job's error told again (its traceback is in the rank's log), not scope's, which the note would claim."""
    run = tmp_path / "run"
    shutil.copytree(HEALTHY, run)
    log = HookLog()
    log.prefix = "rank=1 pid=4242"
    log.open(run / "ranks" / "1" / "hook.log")
    log.info(
        "uncaught RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] "
        "Connection closed by peer [127.0.0.1]:22428"
    )
    log.close()
    report = diagnose(run)
    assert not [w for w in map(str, report.warnings) if "scope's collector logged errors" in w]


def test_hook_log_errors_do_not_mask_the_real_failure(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(HEALTHY, run)
    _hook_error(run / "ranks" / "0" / "hook.log")
    with open(run / "ranks" / "1" / "stderr.log", "a") as fh:
        fh.write(OOM_LINE)
    report = diagnose(run)
    assert report.findings[0].kind == "oom" and report.findings[0].ranks == [1]
    assert not any("hook.log" in ev for f in report.findings for ev in f.evidence)


def test_hook_log_is_known_outside_its_run_directory(tmp_path: Path) -> None:
    """Pointed at one rank's folder, scope's hook.log is still recognised by its lines, not by place."""
    folder = tmp_path / "rank0"
    shutil.copytree(HEALTHY / "ranks" / "0", folder, ignore=shutil.ignore_patterns("traces", "fr"))
    _hook_error(folder / "hook.log")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "hook.log").write_text("Traceback (most recent call last):\nRuntimeError: user hook\n")
    assert not diagnose(folder).findings
    assert diagnose(tmp_path / "other").findings[0].kind == "crash"  # someone else's hook.log is evidence
