"""Optional dependencies: an option that needs one checks for it up front and says how to install it.

Without this, a missing package surfaced late (or was swallowed) and the command "succeeded" on nothing:
`scope analyze --engine dask` without dask printed "nothing abnormal" over 0 ranks.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

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


def nvidia_gpu_present(proc_gpus: Path = Path("/proc/driver/nvidia/gpus"), dev: Path = Path("/dev/nvidia0")) -> bool:
    """Whether the NVIDIA driver sees a GPU here (without loading NVML)."""
    try:
        return dev.exists() or (proc_gpus.is_dir() and any(proc_gpus.iterdir()))
    except OSError:
        return False


def require_nvml_for_gpus(needed_for: str, how_to_skip: str) -> None:
    """On a machine with NVIDIA GPUs, GPU counters need nvidia-ml-py: say so up front, not after the run."""
    if nvidia_gpu_present() and not installed("pynvml"):
        raise ScopeError(
            f"{needed_for} on this GPU machine needs nvidia-ml-py, which is not installed: "
            f"{INSTALL['pynvml']} (or {how_to_skip})",
            EXIT_USAGE,
        )
