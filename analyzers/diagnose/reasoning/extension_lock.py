"""A log that stops at a JIT extension build: the ranks wait on the build directory's lock, forever.

torch.utils.cpp_extension.load (DeepSpeed's op builder, nvdiffrec, stylegan2's plugins ...) prints 'Using DIR as
PyTorch extensions root...' and takes a FileBaton, a 'lock' file in the extension's build directory; the other
processes poll that file until it is gone (torch/utils/file_baton.py: wait() sleeps while it exists, with no
timeout). A build killed part-way (Ctrl+C, the OOM killer, scancel) leaves the file behind, and every later run
waits on it with no error. The threads (each fixed by deleting the lock or the cache folder):
  NVlabs/nvdiffrec#39        'Lock file exists in build directory: ...\\lock' then the extensions-root line, stuck
  NVlabs/stylegan2-ada-pytorch#11  stuck at 'Setting up PyTorch plugin'; a killed build leaves a lock file under
                             $HOME/.cache/torch_extensions (maintainer nurpax)
  openvinotoolkit/nncf#533   an import that hangs: an interrupted extension build's lock (maintainer vshampor)
  PASSIONLab/OpenEquivariance#156  a stack dump in file_baton.py wait under cpp_extension.load
  pytorch/pytorch#189245     the stale FileBaton lock of a killed compile as a permanent deadlock
"""

from __future__ import annotations

import re

from scope.analyzers.diagnose.model import STALL, Anomaly

SOURCES = (
    "torch/utils/cpp_extension.py (_jit_compile), torch/utils/file_baton.py; NVlabs/nvdiffrec#39, "
    "NVlabs/stylegan2-ada-pytorch#11, openvinotoolkit/nncf#533, PASSIONLab/OpenEquivariance#156, "
    "pytorch/pytorch#189245"
)
# The lines of the build's start (cpp_extension.py prints the first, the second when the lock is already there) and
# a stack frame of the wait on it
_ROOT = re.compile(r"Using\s+(?P<dir>\S*)\s+as PyTorch extensions root")
_LOCK_SHOWN = re.compile(
    r"Lock file exists in build directory|file_baton\.py\S*,? line \d+,? in wait|baton\.wait\(\)", re.I
)
# What cpp_extension prints once the build or the load went on: past these lines the lock was not held
_WENT_ON = re.compile(
    r"Loading extension module|Time to load \w+ op|No modifications detected|Building extension module|"
    r"Emitting ninja build file|ninja: no work to do"
)
_PROGRESS = re.compile(r"(?i)\bstep\s*[:=]?\s*\d|\bepoch\s*\d|\bIter(?:ation)?\s*#?\d|\bloss\b")
REMEDY = (
    "Delete the stale lock: the 'lock' file in the extension's build directory under the extensions root the "
    "log names (default ~/.cache/torch_extensions/<python_cuda>/<extension>/lock, or $TORCH_EXTENSIONS_DIR), or "
    "the whole torch_extensions folder; the extension is rebuilt on the next run. A build killed part-way leaves "
    "the lock behind, and every process then waits on it with no error and no timeout. On a shared file system "
    "give each node its own TORCH_EXTENSIONS_DIR (or build the ops ahead, e.g. DS_BUILD_OPS=1) so that no "
    "job waits on another's build."
)


def _last_line(text: str) -> str:
    return next((line for line in reversed(text.splitlines()) if line.strip()), "")


def stopped_at_extension_build(text: str, display: str) -> Anomaly | None:
    """The finding for a log that ends at a JIT extension build's start or its wait on the lock, with nothing of
    the build or the load after it."""
    if "extensions root" not in text and "Lock file exists" not in text and "file_baton" not in text:
        return None  # most logs: no extension build at all
    roots = list(_ROOT.finditer(text))
    locks = list(_LOCK_SHOWN.finditer(text))
    marks = roots + locks
    if not marks:
        return None
    last = max(marks, key=lambda m: m.start())
    if _WENT_ON.search(text, last.end()):
        return None
    # the log ends there: the marker's line is the last one, or only a stack's frames follow the wait
    tail = text[text.find("\n", last.end()) + 1 :] if "\n" in text[last.end() :] else ""
    if last in roots and tail.strip():
        return None
    if _PROGRESS.search(tail):
        return None  # the run went on past the wait (a step, an epoch): the lock was released
    line = text.count("\n", 0, last.start()) + 1
    lock_shown = bool(locks)
    root = roots[-1].group("dir") if roots else ""
    where = f" ('{root}')" if root else ""
    return Anomaly(
        code="stopped_at_extension_lock",
        kind="config_error" if lock_shown else "hang",
        level=STALL,
        message=(
            f"The log stops where a JIT C++/CUDA extension is built{where}, with nothing of the build or the load "
            "after it: the processes wait on the build directory's lock, and a lock left by a build killed "
            "part-way is never released (no error, no timeout)"
            + (" - the log shows the lock file or the wait on it" if lock_shown else "")
        ),
        file=display,
        line=line,
        severity="critical",
        details={
            "confidence": "medium" if lock_shown else "low",
            "phase": "launch",
            "remedy": REMEDY,
            "reference": SOURCES,
            "line_text": _last_line(text)[:300],
        },
    )
