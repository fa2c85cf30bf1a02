"""Pool workers die with the process that started them, even when it is killed with SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie child of a dead parent is reaped by init: read its state to tell
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


@pytest.mark.subprocess
def test_sigkill_of_the_driver_ends_its_pool_workers(tmp_path: Path) -> None:
    driver = subprocess.Popen([sys.executable, str(ROOT / "tests" / "jobs" / "slow_pool.py"), str(tmp_path)], cwd=ROOT)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(list(tmp_path.glob("*.pid"))) < 2:
            time.sleep(0.2)
        pids = [int(p.stem) for p in tmp_path.glob("*.pid")]
        assert len(pids) == 2, "the workers never started"
        driver.send_signal(signal.SIGKILL)
        driver.wait(timeout=10)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any(alive(p) for p in pids):
            time.sleep(0.2)
        left = [p for p in pids if alive(p)]
        for pid in left:  # never leave them behind, even when the test fails
            os.kill(pid, signal.SIGKILL)
        assert left == [], f"workers {left} outlived the killed driver"
    finally:
        if driver.poll() is None:
            driver.kill()
