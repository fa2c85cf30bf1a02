"""Every module of the project imports on its own, in a fresh interpreter: an import cycle that bites
only when one module happens to be imported first (`import app` once failed so) cannot hide. And the
command line stays light: `import scope.cli` and building its parser load none of the heavy libraries."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("scope", "analyzers", "app", "collectors")
# Entry points that act when imported (they are run, never imported).
SKIP = {"scope.__main__", "collectors.sidecar.__main__", "collectors.hook.site.sitecustomize"}
HEAVY = ("pandas", "pyarrow", "duckdb", "dash", "plotly", "torch", "numpy")


def project_modules() -> list[str]:
    names = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            name = ".".join(parts)
            if name not in SKIP:
                names.append(name)
    return names


# Run in one interpreter that has loaded the heavy third-party libraries and no module of the project:
# each project module is imported in a child forked from it, so every child starts with none of the
# project's modules loaded (what an import cycle needs to show), and none pays for pandas or torch again.
FORK_EACH = """
import importlib, os, sys, traceback
for lib in sys.argv[1].split(","):
    try:
        importlib.import_module(lib)
    except ImportError:
        pass
assert not [m for m in sys.modules if m.split(".")[0] in ("scope", "analyzers", "app", "collectors")]
running, failed = {}, 0
def reap():
    global failed
    pid, status = os.wait()
    if status:
        failed += 1
    running.pop(pid)
for name in sys.argv[2:]:
    if len(running) >= 4:
        reap()
    pid = os.fork()
    if pid == 0:
        try:
            importlib.import_module(name)
        except BaseException as exc:
            print(f"FAILED {name}: {type(exc).__name__}: {exc}", flush=True)
            os._exit(1)
        os._exit(0)
    running[pid] = name
while running:
    reap()
sys.exit(1 if failed else 0)
"""


def test_every_module_imports_alone_in_a_fresh_interpreter() -> None:
    modules = project_modules()
    assert len(modules) > 100 and "app" in modules and "scope.ingest.job" in modules
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            FORK_EACH,
            ",".join((*HEAVY, "dash", "rich.console", "msgspec", "pyarrow.parquet", "pyarrow.dataset")),
            *modules,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    failed = [line for line in proc.stdout.splitlines() if line.startswith("FAILED")]
    assert proc.returncode == 0 and not failed, "\n".join(failed) or proc.stderr[-2000:]


def test_the_cli_loads_no_heavy_library() -> None:
    code = f"import sys, scope.cli; scope.cli.build_parser(); print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "", f"`scope --help` imports {proc.stdout.strip()}"
