"""The collector's promise under faults (README "What scope promises under faults"): a full or read-only
run directory, a stalled control folder or a long pause costs scope's records, never the job; `scope run`
ends with a final run.json state and no traceback.

Full and read-only disks are real: a small tmpfs mounted by the test (root needed, else skipped)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from scope.collectors.hook.control import MAX_REQUEST_BYTES, RequestPoller, write_request

from tests.fsfaults import make_read_only, small_fs

ROOT = Path(__file__).resolve().parent.parent
JOB = ROOT / "tests" / "jobs" / "fault_job.py"
RUN_TIMEOUT_S = 240


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("SCOPE_", "TORCH_FR", "NCCL_"))}


def scope_run(out: Path, *args: str, job: list[str], wait: bool = True) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "scope", "run", "--out", str(out), "--quiet", "--no-sidecar", *args, "--"]
    proc = subprocess.Popen(
        [*cmd, str(JOB), *job], cwd=ROOT, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    if wait:
        proc.wait(timeout=RUN_TIMEOUT_S)
    return proc


def leftovers(run: Path) -> list[str]:
    """Temporary files and partial reply files a writer left behind."""
    out = [str(p.relative_to(run)) for p in run.rglob("*") if p.name.endswith(".tmp") and p.is_file()]
    return out + [str(p.relative_to(run)) for p in run.rglob("error.json") if p.stat().st_size == 0]


@pytest.mark.multirank
def test_full_run_directory_costs_the_records_never_the_job(tmp_path: Path) -> None:
    """4 MiB of disk, 8 MiB of output: the job finishes, scope says what it dropped."""
    result = tmp_path / "result.txt"
    with small_fs(tmp_path / "disk", "4m") as disk:
        run = disk / "run"
        proc = scope_run(
            run, "--hang-timeout", "0", job=["--steps", "8", "--print-kib", "512", "--result", str(result)]
        )
        output = proc.stdout.read() if proc.stdout else ""
        assert result.read_text() == "DONE\n", output  # the job ran to its end
        assert proc.returncode == 0, output
        assert "Traceback" not in output and "refused" in output
        manifest = json.loads((run / "run.json").read_text())
        assert manifest["status"] == "completed"
        lost = next(iter(manifest["lost"].values()))["rank_output"]["0"]
        assert lost["stdout"]["dropped_bytes"] > 0 and lost["stderr"]["dropped_bytes"] > 0
        assert leftovers(run) == []


@pytest.mark.multirank
def test_on_a_full_run_directory_the_jobs_traceback_still_reaches_the_terminal_and_its_log(tmp_path: Path) -> None:
    """4 MiB of disk, 8 MiB of output, then the job raises: its traceback is on the terminal and in
    stderr.log (room the hook kept for it), and `scope diagnose` says how much output the disk refused."""
    from scope.cli import main

    result, message = tmp_path / "result.txt", "the job's own failure: shapes [3, 4] and [5] mismatch"
    with small_fs(tmp_path / "disk", "4m") as disk:
        run = disk / "run"
        job = ["--steps", "8", "--print-kib", "512", "--result", str(result), "--fail", message]
        proc = scope_run(run, "--hang-timeout", "0", job=job)
        output = proc.stdout.read() if proc.stdout else ""
        assert result.read_text() == "DONE\n" and proc.returncode != 0, output
        assert f"RuntimeError: {message}" in output  # the terminal
        assert f"RuntimeError: {message}" in (run / "ranks" / "0" / "stderr.log").read_text()
        assert "the disk refused" in (run / "ranks" / "0" / "hook.log").read_text()
        assert not (run / "ranks" / "0" / ".scope-last-words").exists()
        report = tmp_path / "diagnose.json"
        main(["diagnose", str(run), "--json", str(report)])
        said = report.read_text()
        assert "the disk refused" in said and "MB of rank 0's output" in said, said[-2000:]


@pytest.mark.subprocess
def test_read_only_run_directory_is_said_before_the_job_starts(tmp_path: Path) -> None:
    result = tmp_path / "result.txt"
    with small_fs(tmp_path / "disk", "1m") as disk:
        make_read_only(disk)
        proc = scope_run(disk / "run", job=["--steps", "1", "--result", str(result)])
        output = proc.stdout.read() if proc.stdout else ""
        assert proc.returncode == 2 and "cannot write the run directory" in output and "Traceback" not in output
        assert not result.exists()  # nothing started that could not be recorded


@pytest.mark.subprocess
def test_final_record_on_a_read_only_run_directory_is_said_not_raised(tmp_path: Path, capsys) -> None:
    """The disk went read-only during the job (ext4 errors=remount-ro): the end of `scope run` says what
    it could not write and returns the job's state; no traceback."""
    from scope.collectors import launch_env
    from scope.collectors.launcher import LaunchConfig, _node_record, _Session

    with small_fs(tmp_path / "disk", "1m") as disk:
        cfg = LaunchConfig(run_dir=disk / "run", command=["train.py"], nproc_per_node="1")
        session = _Session(cfg, _node_record(cfg, [], launch_env.NodePlacement(), {}))
        session.publish()
        make_read_only(disk)
        session.node.status = "completed"
        manifest = session.publish_final()
        assert manifest.status == "completed"
        err = capsys.readouterr().err
        assert "run.json could not be written" in err and "Read-only file system" in err


