"""`scope attach --pid PID... --out RUN`: watch a job that was started without scope.

Records this host's counters (the sidecar sources) into RUN, and dumps the Python stacks of the
given processes with `py-spy dump`:

- on demand: SIGUSR1 to the attaching process, or a `{"kind": "dump"}` request file in
  `RUN/control/` (the format of `scope.collectors.hook.control`, so ranks running scope's hook dump their
  own stacks and Flight Recorder too);
- on a detected hang: for `hang_after_s` seconds none of the processes used CPU (below
  `idle_cpu_frac` of a core) and no heartbeat (`RUN/ranks/<rank>/heartbeat.json`) advanced. One dump
  per hang episode; a dump request is dropped for hooked ranks as well.

A process's rank is read from its environment (RANK, SLURM_PROCID, ...) when readable: its stacks
go to `RUN/ranks/<rank>/stacks/`, otherwise to `RUN/stacks/<pid>/`. Without py-spy a clear notice
says so once (`pip install py-spy`); counters are recorded all the same.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from scope.collectors.sidecar import default_host, default_sources
from scope.collectors.sidecar.base import Source
from scope.collectors.sidecar.sampler import MAX_HZ, Sampler
from scope.collectors.watchdog import pid_alive

from scope import rundir
from scope.errors import EXIT_OK, EXIT_USAGE, ScopeError
from scope.manifest import MANIFEST_NAME, RankInfo, RunManifest, write_manifest
from scope.recordio import read_json

RANK_VARS = ("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK")
LOCAL_RANK_VARS = ("LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK")
PY_SPY_TIMEOUT_S = 30.0
OWN_HANG_REASON = "hang (scope attach)"
CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass
class Target:
    pid: int
    rank: int | None = None
    local_rank: int | None = None
    alive: bool = True
    cpu_history: list[tuple[float, float]] = field(default_factory=list)  # (monotonic, cpu seconds)

    def stacks_dir(self, run_dir: Path) -> Path:
        if self.rank is not None:
            return rundir.stacks_dir(run_dir, self.rank)
        return Path(run_dir) / "stacks" / str(self.pid)


def pid_exists(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists() if Path("/proc").is_dir() else pid_alive(pid)


def process_env(pid: int) -> dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, v in pairs}


def _first_int(env: dict[str, str], names: tuple[str, ...]) -> int | None:
    for name in names:
        with contextlib.suppress(KeyError, ValueError):
            return int(env[name])
    return None


def process_cpu_seconds(pid: int) -> float | None:
    """utime + stime of all the process's threads, from /proc/<pid>/stat."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rpartition(")")[2].split()  # after the command name, which may hold spaces
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def find_py_spy() -> str | None:
    beside_python = Path(sys.executable).parent / "py-spy"
    return shutil.which("py-spy") or (str(beside_python) if beside_python.exists() else None)


class StackDumper:
    """Runs `py-spy dump` for each live target and writes what it printed."""

    def __init__(
        self, run_dir: Path, notice: Callable[[str], None], py_spy: str | None = None, enabled: bool = True
    ) -> None:
        self.run_dir = run_dir
        self.notice = notice
        self.enabled = enabled  # False: the user asked for counters only (--no-stacks); nothing to say
        self.py_spy = py_spy if py_spy is not None else find_py_spy()
        self.dumps_written: list[Path] = []

    def check(self) -> bool:
        """Says once, up front, when stacks cannot be dumped."""
        if not self.enabled:
            return False
        if not self.py_spy:
            self.notice(
                "py-spy is not installed (pip install py-spy): Python stacks of the attached processes cannot be dumped"
            )
        return bool(self.py_spy)

    def dump(self, targets: list[Target], reason: str) -> list[Path]:
        if not self.check():
            return []
        written = []
        for target in targets:
            if target.alive:
                written.append(self._dump_one(target, reason))
        self.dumps_written.extend(written)
        return written

    def _dump_one(self, target: Target, reason: str) -> Path:
        assert self.py_spy is not None  # dump() checked it
        folder = target.stacks_dir(self.run_dir)
        folder.mkdir(parents=True, exist_ok=True)
        now = time.time_ns()
        path = folder / f"pyspy-{target.pid}-{now}.txt"
        header = (
            f"# py-spy dump --pid {target.pid} (rank {target.rank}) at {now} ns "
            f"on {socket.gethostname()}; reason: {reason}\n"
        )
        try:
            proc = subprocess.run(
                [self.py_spy, "dump", "--pid", str(target.pid)],
                capture_output=True,
                text=True,
                timeout=PY_SPY_TIMEOUT_S,
            )
            body = proc.stdout
            if proc.returncode != 0:
                body += f"\n# py-spy exited {proc.returncode}: {proc.stderr.strip()}\n"
                self.notice(f"py-spy could not read pid {target.pid}: {proc.stderr.strip()[:200]}")
        except (OSError, subprocess.SubprocessError) as exc:
            body = f"# py-spy failed: {exc}\n"
        path.write_text(header + body)
        return path


