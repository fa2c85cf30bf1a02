"""A library the loader did not find, on a line the process survived: an optional piece the program did without.

torchvision's and torchaudio's imports warn that an extension did not load ('UserWarning: Failed to load image Python
extension: ...: cannot open shared object file ... you can ignore this warning') and go on; cuDNN probes a library
and falls back. Those lines are no failure of their own: a note where the run went on past them (the row's
went_on_re, or a training step later in the log), else a clue (severity warning) that a real failure outranks. Only a
line the process died at stays a root cause: ld.so refusing to start a program ('error while loading shared
libraries'), Python's exception line ending a traceback (ImportError / OSError), NVSHMEM's loader's ERROR line above
the dlerror it prints.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from scope.analyzers.diagnose.reasoning import stages

if TYPE_CHECKING:
    from scope.analyzers.diagnose.model import Anomaly

LOADING_PREFIX = "shared_library_missing"  # knowledge/runtime_loading.py's rows: the families' and the generic one
# ld.so at a program's start (elf/rtld.c), or Python's exception line (after '[rankN]:' tags, a module path)
_DIED_AT = re.compile(
    r"error while loading shared libraries: |"
    r"^\W*(?:\[[^\]\n]*\]:?\s*)*(?:\w+\.)*(?:ImportError|OSError|ModuleNotFoundError): "
)
# NVSHMEM's module loader (src/host/bootstrap/bootstrap_loader.cpp) prints its ERROR, then dlerror() on its own line
_LOADER_ERROR_ABOVE = re.compile(r"NVSHMEM ERROR\b[^\n]*\bunable to load\b", re.IGNORECASE)


def drop_survived_loading(anomalies: list[Anomaly], text: str) -> None:
    """The loading rows' matches on a line the process survived: a note where it went on, else a clue."""
    found = [a for a in anomalies if a.code.startswith(LOADING_PREFIX) and a.severity != "info"]
    if not found:
        return
    lines = text.split("\n")
    last_step = stages.last_step(text)
    for a in found:
        said = lines[a.line - 1] if 0 < a.line <= len(lines) else ""
        above = lines[a.line - 2] if 1 < a.line <= len(lines) + 1 else ""
        died = bool(_DIED_AT.search(said) or _LOADER_ERROR_ABOVE.search(above))
        if a.details.get("went_on_past_it") or (not died and last_step is not None and last_step[0] > a.line):
            a.severity, a.details["signature"] = "info", None
            a.details["survived"] = a.details["recovered_by"] = "the run went on past it"
        elif not died:
            a.severity = "warning"  # an optional library's warning: the failure that ended the run outranks it
