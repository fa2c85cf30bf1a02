"""The in-process hook: windows, heartbeat, triggers, dumps, and that it never disturbs the job.

One-process jobs (tests/jobs/hook_loop.py) run with the hook's sitecustomize on PYTHONPATH, as
`scope run` starts ranks; multi-rank behaviour is in test_launcher.py.
"""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from scope.collectors.hook.control import RequestPoller, write_request
from scope.collectors.hook.hooklog import HookLog
from scope.collectors.hook.windows import ProfilerWindows
from scope.collectors.launch_env import SITE_DIR

ROOT = Path(__file__).resolve().parent.parent
JOB = ROOT / "tests" / "jobs" / "hook_loop.py"


def run_job(run_dir: Path | None, *args: str, extra_env: dict[str, str] | None = None, timeout: float = 120):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCOPE_")}
    env["PYTHONPATH"] = os.pathsep.join([str(SITE_DIR), str(ROOT)])
    env["RANK"] = "0"
    if run_dir is not None:
        env["SCOPE_RUN_DIR"] = str(run_dir)
    env.update(extra_env or {})
    return subprocess.run(
        [sys.executable, str(JOB), *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


def checksum(output: str) -> str:
    return next(line for line in output.splitlines() if line.startswith("checksum"))


def trace_steps(path: Path) -> list[int]:
    with gzip.open(path, "rt") as fh:
        events = json.load(fh)["traceEvents"]
    return sorted(int(e["name"].split("#")[1]) for e in events if e.get("name", "").startswith("ProfilerStep#"))


@pytest.fixture(scope="module")
def baseline() -> str:
    """The job's result with no hook at all (the same loop, run in this process)."""
    sys.path.insert(0, str(JOB.parent))
    try:
        import hook_loop
    finally:
        sys.path.remove(str(JOB.parent))
    return hook_loop.train(8)


# -- profiler windows, in this process with the real profiler ---------------------------------------
def test_windows_follow_the_schedule_and_requests(tmp_path: Path) -> None:
    import torch

    log = HookLog()
    windows = ProfilerWindows(tmp_path, 5, log, start=2, every=5, active=2)
    x = torch.randn(64, 64)
    step = 0
    for step in range(1, 15):  # on_boundary(s) runs when step s is about to begin
        if step == 9:
            windows.request(steps=3, at_step=11, source="attach", current_step=step)
        if step >= windows.next_boundary:
            windows.on_boundary(step)
        (x @ x).sum()
    windows.finish(step)
    names = sorted(p.name for p in tmp_path.iterdir())
    # Scheduled 2-3 and 7-8; the request for 11-13 takes the place of the scheduled 12-13 window.
    assert names == [
        "rank5.step11-13.pt.trace.json.gz",
        "rank5.step2-3.pt.trace.json.gz",
        "rank5.step7-8.pt.trace.json.gz",
    ]
    assert trace_steps(tmp_path / "rank5.step7-8.pt.trace.json.gz") == [7, 8]
    assert trace_steps(tmp_path / "rank5.step11-13.pt.trace.json.gz") == [11, 12, 13]


def test_profile_every_n_starts_a_window_every_n_steps(tmp_path: Path) -> None:
    """`--profile-every 3` with the default 3-step windows profiled every 4 steps (issue 41, item 17): the
    period is what was asked, and each window gives up the step its successor is warmed up in."""
    import torch
    from scope.collectors.hook.config import HookConfig

    cfg = HookConfig(tmp_path, profile_start=2, profile_every=3)  # profile_active: the default 3
    assert (cfg.profile_every, cfg.profile_active) == (3, 2)
    windows = ProfilerWindows(
        tmp_path, 0, HookLog(), start=cfg.profile_start, every=cfg.profile_every, active=cfg.profile_active
    )
    x = torch.randn(32, 32)
    for step in range(1, 12):
        if step >= windows.next_boundary:
            windows.on_boundary(step)
        (x @ x).sum()
    windows.finish(12)
    firsts = sorted(int(p.name.split(".step")[1].split("-")[0]) for p in tmp_path.glob("rank0.step*.gz"))
    assert firsts == [2, 5, 8, 11]
    profiled = [s for p in tmp_path.glob("rank0.step*.gz") for s in trace_steps(p)]
    assert sorted(profiled) == [2, 3, 5, 6, 8, 9, 11]  # the last window cut short by the end of the job


# -- control requests ----------------------------------------------------------------------------
def test_requests_are_seen_once_and_old_ones_ignored(tmp_path: Path) -> None:
    write_request(tmp_path, "dump", reason="before")
    poller = RequestPoller(tmp_path, since_ns=time.time_ns())
    (tmp_path / "control" / "junk.json").write_text("{not json")
    assert poller.poll() == []
    write_request(tmp_path, "profile", steps=4, at_step=20)
    seen = poller.poll(force=True)
    assert [(r.kind, r.steps, r.at_step) for r in seen] == [("profile", 4, 20)]
    assert poller.poll(force=True) == []
    with pytest.raises(ValueError):
        write_request(tmp_path, "reboot")


# -- a real job with the hook active through sitecustomize ------------------------------------------
@pytest.mark.subprocess
def test_hook_writes_windows_heartbeat_and_log(tmp_path: Path, baseline: str) -> None:
    proc = run_job(tmp_path, "--steps", "8", "--spawn-child", extra_env={"SCOPE_PROFILE_EVERY": "4"})
    assert proc.returncode == 0, proc.stderr
    assert checksum(proc.stdout) == baseline
    rank = tmp_path / "ranks" / "0"
    traces = sorted(p.name for p in (rank / "traces").iterdir())
    # Steps 0-7 ran: the second window (6-8) lost step 8 to the end of the job and kept 6-7.
    assert traces == ["rank0.step2-4.pt.trace.json.gz", "rank0.step6-7.pt.trace.json.gz"]
    beat = json.loads((rank / "heartbeat.json").read_text())
    assert beat["step"] == 8 and beat["state"] == "exited" and beat["rank"] == 0
    assert "optimizer step hook registered" in (rank / "hook.log").read_text()
    # The child Python process inherits the environment but is not a rank: no second hook.
    assert "child hook False" in proc.stdout


@pytest.mark.subprocess
def test_one_line_install_with_explicit_steps(tmp_path: Path) -> None:
    """No sitecustomize, no rank variable, no optimizer: `install()` plus `step()` still collect."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCOPE_") and k != "RANK"}
    env["PYTHONPATH"] = str(ROOT)
    cmd = [sys.executable, str(JOB), "--steps", "6", "--sleep", "0.3", "--explicit-steps", "--install", str(tmp_path)]
    proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    beat = json.loads((tmp_path / "ranks" / "0" / "heartbeat.json").read_text())
    assert beat["step"] == 6 and beat["state"] == "exited"
    # The rank (0) is known after the first step; the window then starts as soon as it can.
    traces = list((tmp_path / "ranks" / "0" / "traces").glob("rank0.step*.pt.trace.json.gz"))
    assert len(traces) == 1 and len(trace_steps(traces[0])) == 2


@pytest.mark.subprocess
def test_unwritable_run_dir_leaves_the_job_alone(tmp_path: Path, baseline: str) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    proc = run_job(blocker / "run", "--steps", "8")
    assert proc.returncode == 0, proc.stderr
    assert checksum(proc.stdout) == baseline
    # One line tells the user why nothing was collected; no traceback reaches the job's output.
    assert "[scope hook] cannot write" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("where", ["start", "export"])
@pytest.mark.subprocess
def test_profiler_errors_are_logged_not_raised(tmp_path: Path, baseline: str, where: str) -> None:
    proc = run_job(tmp_path, "--steps", "8", "--break-profiler", where, extra_env={"SCOPE_PROFILE_EVERY": "2"})
    assert proc.returncode == 0, proc.stderr
    assert checksum(proc.stdout) == baseline
    log = (tmp_path / "ranks" / "0" / "hook.log").read_text()
    assert f"injected profiler failure ({where})" in log
    assert not list((tmp_path / "ranks" / "0" / "traces").glob("*.gz")) if where == "start" else True
    beat = json.loads((tmp_path / "ranks" / "0" / "heartbeat.json").read_text())
    assert beat["step"] == 8  # step counting went on


def _start_waiting_job(run_dir: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCOPE_")}
    env.update(PYTHONPATH=os.pathsep.join([str(SITE_DIR), str(ROOT)]), RANK="0", SCOPE_RUN_DIR=str(run_dir))
    proc = subprocess.Popen(
        [sys.executable, str(JOB), "--steps", "3", "--wait-signal"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("waiting"):
            break
    return proc


def _wait_for(predicate, timeout: float = 15.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


@pytest.mark.subprocess
def test_sigusr2_and_dump_requests_dump_stacks_and_sigterm_still_ends_the_job(tmp_path: Path) -> None:
    proc = _start_waiting_job(tmp_path)
    stacks = tmp_path / "ranks" / "0" / "stacks"
    try:
        os.kill(proc.pid, signal.SIGUSR2)
        assert _wait_for(lambda: list(stacks.glob("*-sigusr2.txt")))
        assert "hook_loop.py" in (stacks / "faulthandler.txt").read_text()
        write_request(tmp_path, "dump", reason="attach")
        assert _wait_for(lambda: list(stacks.glob("*-attach.txt")))
        assert "in main" in next(stacks.glob("*-attach.txt")).read_text()
        assert proc.poll() is None  # SIGUSR2 did not kill it
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGTERM
    assert list(stacks.glob("*-sigterm.txt"))
    beat = json.loads((tmp_path / "ranks" / "0" / "heartbeat.json").read_text())
    assert beat["state"] == "terminated"


SIGTERM_JOB = ROOT / "tests" / "jobs" / "sigterm_exit.py"


def _sigterm_when_ready(run_dir: Path, mode: str, wait_s: float, ignored: bool = False) -> tuple[int, float, str, str]:
    """Start tests/jobs/sigterm_exit.py in `mode`, SIGTERM it once it prints "ready": (returncode, seconds
    from the signal to its end, stdout, stderr). `ignored`: started with SIGTERM ignored."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCOPE_")}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.Popen(
        [sys.executable, str(SIGTERM_JOB), str(run_dir), mode],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=(lambda: signal.signal(signal.SIGTERM, signal.SIG_IGN)) if ignored else None,
    )
    try:
        assert proc.stdout is not None
        before = []
        for line in proc.stdout:
            before.append(line)
            if line.strip() == "ready":
                break
        time.sleep(0.3)  # into the wedge
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=wait_s)
        return proc.returncode, time.monotonic() - sent, "".join(before) + out, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.subprocess
