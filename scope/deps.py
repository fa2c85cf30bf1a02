"""Optional dependencies: an option that needs one checks for it up front and says how to install it.

Without this, a missing package surfaced late (or was swallowed) and the command "succeeded" on nothing:
`scope analyze --engine dask` without dask printed "nothing abnormal" over 0 ranks.
"""

from __future__ import annotations

import importlib.util

from scope.errors import EXIT_USAGE, ScopeError

# module -> the install command for the extra (or package) that provides it
INSTALL = {
    "dask": "pip install 'scope-profiler[dask]'",
    "distributed": "pip install 'scope-profiler[dask]'",
    "pynvml": "pip install 'scope-profiler[nvml]'",
    "playwright": "pip install playwright && playwright install chromium",
}


def installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing or broken
        return False


def require(modules: tuple[str, ...], needed_for: str) -> None:
    """Raise a usage error (exit 2) naming what is missing and the install command."""
    missing = [m for m in modules if not installed(m)]
    if missing:
        how = INSTALL.get(missing[0], f"pip install {missing[0]}")
        raise ScopeError(f"{needed_for} needs {', '.join(missing)}, which is not installed: {how}", EXIT_USAGE)
