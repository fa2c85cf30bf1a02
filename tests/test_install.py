"""The built wheel, installed into a fresh virtual environment, gives one `scope` namespace.

`collectors/`, `analyzers/` and `app/` sit at the top of the repository but must install as
`scope.collectors`, `scope.analyzers`, `scope.app`: generic top-level names would shadow (or be shadowed
by) a training project's own `app` or `collectors`, and the hook's sitecustomize runs in every rank.
The fresh venv borrows the test environment's third-party packages (torch, pyarrow, ...) through a
.pth line, so nothing is downloaded; the project itself comes only from the wheel.
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
JOB = """
import torch
model = torch.nn.Linear(8, 8)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(4):
    model(torch.randn(4, 8)).sum().backward()
    opt.step()
    opt.zero_grad()
"""


def run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: int = 300) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{cmd} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("wheel")
    run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(work), str(ROOT)],
        work,
    )
    wheel = next(work.glob("scope_profiler-*.whl"))
    venv = work / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], work)
    python = venv / "bin" / "python"
    purelib = run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], work).strip()
    # Third-party packages from the test environment, after the venv's own site-packages.
    Path(purelib, "borrowed.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", purelib, str(wheel)], work)
    return venv


def clean_env(venv: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SCOPE_", "PYTHON", "VIRTUAL_ENV"))}
    env["PATH"] = f"{venv / 'bin'}:{env.get('PATH', '')}"
    return env


def test_generic_top_level_names_are_not_installed(fresh_venv: Path, tmp_path: Path) -> None:
    python = str(fresh_venv / "bin" / "python")
    code = textwrap.dedent(
        """
        import importlib, json
        out = {}
        for name in ("app", "collectors", "analyzers", "scope.app", "scope.collectors.hook", "scope.analyzers"):
            try:
                importlib.import_module(name)
                out[name] = True
            except ImportError:
                out[name] = False
        import scope
        out["from"] = scope.__file__
        print(json.dumps(out))
        """
    )
    found = json.loads(run([python, "-c", code], tmp_path, clean_env(fresh_venv)).strip().splitlines()[-1])
    assert not found["app"] and not found["collectors"] and not found["analyzers"]
    assert found["scope.app"] and found["scope.collectors.hook"] and found["scope.analyzers"]
    assert str(fresh_venv) in found["from"], "scope must come from the wheel, not the checkout"


def test_installed_cli_and_a_hooked_run_work(fresh_venv: Path, tmp_path: Path) -> None:
    env = clean_env(fresh_venv)
    python = str(fresh_venv / "bin" / "python")
    assert "usage: scope" in run([python, "-m", "scope", "--help"], tmp_path, env)
    (tmp_path / "job.py").write_text(JOB)
    out = tmp_path / "RUN"
    run(
        [
            python,
            "-m",
            "scope",
            "run",
            "--out",
            str(out),
            "--quiet",
            "--no-sidecar",
            "--nproc-per-node",
            "1",
            "--",
            "job.py",
        ],
        tmp_path,
        env,
    )
    beat = json.loads((out / "ranks" / "0" / "heartbeat.json").read_text())
    assert beat["step"] >= 4, f"the hook did not count the job's steps: {beat}"