@pytest.mark.parametrize(
    ("mode", "within_s"),
    [
        # on its way out after an uncaught exception, its own atexit handler wedged in C holding the GIL (a
        # destructor waiting on a dead peer): the hook used to turn the signal into a flag no Python code
        # could act on (58 s here; torchrun's SIGKILL after 30 s in CI on 2026-12-07)
        ("exit-wedged", 5),
        ("atexit-wedged", 5),  # the same on a normal exit
        ("thread-error", 5),  # a helper thread's error forwarded to sys.excepthook: the rank is not exiting
        # the job took SIGTERM's handler and gave it back at once, then blocked in C: the hook's thread must
        # see it (faulthandler's C handler was gone: 39 s, until the wedge ended)
        ("lent-handler", 8),
    ],
)
def test_sigterm_ends_the_rank_at_once_as_without_the_hook(tmp_path: Path, mode: str, within_s: float) -> None:
    rc, took, _, err = _sigterm_when_ready(tmp_path, mode, wait_s=40)
    assert rc == -signal.SIGTERM and took < within_s, (rc, took, err[-2000:])
    # the C-level stacks are still written on the way
    assert "Current thread" in (tmp_path / "ranks" / "0" / "stacks" / "sigterm.txt").read_text()
    if mode == "exit-wedged":
        assert "RuntimeError: injected failure" in err  # the job's traceback was printed before
        assert (tmp_path / "ranks" / "0" / "stacks" / "001-exception.txt").exists()


