"""The project's own source, read as syntax trees once per test process: the static checks (import cycles,
swallowed ImportErrors, one way in, the rooms' imports, the finding kinds) each walked every module of the
tree again, about a second of parsing and several of walking for each check."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path


@cache
def tree(path: Path) -> ast.Module:
    """PATH parsed (the same tree object for every check: none may change it)."""
    return ast.parse(path.read_text(), str(path))


@cache
def nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of PATH's tree, in `ast.walk` order."""
    return tuple(ast.walk(tree(path)))
