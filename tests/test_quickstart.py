"""The README's Quick start, run as a new user runs it: `make demo` in a fresh clone serves the dashboard.

The clone is the committed HEAD (git clone of this repository into a temporary folder), so what is tested
is what a user gets: the Makefile, scripts/setup.sh, the package as installed into the clone's own .venv,
the demo job and the served dashboard. The command is `make demo` and nothing else; the environment only
says where to serve ($SCOPE_DASHBOARD_PORT=0: a free port, printed) and that the demo ends on its own
after a while ($SCOPE_DEMO_SERVE_S), should this test die before it stops the server.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT

pytestmark = [pytest.mark.browser, pytest.mark.multirank]

SERVING = re.compile(r"scope dashboard: serving .* at (http://\S+)")
# setup.sh (pip from the local cache, the native core's compile) plus the 4-rank job on a busy 2-core host.
SERVED_WITHIN_S = 900
STRAGGLER_RANK = 2  # the demo's default --fault-rank


class Output:
    """The lines a process prints, collected by a thread (so waiting for one never blocks on the pipe)."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        assert proc.stdout is not None
        self.thread = threading.Thread(target=self._read, args=(proc.stdout,), daemon=True)
        self.thread.start()

    def _read(self, stream: Any) -> None:
        for line in stream:
            self.lines.append(line.rstrip("\n"))

    def text(self) -> str:
        return "\n".join(self.lines)

    def wait_for(self, pattern: re.Pattern[str], proc: subprocess.Popen[str], timeout_s: float) -> re.Match[str]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if match := pattern.search(line):
                    return match
            if proc.poll() is not None:
                self.thread.join(timeout=5)
                tail = self.text()[-6000:]
                pytest.fail(f"`make demo` exited {proc.returncode} before serving the dashboard:\n{tail}")
            time.sleep(1)
        pytest.fail(f"no dashboard served within {timeout_s:.0f} s:\n{self.text()[-6000:]}")


def user_env() -> dict[str, str]:
    """The environment of a user's shell: none of this test run's virtual environment or scope settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SCOPE_", "PYTHON", "VIRTUAL_ENV"))}
    venv_bin = str(Path(os.environ.get("VIRTUAL_ENV", ROOT / ".venv")) / "bin")
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != venv_bin)
    return env


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def stop(proc: subprocess.Popen[str]) -> int | None:
    """Ctrl-C, as a user stops the demo (to the whole group: make and scope), then a kill if need be.
    Returns make's exit status after Ctrl-C, None when it had to be killed."""
    if proc.poll() is not None:
        return proc.returncode
    os.killpg(proc.pid, signal.SIGINT)
    try:
        return proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        return None


def test_make_demo_in_a_fresh_clone_serves_a_dashboard_naming_the_straggler(tmp_path: Path, browser: Any) -> None:
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the Quick start is tested on a clone of the committed HEAD")
    if shutil.which("make") is None or shutil.which("git") is None:
        pytest.fail("make and git are needed to run the README's Quick start")
    clone = tmp_path / "scope"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True, timeout=120)
    env = {**user_env(), "SCOPE_DASHBOARD_PORT": "0", "SCOPE_DEMO_SERVE_S": str(SERVED_WITHIN_S + 300)}
    proc = subprocess.Popen(
        ["make", "demo"],
        cwd=clone,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: stopped as a whole, as Ctrl-C would
        # a user's shell leaves SIGINT at its default; a test run started in the background by a script inherits
        # it ignored (bash: asynchronous commands ignore SIGINT), and so would the demo, which Ctrl-C then never stops
        preexec_fn=_default_sigint,
    )
    output = Output(proc)
    try:
        url = output.wait_for(SERVING, proc, SERVED_WITHIN_S).group(1)
        assert f"the analysis found the injected straggler on rank {STRAGGLER_RANK}" in output.text(), output.text()
        page = browser.new_page()
        try:
            page.goto(url, timeout=60_000)
            verdict = page.locator("#verdict")
            verdict.wait_for(timeout=60_000)
            headline = verdict.inner_text()
        finally:
            page.close()
        assert re.search(rf"\brank {STRAGGLER_RANK}\b", headline), f"the served headline: {headline!r}"
        # Ctrl-C ends the served demo cleanly (torchrun's signal handlers once turned it into a traceback);
        # make itself reports the interrupt, as it does for any command stopped so
        code = stop(proc)
        output.thread.join(timeout=10)
        tail = output.text()[-3000:]
        assert code is not None and "Traceback" not in tail and "internal error" not in tail, (code, tail)
    finally:
        stop(proc)