@pytest.mark.subprocess
@pytest.mark.parametrize(
    "mode",
    [
        "job-handler",  # installed after the hook's, calls the one it found (Lightning's composition)
        "one-shot-handler",  # puts the handler it found back, then calls it
        "no-frame-handler",  # the same, with frame None
        "ignored",  # started with SIGTERM ignored
    ],
)
def test_a_job_that_goes_on_after_sigterm_still_does(tmp_path: Path, mode: str) -> None:
    """The hook used to end these ranks (-15) where without it they go on: now it only dumps."""
    rc, _, out, err = _sigterm_when_ready(tmp_path, mode, wait_s=40, ignored=mode == "ignored")
    assert rc == 0 and "went on" in out, (rc, err[-2000:])
    rank = tmp_path / "ranks" / "0"
    assert json.loads((rank / "heartbeat.json").read_text())["state"] == "exited"
    if mode != "ignored":
        assert list((rank / "stacks").glob("*-sigterm.txt"))
        ends = [json.loads(x) for x in (rank / "attempts.jsonl").read_text().splitlines() if '"end"' in x]
        assert ends[-1]["signal"] == "SIGTERM", ends


@pytest.mark.subprocess
def test_a_wedged_sigterm_dump_cannot_hold_the_rank_to_the_launchers_sigkill(tmp_path: Path) -> None:
    """The hook's own dump wedges in C with the GIL held: a C-level deadline still ends the rank (SIGKILL, as
    a launcher's grace running out would), with every thread's stack a second before, inside a launcher's
    30 s; it used to live until the wedge ended (60 s)."""
    from scope.collectors.hook.core import SIGTERM_DEADLINE_S

    rc, took, _, _ = _sigterm_when_ready(tmp_path, "dump-wedged", wait_s=50)
    assert rc == -signal.SIGKILL and SIGTERM_DEADLINE_S - 1 < took < SIGTERM_DEADLINE_S + 4, (rc, took)
    seconds = int(SIGTERM_DEADLINE_S) - 1
    stacks = (tmp_path / "ranks" / "0" / "stacks" / "sigterm.txt").read_text()
    assert f"Timeout ({seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d})!" in stacks  # faulthandler's


