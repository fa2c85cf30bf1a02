"""The diagnosis in rooms (analyzers/diagnose/): knowledge/ holds what messages mean as tables, readers/ turn files
into anomalies, reasoning/ works across lines, ranks and dumps, words/ says it. The package root keeps only its
entry points, the data model and the pipeline, and knowledge reads no run: it imports no other room."""

from __future__ import annotations

import ast
from pathlib import Path

import scope.analyzers.diagnose as diagnose

PACKAGE = Path(diagnose.__file__).parent
ROOMS = ("knowledge", "readers", "reasoning", "words")


def _imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):  # lazy imports inside functions count too
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_the_package_root_holds_the_entry_points_the_model_the_pipeline_and_the_rooms() -> None:
    modules = {p.name for p in PACKAGE.glob("*.py")}
    folders = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert modules == {"__init__.py", "model.py", "post_mortem.py"}, modules
    assert folders == set(ROOMS), folders
    assert all(list((PACKAGE / room).glob("*.py")) != [PACKAGE / room / "__init__.py"] for room in ROOMS)


def test_knowledge_imports_no_other_room() -> None:
    others = tuple(f"scope.analyzers.diagnose.{name}" for name in (*ROOMS[1:], "post_mortem"))
    for path in sorted((PACKAGE / "knowledge").glob("*.py")):
        bad = {m for m in _imported_modules(path) if m.startswith(others)}
        assert not bad, f"knowledge/{path.name} imports {sorted(bad)}"
