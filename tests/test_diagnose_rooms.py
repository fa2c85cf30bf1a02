"""The diagnosis in rooms (analyzers/diagnose/): knowledge/ holds what messages mean as tables, readers/ turn files
into anomalies, reasoning/ works across lines, ranks and dumps, words/ says it. The package root keeps only its
entry points, the data model and the pipeline. The rooms import one way, knowledge <- readers <- reasoning <-
words: a room imports only the rooms before it (knowledge reads no run; readers never reason; reasoning never
words), and no room imports the pipeline."""

from __future__ import annotations

import ast
from pathlib import Path

import scope.analyzers.diagnose as diagnose

from tests import source

PACKAGE = Path(diagnose.__file__).parent
ROOMS = ("knowledge", "readers", "reasoning", "words")


def _imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in source.nodes(path):  # lazy imports inside functions count too
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


# The rooms in import order: each may import the rooms before it, never one after it or the pipeline.
ORDER = ("knowledge", "readers", "reasoning", "words")


def test_every_room_imports_only_the_rooms_before_it() -> None:
    for i, room in enumerate(ORDER):
        later = tuple(f"scope.analyzers.diagnose.{name}" for name in (*ORDER[i + 1 :], "post_mortem"))
        for path in sorted((PACKAGE / room).glob("*.py")):
            bad = {m for m in _imported_modules(path) if m.startswith(later)}
            assert not bad, (
                f"{room}/{path.name} imports {sorted(bad)}: rooms import knowledge <- readers <- reasoning <- words"
            )


def test_the_guard_sees_an_import_against_the_order(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from scope.analyzers.diagnose.words.summaries import cap\n")
    assert "scope.analyzers.diagnose.words.summaries" in _imported_modules(bad)
