"""Every module of the project imports on its own, in a fresh interpreter: an import cycle that bites
only when one module happens to be imported first (`import app` once failed so) cannot hide. And the
command line stays light: `import scope.cli` and building its parser load none of the heavy libraries."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import source

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("scope", "analyzers", "app", "collectors")
# Entry points that act when imported (they are run, never imported).
SKIP = {"scope.__main__", "scope.collectors.sidecar.__main__", "scope.collectors.hook.site.sitecustomize"}
HEAVY = ("pandas", "pyarrow", "duckdb", "dash", "plotly", "torch", "numpy")


def project_modules() -> list[str]:
    names = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            if parts[0] != "scope":  # collectors/, analyzers/, app/ install as scope.collectors, ...
                parts.insert(0, "scope")
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
    importlib.import_module(lib)
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


@pytest.mark.subprocess
def test_every_module_imports_alone_in_a_fresh_interpreter(tmp_path: Path) -> None:
    modules = project_modules()
    assert len(modules) > 100 and "scope.app" in modules and "scope.ingest.job" in modules
    # The installed package only: no PYTHONPATH, and a working directory outside the checkout.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            FORK_EACH,
            ",".join((*HEAVY, "dash", "rich.console", "msgspec", "pyarrow.parquet", "pyarrow.dataset")),
            *modules,
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    failed = [line for line in proc.stdout.splitlines() if line.startswith("FAILED")]
    assert proc.returncode == 0 and not failed, "\n".join(failed) or proc.stderr[-2000:]


@pytest.mark.subprocess
def test_the_cli_loads_no_heavy_library(tmp_path: Path) -> None:
    code = f"import sys, scope.cli; scope.cli.build_parser(); print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "", f"`scope --help` imports {proc.stdout.strip()}"


def import_graph(modules: list[str]) -> dict[str, set[str]]:
    """Module -> project modules it imports (at top level or inside functions; not under TYPE_CHECKING,
    and not its own parent packages, which Python initializes first whatever the order)."""
    known = set(modules)
    graph: dict[str, set[str]] = {}
    for name in modules:
        folders = name.split(".")
        path = ROOT.joinpath(*(folders[1:] if folders[1:2] and folders[1] in PACKAGES else folders))
        path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        typing_only = {
            id(n)
            for node in source.nodes(path)
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for n in ast.walk(node)
        }
        targets: set[str] = set()
        for node in source.nodes(path):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                targets.update(
                    f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in known else node.module for a in node.names
                )
        parents = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
        graph[name] = {t for t in targets if t in known and t != name and t not in parents}
    return graph


def cycles(graph: dict[str, set[str]], within: tuple[str, ...]) -> list[list[str]]:
    """Strongly connected components of more than one module among those under `within`."""
    nodes = [n for n in graph if n.startswith(within)]
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if not w.startswith(within):
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in nodes:
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles_in_scope_analyzers_and_app() -> None:
    graph = import_graph(project_modules() + sorted(SKIP))
    assert "scope.ingest.rank" in graph["scope.ingest.dispatch"]  # function-level imports count
    # collectors/ is not held to it yet (sidecar.nvml_api <-> nvml_replay)
    assert [c for c in cycles(graph, ("scope",)) if not c[0].startswith("scope.collectors.")] == []
    assert cycles({"a": {"b"}, "b": {"a"}, "c": set()}, ("",)) == [["a", "b"]]


# An ImportError caught and answered by raising (with the install command, scope.deps.require) is reported;
# one caught and answered by a fallback value hides a broken installation (the demo once said "the
# dashboard is not available" because it looked under an old name). The one fallback allowed answers
# "is it installed?" for scope.deps.require, which then names the install command.
IMPORT_ERROR_FALLBACKS = {("scope/deps.py", "installed")}


def import_error_handlers(path: Path) -> list[tuple[str, ast.ExceptHandler]]:
    """(enclosing function's name, or '' at module level; handler) of every `except ImportError` in PATH."""
    handlers = [
        node
        for node in source.nodes(path)
        if isinstance(node, ast.ExceptHandler)
        and node.type is not None
        and any(word in ast.unparse(node.type) for word in ("ImportError", "ModuleNotFoundError"))
    ]
    if not handlers:  # most files: no function's nodes need their owner
        return []
    owner: dict[int, str] = {}
    for func in source.nodes(path):
        if isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            for node in ast.walk(func):
                owner[id(node)] = func.name  # inner functions come later in the walk and win
    return [(owner.get(id(node), ""), node) for node in handlers]


def test_no_import_error_is_swallowed() -> None:
    swallowed = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for func, node in import_error_handlers(path):
                if (str(path.relative_to(ROOT)), func) in IMPORT_ERROR_FALLBACKS:
                    continue
                if not any(isinstance(n, ast.Raise) for n in ast.walk(node)):
                    swallowed.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert swallowed == [], "an ImportError answered without raising: " + ", ".join(swallowed)
