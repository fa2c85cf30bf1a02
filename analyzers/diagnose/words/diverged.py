"""A crash whose log shows the loss going NaN / inf before it: the divergence is said first
(knowledge/divergence.py), since lowering the learning rate is the fix and the native error only its symptom."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scope.analyzers.diagnose.knowledge import divergence

if TYPE_CHECKING:
    from collections.abc import Sequence

    from scope.analyzers.diagnose.model import FileScan
    from scope.analyzers.diagnose.reasoning.rootcause import Incident

    from scope.finding import Finding


def diverged_first(finding: Finding, incident: Incident, scans: Sequence[FileScan]) -> None:
    """Lead a crash's fix with the divergence its own file shows before the fault (the same file only)."""
    if finding.kind not in ("crash", "hardware_fault", "nccl_error"):
        return
    first = incident.first
    seen = next((s.diverged for s in scans if s.path == first.file and s.diverged), None)
    if seen is None or seen[0] > first.line:
        return
    line, text = seen
    lead = divergence.REMEDY.format(value=divergence.diverged_value(text), line=line, text=text[:120])
    if lead not in finding.suggestion:
        finding.suggestion = f"{lead} {finding.suggestion}"
    finding.metrics["diverged_at"] = line