class HangDetector:
    """No CPU progress of any target and no heartbeat advance for `hang_after_s` seconds."""

    def __init__(self, run_dir: Path, hang_after_s: float, idle_cpu_frac: float) -> None:
        self.run_dir = run_dir
        self.hang_after_s = hang_after_s
        self.idle_cpu_frac = idle_cpu_frac
        self.heartbeats: dict[int, tuple[object, float]] = {}  # rank -> (last value, when it changed)
        self.in_hang = False

    def observe(self, targets: list[Target], now: float) -> bool:
        """Returns True once when a hang starts (again after progress resumed)."""
        busy = False
        for target in targets:
            cpu = process_cpu_seconds(target.pid) if target.alive else None
            if cpu is None:
                continue
            target.cpu_history.append((now, cpu))
            target.cpu_history = [(t, c) for t, c in target.cpu_history if now - t <= self.hang_after_s + 5]
            t0, c0 = target.cpu_history[0]
            if now - t0 < self.hang_after_s or (cpu - c0) > self.idle_cpu_frac * (now - t0):
                busy = True
        hung = not busy and not self._heartbeat_moved(targets, now) and any(t.alive for t in targets)
        started = hung and not self.in_hang
        self.in_hang = hung
        return started

    def _heartbeat_moved(self, targets: list[Target], now: float) -> bool:
        moved = False
        for target in targets:
            if target.rank is None:
                continue
            beat = read_json(rundir.heartbeat_path(self.run_dir, target.rank))  # guarded: never a FIFO's wait
            if beat is None:
                continue
            value = (beat.get("step"), beat.get("time_ns"))
            last = self.heartbeats.get(target.rank)
            if last is None or last[0] != value:
                self.heartbeats[target.rank] = (value, now)
            if now - self.heartbeats[target.rank][1] < self.hang_after_s:
                moved = True
        return moved


