"""A framework's refusal of its settings (knowledge/framework_config.py, the generic row) counts only where it
ended the run: the last exception of a chained traceback, raised rather than logged, and not one the run went
past. A dispatcher's 'not supported' that was caught (xformers' operator choice, a fused kernel's fallback) is
no failure of its own."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from scope.analyzers.diagnose.knowledge.remote_launch import LAUNCH_WENT_PAST_CODES
from scope.analyzers.diagnose.reasoning import stages

if TYPE_CHECKING:
    from scope.analyzers.diagnose.model import Anomaly

GENERIC_CODE = "framework_setting_refused"
# Python's words between the exceptions of a chain: the one above was handled (or re-raised as another)
_CHAINED = re.compile(r"During handling of the above exception|The above exception was the direct cause")
# A log record's level before the exception's name: a warning or note the program printed and went on
_LOGGED = re.compile(r"\b(?:WARNING|WARN|INFO|DEBUG)\b|\[[WI]\d{4}|^[WI]\d{4} ")
CHAIN_LOOKAHEAD = 4  # lines after the exception line where Python prints the chain's words
# Rows whose line a run prints and goes on from: a shell's 'command not found' for an optional tool (nvidia-smi,
# lsb_release, git in a setup script) is the failure only where nothing ran after it.
# Its matches count only where the run did not go on; they are notes where it trained or ended cleanly after them,
# and clues beside an error that shows the program itself ran (it ran out of memory, crashed, its collectives
# failed): an error of the launch (ssh refused, a rank never joined) may be the missing program's consequence.
# A launch's own failures (knowledge/remote_launch.py: ssh, pdsh, the Kubernetes API, a Go client's dial) are the
# same: 'the job never started' holds only where nothing ran after them; their row's own sign that it went on (an
# answered host-key question, the API answering: details went_on_past_it) is a note too.
WENT_PAST_CODES = ("launch_program_missing", "dmabuf_registration_unsupported", *LAUNCH_WENT_PAST_CODES)
RAN_KINDS = ("oom", "crash", "hardware_fault", "nccl_error", "collective_mismatch", "input_problem")


def drop_survived(anomalies: list[Anomaly], text: str) -> None:
    """Mark the generic row's matches that did not end the run as notes (severity info)."""
    refused = [a for a in anomalies if a.code == GENERIC_CODE and a.severity != "info"]
    if not refused:
        return
    lines = text.split("\n")
    last_step = stages.last_step(text)
    for a in refused:
        why = _survived(lines, a.line, last_step)
        if why:
            a.severity, a.details["signature"] = "info", None
            a.details["survived"] = why


def drop_went_past(anomalies: list[Anomaly], text: str) -> None:
    """WENT_PAST_CODES' matches the run went past: a note (severity info) where their row's own sign of going on
    followed (went_on_past_it) or the run trained or ended cleanly after them, a clue (severity warning, ranked
    below it) beside an error of the program itself."""
    found = [a for a in anomalies if a.code in WENT_PAST_CODES and a.severity != "info"]
    if not found:
        return
    last_step = stages.last_step(text)
    stop = stages.where_it_stopped(text)
    for a in found:
        if a.details.get("went_on_past_it"):
            a.severity, a.details["signature"] = "info", None
            a.details["survived"] = a.details["recovered_by"] = "the run went on past it"
        elif last_step is not None and last_step[0] > a.line:
            a.severity, a.details["signature"] = "info", None
            a.details["survived"] = f"the run went on training (line {last_step[0]})"
        elif stop is not None and stop.clean and stop.line > a.line:
            a.severity, a.details["signature"] = "info", None
            a.details["survived"] = f"the run ended cleanly (line {stop.line})"
        elif any(o.kind in RAN_KINDS and o.severity == "critical" and o.code not in WENT_PAST_CODES for o in anomalies):
            a.severity = "warning"  # the program ran and failed on its own: that error ended the run


def _survived(lines: list[str], line: int, last_step: tuple[int, str] | None) -> str:
    said = lines[line - 1] if 0 < line <= len(lines) else ""
    head = said.split("Error", 1)[0]
    if _LOGGED.search(head):
        return "logged at warning or info level"
    after = [t for t in lines[line : line + CHAIN_LOOKAHEAD] if t.strip()]
    if any(_CHAINED.search(t) for t in after):
        return "handled: a later exception of the chain ended the run"
    if last_step is not None and last_step[0] > line:
        return f"the run went on training (line {last_step[0]})"
    return ""