@pytest.mark.subprocess
def test_sitecustomize_hands_over_to_the_next_one(tmp_path: Path) -> None:
    other = tmp_path / "site2"
    other.mkdir()
    (other / "sitecustomize.py").write_text("print('other sitecustomize ran')\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCOPE_")}
    env["PYTHONPATH"] = os.pathsep.join([str(SITE_DIR), str(other), str(ROOT)])
    env.update(RANK="0", SCOPE_RUN_DIR=str(tmp_path / "run"))
    code = "import scope.collectors.hook as h; print('hook', h.current() is not None)"
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "other sitecustomize ran" in proc.stdout and "hook True" in proc.stdout


def test_concurrent_heartbeat_writes_never_rename_each_others_file(tmp_path: Path) -> None:
    """The hook thread and the training thread both write heartbeat.json: no write may fail or leave a
    temporary file behind (the race once logged FileNotFoundError in hook.log and read as a crash)."""
    import threading

    from scope.collectors.hook.core import _write_json

    target = tmp_path / "ranks" / "0" / "heartbeat.json"
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        for i in range(200):
            try:
                _write_json(target, {"writer": n, "i": i})
            except BaseException as exc:  # any failure is the defect under test
                errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert json.loads(target.read_text())["i"] == 199
    assert [p.name for p in target.parent.iterdir()] == ["heartbeat.json"]
