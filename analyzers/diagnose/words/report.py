"""The diagnosis as data (JSON), and as the same Analysis `scope analyze` returns; its terminal text is
rendered by scope/render/diagnosis.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scope import __version__
from scope.finding import Finding
from scope.warnings import InputWarning, texts

if TYPE_CHECKING:
    from scope.result import Analysis

FR_COLUMNS = ["pg", "pg_desc", "rank", "last_enqueued", "last_completed", "last_enqueued_op", "role"]
HOST_COLUMNS = ["host", "ranks", "n_ranks", "status", "anomalies", "first_anomaly", "codes"]


@dataclass
class DiagnoseReport:
    path: str
    findings: list[Finding] = field(default_factory=list)
    hosts: list[dict[str, Any]] = field(default_factory=list)
    fr: list[dict[str, Any]] = field(default_factory=list)
    nccl: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=dict)
    warnings: list[InputWarning] = field(default_factory=list)
    elapsed_s: float = 0.0

    @property
    def failed(self) -> bool:
        return any(f.severity == "critical" for f in self.findings)

    def to_json(self) -> dict[str, Any]:
        return {
            "scope_version": __version__,
            "path": self.path,
            "verdict": self.verdict(),
            "findings": [f.to_dict() for f in self.findings],
            "hosts": self.hosts,
            "fr": self.fr,
            "nccl": self.nccl,
            "inputs": self.inputs,
            "warnings": texts(self.warnings),
            "elapsed_s": round(self.elapsed_s, 3),
        }

    def verdict(self) -> str:
        if not self.findings:
            return "no failure found"
        return self.findings[0].summary

    def render_text(self, max_findings: int = 8) -> str:
        """The terminal text (scope/render/diagnosis.py)."""
        from scope.render.diagnosis import render_diagnosis

        return render_diagnosis(self, max_findings)

    @property
    def unreadable(self) -> list[str]:
        """Warnings about inputs that could not be read (the CLI exits EXIT_PARTIAL for them)."""
        return list(self.inputs.get("unreadable") or [])

    def to_analysis(self) -> Analysis:
        """The same kind of result `scope.analysis.run` returns: findings, the `fr` and `hosts` tables."""
        import pandas as pd

        from scope.result import Analysis

        fr = pd.DataFrame(self.fr, columns=FR_COLUMNS)
        for col in ("rank", "last_enqueued", "last_completed"):
            fr[col] = fr[col].astype("Int64")
        hosts = pd.DataFrame(self.hosts, columns=HOST_COLUMNS)
        return Analysis(
            run={"source": self.path},
            findings=list(self.findings),
            tables={"fr": fr, "hosts": hosts},
            warnings=list(self.warnings),
        )