@pytest.mark.multirank
def test_a_stall_longer_than_the_hang_timeout_then_exit_zero_is_completed(tmp_path: Path) -> None:
    """A 12 s pause (a slow checkpoint) with --hang-timeout 4: recorded as a recovered stall, not a hang;
    the watchdog's stack-dump signal never reaches the job's own SIGUSR2 handler."""
    result = tmp_path / "result.txt"
    run = tmp_path / "run"
    job = ["--steps", "12", "--stall-at", "6", "--stall-s", "12", "--result", str(result)]
    proc = scope_run(run, "--hang-timeout", "4", job=job)
    output = proc.stdout.read() if proc.stdout else ""
    assert proc.returncode == 0, output
    manifest = json.loads((run / "run.json").read_text())
    assert manifest["status"] == "completed"
    assert manifest["hang"] and manifest["hang"]["recovered"] is True  # the stall stays on record
    assert not result.with_suffix(".sigusr2").exists()
    assert list((run / "ranks" / "0" / "stacks").glob("*-hang.txt"))  # the dumps were still taken
    from scope.analysis import run as analyze

    stalls = [f for f in analyze(run).findings if f.kind == "stall"]
    # the 12 s pause, roughly (a slow start on a loaded machine may be recorded as a stall of its own)
    assert stalls and max(f.metrics["stall_s"] for f in stalls) >= 8, stalls
    assert not [f for f in analyze(run).findings if f.kind == "hang"]


# -- the control folder ----------------------------------------------------------------------------
def test_a_fifo_in_the_control_folder_never_blocks_the_poller(tmp_path: Path) -> None:
    control = tmp_path / "control"
    control.mkdir()
    os.mkfifo(control / "stuck.json")
    poller = RequestPoller(tmp_path, since_ns=0)
    write_request(tmp_path, "dump", reason="test")
    got: list = []
    thread = threading.Thread(target=lambda: got.extend(poller.poll(force=True)), daemon=True)
    thread.start()
    thread.join(timeout=5)
    assert not thread.is_alive(), "the hook thread blocked on a FIFO in control/"
    assert [r.kind for r in got] == ["dump"]


def test_a_big_stray_file_in_the_control_folder_is_never_parsed(tmp_path: Path, monkeypatch) -> None:
    import scope.collectors.hook.control as control

    folder = tmp_path / "control"
    folder.mkdir()
    (folder / "big.json").write_text("[" + "1," * (MAX_REQUEST_BYTES) + "1]")
    (folder / "stray.json").write_text('{"not": "a request"}')
    reads: list[str] = []
    real = control.read_request
    monkeypatch.setattr(control, "read_request", lambda p: reads.append(p.name) or real(p))
    poller = RequestPoller(tmp_path, since_ns=0)
    for _ in range(3):
        assert poller.poll(force=True) == []
    assert reads == ["stray.json"]  # the small stray file once; the big one never opened


def test_a_rank_stream_on_a_full_disk_drops_and_counts(tmp_path: Path) -> None:
    """/dev/full refuses every write with ENOSPC, as a full run directory does."""
    from scope.collectors.hook.streams import SafeStream, dropped

    fd = os.open("/dev/full", os.O_WRONLY)
    try:
        out = SafeStream("<stdout>", fd, "utf-8", "strict", line_buffering=False)
        print("hello " * 5000, file=out)  # more than the buffer: written, refused, dropped
        out.reconfigure(line_buffering=True)  # what jobs call on sys.stdout
        print("one line", file=out)
        out.buffer.write(b"bytes too\n")
        out.flush()
        stats = dropped({"stdout": out})["stdout"]
        assert stats["dropped_bytes"] >= 30000 + len("one line\n") and "No space left" in stats["error"]
    finally:
        os.close(fd)


def test_the_watchdog_re_arms_after_a_stall_the_job_came_out_of(tmp_path: Path) -> None:
    """A slow start or a long checkpoint, then a real hang: both recorded, the second not missed."""
    from scope.collectors.watchdog import HangWatchdog

    def beat(step: int) -> None:
        path = tmp_path / "ranks" / "0" / "heartbeat.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"rank": 0, "step": step, "pid": os.getpid(), "host": "x", "state": "running"}))

    hangs: list[dict] = []
    recoveries: list[dict] = []
    dog = HangWatchdog(
        tmp_path, 10.0, host="here", local_pids=dict, on_hang=hangs.append, on_recover=recoveries.append, dump_wait_s=0
    )
    beat(3)
    assert dog.check(now=100.0) is None
    assert dog.check(now=111.0) is not None  # the stall
    beat(4)
    assert dog.check(now=112.0) is None and len(recoveries) == 1 and recoveries[0]["recovered"]
    assert dog.check(now=121.0) is None  # re-armed: 9 s without a step is no hang yet
    assert dog.check(now=123.0) is not None and len(hangs) == 2  # the real hang is caught


@pytest.mark.subprocess
def test_scope_sample_on_a_disk_that_fills_says_what_it_lost(tmp_path: Path) -> None:
    """`scope sample` while its disk fills: it goes on sampling, counts the rows the disk refused and says
    them, and exits 4 (it lost 348 of 351 samples and exited 0)."""
    from tests.fsfaults import fill

    with small_fs(tmp_path / "disk", "2m") as disk:
        run = disk / "run"
        status = tmp_path / "status.json"
        cmd = [sys.executable, "-m", "scope", "sample", "--out", str(run), "--seconds", "5", "--hz", "10"]
        proc = subprocess.Popen(
            [*cmd, "--chunk-seconds", "1", "--json", str(status)],
            cwd=ROOT,
            env=clean_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        deadline = threading.Event()
        while not list((run / "hosts").rglob("*.parquet")) and proc.poll() is None and not deadline.wait(0.1):
            pass  # until the first chunk is on disk
        fill(disk)
        output, _ = proc.communicate(timeout=60)
        assert proc.returncode == 4, output
        assert "Traceback" not in output and "rows were not written" in output and "No space left" in output
        report = json.loads(status.read_text())
        assert report["rows_lost"] > 0 and report["rows_written"] > 0
        assert leftovers(run) == []
