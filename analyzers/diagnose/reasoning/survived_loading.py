"""A library the loader did not find, on a line the process survived: an optional piece the program did without.

torchvision's and torchaudio's imports warn that an extension did not load ('UserWarning: Failed to load image Python
extension: ...: cannot open shared object file ... you can ignore this warning') and go on; cuDNN probes a library
and falls back. Those lines are no failure of their own: a note where the program said it was a warning (Python's
'UserWarning:') or where the same process went on past them (a training step, NCCL's communicator ready, the
rendezvous done, on a later line of the same rank: its '[rankN]:' tag, srun --label's 'N: ', NCCL's host:pid; any
later line where the loader's line names no process), else a clue (severity warning) that a real failure outranks.
Only a line the process died at stays a root cause, whatever the other ranks did after it: ld.so refusing to start a
program ('error while loading shared libraries'), Python's exception line ending a traceback (ImportError / OSError),
NVSHMEM's loader's ERROR line above the dlerror it prints.

UCX's warning that a CUDA transport named in UCX_TLS is not available (knowledge/runtime_loading.py's
ucx_without_cuda) is the same: UCX goes on with the other transports, so it is a note where the process went on and a
clue unless a registration failure (NIXL's, UCX's) or a crash follows it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from scope.analyzers.diagnose.readers.lines import line_at
from scope.analyzers.diagnose.readers.signature_scan import process_of
from scope.analyzers.diagnose.reasoning import stages

if TYPE_CHECKING:
    from scope.analyzers.diagnose.model import Anomaly

Process = tuple[str, str] | None  # (kind, name): a rank tag, srun's task, NCCL's (host, pid)
LOADING_PREFIX = "shared_library_missing"  # knowledge/runtime_loading.py's rows: the families' and the generic one
UCX_CODE = "ucx_without_cuda"
# the tags a launcher puts before each line of a process (torchrun --tee's '[rank3]:' / '[default3]:', srun --label's
# '3: '); a console's own prefix before them is skipped without backtracking ('[' is not in the skipped class)
BRACKETS = r"^[^\w\[\n]*(?:\[[^\]\n]*\]:?\s*)*"
_RANK_TAG = re.compile(r"^[^\w\[\n]*\[(?:rank|default)\s*(\d+)\]|^\s*(\d+): ")
# ld.so at a program's start (elf/rtld.c), or Python's exception line (after '[rankN]:' tags, a module path)
_DIED_AT = re.compile(
    r"error while loading shared libraries: |" + BRACKETS + r"(?:\w+\.)*(?:ImportError|OSError|ModuleNotFoundError): "
)
# NVSHMEM's module loader (src/host/bootstrap/bootstrap_loader.cpp) prints its ERROR, then dlerror() on its own line
_LOADER_ERROR_ABOVE = re.compile(r"NVSHMEM ERROR\b[^\n]*\bunable to load\b", re.IGNORECASE)
# a warning Python's warnings module printed ('file.py:N: UserWarning: ...'), or the library's own words saying so
_PRINTED_WARNING = re.compile(r"\bUserWarning: |\byou can ignore this warning\b", re.IGNORECASE)
# UCX's warning for a UCX_TLS entry it has no module for (src/ucp/core/ucp_context.c): it goes on without it
_UCX_TRANSPORT_WARN = re.compile(r"UCX\s+WARN\s+transport '\w+' is not available")
# the failures that make UCX's missing CUDA transport the cause: a registration of GPU memory refused, a crash
_UCX_FOLLOWS = ("nixl_", "ucx_")
# lines besides a training step that show a process went on: NCCL's communicator ready, the rendezvous done
_READY = re.compile(r"\bInit COMPLETE\b|Rendezvous complete")
# a cheap test before stages' step-line markers: the words and shapes they look for
_MAYBE_PROGRESS = re.compile(r"(?i)step|iter|epoch|'loss'|\d \[\d|Init COMPLETE|Rendezvous complete")


def drop_survived_loading(anomalies: list[Anomaly], text: str) -> None:
    """The loading rows' matches on a line the process survived: a note where it went on, else a clue."""
    found = [a for a in anomalies if (a.code.startswith(LOADING_PREFIX) or a.code == UCX_CODE) and a.severity != "info"]
    if not found:
        return
    lines = text.split("\n")
    progress = progress_lines(lines, min(a.line for a in found))
    for a in found:
        said = line_at(lines, a.line)
        if a.code == UCX_CODE:
            if _UCX_TRANSPORT_WARN.search(said):
                _ucx_transport_warning(a, anomalies, progress, said)
            continue
        if died_at(lines, a.line):
            continue  # the process died at it: the root cause, whatever another rank did after it
        if _PRINTED_WARNING.search(said):
            _survived(a, "the program printed it as a warning and went on")
        elif _went_on(a.line, process(said), progress):
            _survived(a, "the run went on past it")
        else:
            a.severity = "warning"  # an optional library's warning: the failure that ended the run outranks it


def died_at(lines: list[str], line: int) -> bool:
    """The loader's line is one its process died at: ld.so refusing to start a program, Python's exception line
    ending a traceback, NVSHMEM's loader's ERROR above its dlerror."""
    said = line_at(lines, line)
    above = lines[line - 2] if 1 < line <= len(lines) + 1 else ""
    return bool(_DIED_AT.search(said) or _LOADER_ERROR_ABOVE.search(above))


def _ucx_transport_warning(
    a: Anomaly, anomalies: list[Anomaly], progress: list[tuple[int, Process]], said: str
) -> None:
    """UCX's missing-transport warning: a note where its process went on, a clue unless a registration failure or
    a crash follows it."""
    if _went_on(a.line, process(said), progress):
        _survived(a, "the run went on past it")
        return
    follows = any(
        o.line > a.line and o.severity == "critical" and (o.kind == "crash" or o.code.startswith(_UCX_FOLLOWS))
        for o in anomalies
        if o is not a
    )
    if not follows:
        a.severity = "warning"


def _survived(a: Anomaly, why: str) -> None:
    a.severity, a.details["signature"] = "info", None
    a.details["survived"] = a.details["recovered_by"] = why


def process(line: str) -> Process:
    """The process a line is of: its rank tag, srun's task label, NCCL's host:pid; None where it names none."""
    tag = _RANK_TAG.search(line)
    if tag:
        return ("rank", tag.group(1) or tag.group(2))
    return process_of(line)


def progress_lines(lines: list[str], first: int) -> list[tuple[int, Process]]:
    """(1-based line, process) of each line after `first` that shows a process went on: a training step (the step
    line stages reads), NCCL's communicator ready, the rendezvous done."""
    out: list[tuple[int, Process]] = []
    for idx in range(first, len(lines)):
        line = lines[idx]
        if not _MAYBE_PROGRESS.search(line):
            continue
        marker = _READY.search(line) is None and stages.message_marker(line)
        if marker is False or (marker is not None and marker.stage == "steps" and not marker.ends):
            out.append((idx + 1, process(line)))
    return out


def _went_on(line: int, proc: Process, progress: list[tuple[int, Process]]) -> bool:
    """A progress line after `line` of the same process (any process where the line names none)."""
    return went_on_at(line, proc, progress) > 0


def went_on_at(line: int, proc: Process, progress: list[tuple[int, Process]]) -> int:
    """The first progress line (0: none) after `line` of the same process (any process where the line names none)."""
    return next((at for at, other in progress if at > line and (proc is None or other == proc)), 0)
