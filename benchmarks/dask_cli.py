"""A Dask cluster started the way a user starts one: `dask scheduler` and `dask worker ADDRESS` as
separate processes (each in a session of its own, so that stopping it ends its nannies and workers).

Used by benchmarks/scale.py (--engines dask-cli) and tests/test_dask_cluster.py:

    with cli_cluster(workers=2, log_dir=tmp) as cluster:
        main(["analyze", run, "--engine", "dask", "--scheduler", cluster.address])
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil

START_TIMEOUT_S = 120


@dataclass
class CliCluster:
    address: str
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def processes(self) -> list[psutil.Process]:
        """Every live process of the cluster: the two commands, their nannies and their workers."""
        found: list[psutil.Process] = []
        for proc in self.procs:
            with contextlib.suppress(psutil.Error):
                top = psutil.Process(proc.pid)
                found += [top, *top.children(recursive=True)]
        return [p for p in found if _running(p)]

    def stop(self) -> None:
        """SIGTERM to each command's whole session, workers first; SIGKILL to what is left after 20 s."""
        left = self.processes()
        for proc in reversed(self.procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        _, alive = psutil.wait_procs(left, timeout=20)
        for p in alive:
            with contextlib.suppress(psutil.Error):
                p.kill()
        psutil.wait_procs(alive, timeout=5)
        for proc in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)


def _running(p: psutil.Process) -> bool:
    try:
        return p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def cli_cluster(
    workers: int, log_dir: Path, *, niceness: int = 0, env: dict[str, str] | None = None
) -> Iterator[CliCluster]:
    """A scheduler on a free local port and `workers` single-threaded worker processes, ready when it
    yields; stopped (no process left) when the block ends, however it ends."""
    dask = str(Path(sys.executable).with_name("dask"))
    port = free_port()
    cluster = CliCluster(f"tcp://127.0.0.1:{port}")
    log_dir.mkdir(parents=True, exist_ok=True)
    full_env = {**os.environ, **(env or {})}
    nice = ["nice", "-n", str(niceness)] if niceness else []
    try:
        sched = [*nice, dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"]
        cluster.procs.append(_spawn(sched, log_dir / "scheduler.log", full_env))
        _wait_for_port(port, cluster)
        work = [*nice, dask, "worker", cluster.address, "--nworkers", str(workers), "--nthreads", "1"]
        work += ["--no-dashboard", "--memory-limit", "0"]
        cluster.procs.append(_spawn(work, log_dir / "workers.log", full_env))
        _wait_for_workers(cluster, workers)
        yield cluster
    finally:
        cluster.stop()


def _spawn(cmd: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)


def _wait_for_port(port: int, cluster: CliCluster) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if cluster.procs[0].poll() is not None:
            raise RuntimeError(f"`dask scheduler` exited ({cluster.procs[0].returncode}) before it listened")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        time.sleep(0.2)
    raise RuntimeError(f"`dask scheduler` did not listen on port {port} within {START_TIMEOUT_S} s")


def _wait_for_workers(cluster: CliCluster, workers: int) -> None:
    from distributed import Client

    with Client(cluster.address, timeout=30) as client:
        client.wait_for_workers(workers, timeout=START_TIMEOUT_S)
