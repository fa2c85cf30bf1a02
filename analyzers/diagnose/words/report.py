"""What the diagnosis found, on its way to the one result every command shows: `to_analysis` makes it the
same typed Analysis (scope.result) that `scope analyze` returns, with the `fr` and `hosts` tables and the
diagnosis' own sections (NCCL set-up, input counts); scope/render/diagnosis.py renders that Analysis."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scope.finding import Finding
from scope.warnings import InputWarning

if TYPE_CHECKING:
    from scope.inputs import Inventory
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

    def verdict(self) -> str:
        if not self.findings:
            return "no failure found"
        return self.findings[0].summary

    def sections(self) -> dict[str, Any]:
        """The diagnosis' JSON beyond the Analysis' own keys (`scope diagnose --json` has always had them)."""
        return {
            "path": self.path,
            "verdict": self.verdict(),
            "nccl": self.nccl,
            "inputs": self.inputs,
            "elapsed_s": round(self.elapsed_s, 3),
        }

    def to_analysis(self, inputs: Inventory | None = None) -> Analysis:
        """The Analysis `scope.analysis.run` makes of the same input, less the other analyzers: the findings
        linked (ids) and ordered as it orders them, the `fr` and `hosts` tables, the warnings (those of
        inputs not read are partial), and the diagnosis' sections."""
        import pandas as pd

        from scope.causality import link_findings
        from scope.result import Analysis

        fr = pd.DataFrame(self.fr, columns=FR_COLUMNS)
        for col in ("rank", "last_enqueued", "last_completed"):
            fr[col] = fr[col].astype("Int64")
        hosts = pd.DataFrame(self.hosts, columns=HOST_COLUMNS)
        findings = link_findings(list(self.findings))
        tables = {"fr": fr, "hosts": hosts}
        analysis = Analysis.build(Path(self.path), None, findings, tables, list(self.warnings), inputs=inputs)
        analysis.sections = self.sections()
        return analysis