def _ensure_manifest(run_dir: Path, targets: list[Target], host: str) -> bool:
    """Write a minimal run.json when RUN has none; True when this call wrote it."""
    if (run_dir / MANIFEST_NAME).exists():
        return False
    try:
        command = Path(f"/proc/{targets[0].pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        command = []
    manifest = RunManifest(
        run_id=run_dir.name,
        command=[c.decode(errors="replace") for c in command if c],
        cwd=os.getcwd(),
        ranks=[
            RankInfo(rank=t.rank, host=host, local_rank=t.local_rank, pid=t.pid) for t in targets if t.rank is not None
        ],
        start_ns=time.time_ns(),
        status="running",
        extra={"attached": {"pids": [t.pid for t in targets], "host": host}},
    )
    write_manifest(run_dir, manifest)
    return True


def _dump_requests(run_dir: Path, since_ns: int) -> Callable[[], bool]:
    """A poller for `{"kind": "dump"}` requests in RUN/control/."""
    from scope.collectors.hook.control import RequestPoller

    poller = RequestPoller(run_dir, since_ns)
    # Our own hang request (for hooked ranks) must not trigger a second py-spy dump here.
    return lambda: any(r.kind == "dump" and r.reason != OWN_HANG_REASON for r in poller.poll())


def _request_hook_dump(run_dir: Path, reason: str) -> None:
    with contextlib.suppress(Exception):
        from scope.collectors.hook.control import write_request

        write_request(run_dir, "dump", reason=reason)


def attach_pids(
    pids: list[int],
    out_dir: Path | str,
    seconds: float | None = None,
    hz: float = 1.0,
    *,
    hang_after_s: float = 60.0,
    idle_cpu_frac: float = 0.02,
    host: str | None = None,
    sources: list[Source] | None = None,
    py_spy: str | None = None,
    say: Callable[[str], None] | None = None,
    stacks: bool = True,
) -> int:
    """Record counters and dump stacks of `pids` until `seconds` pass or every pid has exited."""
    if not 0 < hz <= MAX_HZ:
        raise ScopeError(f"--hz must be in (0, {MAX_HZ:g}], got {hz:g}", EXIT_USAGE)
    if seconds is not None and seconds <= 0:
        raise ScopeError(f"--seconds must be positive, got {seconds:g}", EXIT_USAGE)
    run_dir = Path(out_dir)
    if run_dir.exists() and not run_dir.is_dir():
        raise ScopeError(f"{run_dir}: exists and is not a directory", EXIT_USAGE)
    say = say or (lambda message: print(f"scope attach: {message}", file=sys.stderr))
    missing = [p for p in pids if not pid_exists(p)]
    if not pids or len(missing) == len(pids):
        raise ScopeError(f"no such process: {', '.join(map(str, missing or pids)) or '(none given)'}", EXIT_USAGE)
    host = host or default_host()
    targets = []
    for pid in pids:
        env = process_env(pid)
        targets.append(Target(pid, _first_int(env, RANK_VARS), _first_int(env, LOCAL_RANK_VARS), pid_exists(pid)))
    run_dir.mkdir(parents=True, exist_ok=True)
    owns_manifest = _ensure_manifest(run_dir, targets, host)
    sampler = Sampler(run_dir, host, sources if sources is not None else default_sources(), hz)
    sampler.start()

    def notice(message: str) -> None:
        if message not in sampler.notices:
            say(message)
        sampler.notice(message)

    for pid in missing:
        notice(f"pid {pid} does not exist; watching the others")
    dumper = StackDumper(run_dir, notice, py_spy, enabled=stacks)
    dumper.check()
    watch = _Watch(run_dir, targets, sampler, dumper, HangDetector(run_dir, hang_after_s, idle_cpu_frac), say)
    try:
        watch.run(seconds, hz)
    except KeyboardInterrupt:
        say("interrupted; stopping")
    finally:
        watch.restore_signal()
        sampler.stop()
        if owns_manifest:
            _finish_manifest(run_dir, watch.hang_ns)
    return EXIT_OK


class _Watch:
    """The attach loop: on-demand and hang-triggered dumps, until time is up or the pids are gone."""

    def __init__(
        self,
        run_dir: Path,
        targets: list[Target],
        sampler: Sampler,
        dumper: StackDumper,
        detector: HangDetector,
        say: Callable[[str], None],
    ) -> None:
        self.run_dir, self.targets, self.sampler = run_dir, targets, sampler
        self.dumper, self.detector, self.say = dumper, detector, say
        self.signalled = threading.Event()
        self.hang_ns: int | None = None
        self.requests = _dump_requests(run_dir, time.time_ns())
        self._old_handler = None
        if threading.current_thread() is threading.main_thread() and hasattr(signal, "SIGUSR1"):
            self._old_handler = signal.signal(signal.SIGUSR1, lambda *_: self.signalled.set())

    def restore_signal(self) -> None:
        if self._old_handler is not None:
            signal.signal(signal.SIGUSR1, self._old_handler)

    def run(self, seconds: float | None, hz: float) -> None:
        deadline = None if seconds is None else time.monotonic() + seconds
        period = min(1.0, 1.0 / hz)
        while deadline is None or time.monotonic() < deadline:
            self.poll()
            if not any(t.alive for t in self.targets):
                self.say("all attached processes have exited")
                return
            self.signalled.wait(period)

    def poll(self) -> None:
        for target in self.targets:
            if target.alive and not pid_exists(target.pid):
                target.alive = False
                self.sampler.log(f"pid {target.pid} exited")
        if self.signalled.is_set():
            self.signalled.clear()
            self._dump("SIGUSR1")
        if self.requests():
            self._dump("control request")
        if self.detector.observe(self.targets, time.monotonic()):
            self.hang_ns = time.time_ns()
            idle = self.detector.hang_after_s
            self.sampler.notice(f"hang suspected at {self.hang_ns} ns: no CPU progress and no heartbeat for {idle:g} s")
            self.say(f"no CPU progress and no heartbeat for {idle:g} s: dumping stacks")
            _request_hook_dump(self.run_dir, OWN_HANG_REASON)
            self._dump("hang")

    def _dump(self, reason: str) -> None:
        paths = self.dumper.dump(self.targets, reason)
        for path in paths:
            self.sampler.log(f"stacks ({reason}) -> {path}")
        if paths:
            self.say(f"stacks ({reason}) written: {', '.join(str(p) for p in paths)}")


def _finish_manifest(run_dir: Path, hang_ns: int | None) -> None:
    with contextlib.suppress(Exception):
        from scope.manifest import read_manifest

        manifest = read_manifest(run_dir)
        manifest.end_ns = time.time_ns()
        manifest.status = "hung" if hang_ns else "unknown"
        if hang_ns:
            manifest.hang = {"detected_ns": hang_ns, "by": "scope attach"}
        write_manifest(run_dir, manifest)
