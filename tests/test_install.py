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


@pytest.mark.subprocess
def test_generic_top_level_names_are_not_installed(fresh_venv: Path, tmp_path: Path) -> None:
    python = str(fresh_venv / "bin" / "python")
    code = textwrap.dedent(
        """
        import importlib.util, json
        out = {}
        for name in ("app", "collectors", "analyzers", "scope.app", "scope.collectors.hook", "scope.analyzers"):
            out[name] = importlib.util.find_spec(name) is not None
        import scope
        out["from"] = scope.__file__
        print(json.dumps(out))
        """
    )
    found = json.loads(run([python, "-c", code], tmp_path, clean_env(fresh_venv)).strip().splitlines()[-1])
    assert not found["app"] and not found["collectors"] and not found["analyzers"]
    assert found["scope.app"] and found["scope.collectors.hook"] and found["scope.analyzers"]
    assert str(fresh_venv) in found["from"], "scope must come from the wheel, not the checkout"


@pytest.mark.subprocess
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


# Every module of the installed package, and every import it makes (at the top or inside a function, and
# the names given to importlib.import_module), must resolve in the installed package alone: the demo once
# looked for its dashboard under the checkout's old top-level name `app`, inside a function, and said
# "not available". Then every entry point: scope.app and each command, imported and asked for --help.
IMPORTS_RESOLVE = """
import ast, importlib, importlib.util, json, pathlib, subprocess, sys
import scope, scope.cli
root = pathlib.Path(scope.__file__).parent
wanted, bad = set(), []
for path in sorted(root.rglob("*.py")):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module]
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            names = [node.args[0].value]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            if top in ("app", "collectors", "analyzers"):
                bad.append(f"{path.relative_to(root)}:{node.lineno}: {name} (installed as scope.{name})")
            elif top == "scope":
                wanted.add((name, f"{path.relative_to(root)}:{node.lineno}"))
for name, where in sorted(wanted):
    try:
        found = importlib.util.find_spec(name) is not None
    except ImportError as exc:
        found = False
    if not found and not name.startswith("scope.ingest._native"):
        bad.append(f"{where}: {name} does not resolve")
import scope.app
assert callable(scope.app.serve) and callable(scope.app.create_app)
helps = {}
for module in scope.cli._load_commands():
    proc = subprocess.run([sys.executable, "-m", "scope", module.NAME, "--help"], capture_output=True, text=True)
    helps[module.NAME] = proc.returncode if f"usage: scope {module.NAME}" in proc.stdout else proc.stderr[-500:]
print(json.dumps({"bad": bad, "checked": len(wanted), "helps": helps, "app": scope.app.__file__}))
"""


@pytest.mark.subprocess
def test_every_import_and_entry_point_resolves_in_the_installed_wheel(fresh_venv: Path, tmp_path: Path) -> None:
    python = str(fresh_venv / "bin" / "python")
    out = run([python, "-c", IMPORTS_RESOLVE], tmp_path, clean_env(fresh_venv), timeout=600)
    found = json.loads(out.strip().splitlines()[-1])
    assert found["bad"] == [], "\n".join(found["bad"])
    assert found["checked"] > 100, found["checked"]
    assert str(fresh_venv) in found["app"], "scope.app must come from the wheel, not the checkout"
    from scope.cli import COMMANDS

    assert set(found["helps"]) == {name.rsplit(".", 1)[-1] for name in COMMANDS}
    assert all(code == 0 for code in found["helps"].values()), found["helps"]


def test_the_test_process_sees_the_installed_package_only() -> None:
    """The suite runs against the installed package: the checkout's folders are no top-level packages here."""
    import importlib.util

    assert [name for name in ("app", "collectors", "analyzers") if importlib.util.find_spec(name)] == []
    assert str(ROOT) not in [str(Path(p or ".").resolve()) for p in sys.path]
