"""The Finding model every analyzer returns (see ARCHITECTURE.md, "The contracts": Finding).

The kinds an analyzer emits are declared in its record (scope.analyzer_spec); `scope.analyzers.finding_kinds()`
lists them all.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

SEVERITIES = ("critical", "warning", "info")

# Kinds that say why a run failed or hung (the post-mortem), as opposed to why it was slow.
FAILURE_KINDS = frozenset(
    {
        "hang",
        "collective_mismatch",
        "missing_rank",
        "crash",
        "oom",
        "nccl_error",
        "timeout",
        "hardware_fault",
        "network_fault",
        "config_error",
        "input_problem",
    }
)


@dataclass
class Finding:
    kind: str
    severity: str
    summary: str
    ranks: list[int] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    suggestion: str = ""
    # Causal links (ARCHITECTURE.md, "The contracts": Finding links): a stable id within one analysis, the id of the
    # finding that explains this one, and the ids this one explains. Empty until links are made.
    id: str = ""
    caused_by: str = ""
    explains: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}, got {self.severity!r}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Finding:
        """Tolerant of older files: unknown keys are ignored, missing ones take defaults."""
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)

    def sort_key(self) -> tuple[int, float]:
        """Most severe first, then the largest time lost (metrics['time_lost_us'] when given)."""
        lost = float(self.metrics.get("time_lost_us", 0.0) or 0.0)
        return (SEVERITIES.index(self.severity), -lost)
