"""What the diagnosis found, as the one result every command shows: the typed Analysis (scope.result) that
`scope analyze` returns, with the `fr` and `hosts` tables and the diagnosis' own sections (path, verdict,
NCCL set-up, input counts, elapsed_s: the keys `scope diagnose --json` has always had beside the
Analysis' own); scope/render/diagnosis.py renders it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from scope.finding import Finding
from scope.warnings import InputWarning

if TYPE_CHECKING:
    from scope.inputs import Inventory
    from scope.result import Analysis

FR_COLUMNS = ["pg", "pg_desc", "rank", "last_enqueued", "last_completed", "last_enqueued_op", "role"]
HOST_COLUMNS = ["host", "ranks", "n_ranks", "status", "anomalies", "first_anomaly", "codes"]
NO_FAILURE = "no failure found"


def diagnosis_analysis(
    inputs: Inventory,
    findings: list[Finding],
    warnings: Iterable[InputWarning] = (),
    fr: Iterable[dict[str, Any]] = (),
    hosts: Iterable[dict[str, Any]] = (),
    nccl: dict[str, Any] | None = None,
    read: dict[str, Any] | None = None,
    elapsed_s: float = 0.0,
    stopped: dict[str, Any] | None = None,
) -> Analysis:
    """The Analysis `scope.analysis.run` makes of the same input, less the other analyzers: the findings
    (root cause first) linked (ids) and ordered as it orders them, the `fr` and `hosts` tables, the
    warnings (those of inputs not read are partial), and the diagnosis' sections, `read` being its
    counts of the inputs ("inputs" in the JSON)."""
    import pandas as pd

    from scope.causality import link_findings
    from scope.result import Analysis

    fr_table = pd.DataFrame(list(fr), columns=FR_COLUMNS)
    for col in ("rank", "last_enqueued", "last_completed"):
        fr_table[col] = fr_table[col].astype("Int64")
    tables = {"fr": fr_table, "hosts": pd.DataFrame(list(hosts), columns=HOST_COLUMNS)}
    root = findings[0] if findings else None  # the verdict: the root cause, whatever linking does to the order
    analysis = Analysis.build(inputs, None, link_findings(list(findings)), tables, list(warnings))
    analysis.sections = {
        "path": str(inputs.path),
        "verdict": root.summary if root else NO_FAILURE,
        "nccl": nccl or {},
        "inputs": read or {},
        "elapsed_s": round(elapsed_s, 3),
        # where the logs stopped (reasoning/stages.py): every diagnosis says it, a clean end or not
        "stopped": stopped or {},
    }
    return analysis


def failed(analysis: Analysis) -> bool:
    """The run failed: a critical finding (a crash, a hang, a fatal error) among the diagnosis'."""
    return any(f.severity == "critical" for f in analysis.findings)
