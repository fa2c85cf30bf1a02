"""Run a callback right after a module is imported, without importing it ourselves.

sitecustomize runs before the job imports torch; importing torch there would slow every Python
process on the PYTHONPATH and could change the job's import order. Instead a meta-path finder
waits for `torch.optim.optimizer` and patches that module's loader to call us once it executed.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any


class _AfterImport(importlib.abc.MetaPathFinder):
    def __init__(self, target: str, callback: Callable[[ModuleType], None]) -> None:
        self.target = target
        self.callback = callback
        self._busy = False

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.target or self._busy:
            return None
        self._busy = True
        try:
            spec = _find_with_others(self, fullname, path, target)
        finally:
            self._busy = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        _wrap_exec(spec.loader, self)
        return spec

    def fire(self, module: ModuleType) -> None:
        _remove(self)
        # The callback logs its own errors; an import must never fail because of us.
        with contextlib.suppress(Exception):
            self.callback(module)


def _find_with_others(
    me: _AfterImport, fullname: str, path: Sequence[str] | None, target: ModuleType | None
) -> importlib.machinery.ModuleSpec | None:
    for finder in list(sys.meta_path):
        if finder is me or not hasattr(finder, "find_spec"):
            continue
        spec = finder.find_spec(fullname, path, target)
        if spec is not None:
            return spec
    return None


def _wrap_exec(loader: Any, watcher: _AfterImport) -> None:
    original = loader.exec_module

    def exec_module(module: ModuleType) -> None:
        original(module)
        watcher.fire(module)

    loader.exec_module = exec_module  # this loader instance serves this one module only


def _remove(watcher: _AfterImport) -> None:
    with contextlib.suppress(ValueError):
        sys.meta_path.remove(watcher)


def call_after_import(module_name: str, callback: Callable[[ModuleType], None]) -> None:
    """Call `callback(module)` once `module_name` is imported (now, if it already is)."""
    module = sys.modules.get(module_name)
    if module is not None:
        callback(module)
        return
    sys.meta_path.insert(0, _AfterImport(module_name, callback))
