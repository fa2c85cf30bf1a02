"""NCCL WARN lines that the run went past: informational, not the failure.

NCCL and its network plugins print WARN for conditions they work around (a plugin's connection retries, a
socket option the host lacks, a CPU hint it cannot read). A WARN that no message class of the emitter table
explains (knowledge/emitters.py), and that is followed in the same log by NCCL reporting progress (a
connection made, a channel set up, Init COMPLETE, a benchmark row), did not stop the run: it is kept as an
informational line. A WARN followed by an error of its own, or by nothing, keeps its severity. A log that goes
past its WARNs and then stops (a stall, an init that never completes) did not recover: the stall is the finding,
and the WARNs before it are its clue (keep_as_clue, run after the stall check).
"""

from __future__ import annotations

from scope.analyzers.diagnose.knowledge import emitters
from scope.analyzers.diagnose.knowledge.line_shapes import NCCL_PROGRESS
from scope.analyzers.diagnose.knowledge.stages import line_marker
from scope.analyzers.diagnose.model import Anomaly
from scope.analyzers.diagnose.reasoning.excerpt import line_start

from scope.units import clip

CLUE_CHARS = 110  # characters of a WARN quoted as a stop's clue

# Lines read after the last WARN for progress: a run that goes past its warnings shows it soon after.
MAX_LINES_AFTER = 2_000
# Codes of the WARN readings that name no cause (readers/nccl.py's last resort).
GENERIC_WARN_CODES = ("nccl_warn",)
# WARNs quoted in a stall's message as its clue (the rest are in its details).
MAX_CLUES = 2


def downgrade_recovered(anomalies: list[Anomaly], text: str) -> None:
    """Generic WARNs followed, later in the log, by NCCL's progress and by no other failure: severity info."""
    generic = [a for a in anomalies if a.code in GENERIC_WARN_CODES and a.severity != "info" and a.line]
    if not generic:
        return
    others = [a.line for a in anomalies if a.code not in GENERIC_WARN_CODES and a.severity != "info"]
    last_warn = max(a.line for a in generic)
    if any(line >= last_warn for line in others):
        return  # an error after the warnings: they may be its first signs
    progress = _progress_after(text, last_warn)
    if progress is None:
        return
    for a in generic:
        a.severity = "info"
        a.details["recovered_by"] = progress
        plugin = emitters.net_plugin_of(a.message)
        if plugin is not None:
            a.details["emitter"] = plugin.source


def _progress_after(text: str, line: int) -> str | None:
    """The first line after `line` (1-based) where NCCL reports progress, or the job a step or its end."""
    start = line_start(text, line + 1)
    for ln in text[start:].split("\n", MAX_LINES_AFTER)[:MAX_LINES_AFTER]:
        if "NCCL INFO" in ln and NCCL_PROGRESS.search(ln):
            return ln.strip()[:200]
        marker = line_marker(ln) if "NCCL" not in ln else None
        if marker is not None and marker.stage in ("steps", "exit"):
            return ln.strip()[:200]
    return None


def keep_as_clue(anomalies: list[Anomaly], stalled: Anomaly) -> None:
    """The log stopped after the WARNs it went past: they were not recovered from, and are the stop's clue.
    They stay informational (the stop is the finding) and are named in it."""
    warns = [a for a in anomalies if "recovered_by" in a.details]
    if not warns:
        return
    for a in warns:
        del a.details["recovered_by"]
        a.details["before_stop"] = stalled.code
    quoted = "; ".join(f"line {a.line}: '{clip(a.message, CLUE_CHARS)}'" for a in warns[-MAX_CLUES:])
    stalled.message += f" NCCL warned before the stop ({quoted}): the run did not get past it"
    stalled.details["warns_before_stop"] = [a.line for a in warns]
