"""Post-mortem diagnosis of failed and hung runs: the root cause, its rank and host, and the evidence.

Reads a run directory or any folder of logs and dumps (see discover.py): c10d / gloo / torchrun /
Python lines (logs.py), NCCL (nccl.py), kernel and driver messages (kmsg.py, xid.py), stack dumps
(stacks.py) and Flight Recorder dumps (flight_recorder.py, fr_blame.py); orders the first anomalies
in time and collapses their cascade (rootcause.py, symptoms.py); writes findings (findings.py,
advice.py) and the `fr` and `hosts` tables (report.py).

    from scope.analyzers.diagnose import diagnose
    report = diagnose("RUN")          # DiagnoseReport: findings, hosts, fr, nccl
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from scope.analyzers.diagnose.post_mortem import diagnose
from scope.analyzers.diagnose.words.report import FR_COLUMNS, HOST_COLUMNS, DiagnoseReport

if TYPE_CHECKING:
    from scope.analysis import Context, Result


__all__ = ["FR_COLUMNS", "HOST_COLUMNS", "DiagnoseReport", "analyze", "diagnose"]


def analyze(ctx: Context) -> Result:
    """The analyzer contract: findings plus the `fr` and `hosts` tables (empty for a healthy run)."""
    from scope.analysis import Result
    from scope.errors import ScopeError

    try:
        # kept in the context: goodput links each failed attempt to this diagnosis
        report = ctx.memo(
            "diagnose_report", lambda: diagnose(ctx.path, workers=ctx.option("workers"), inventory=ctx.inputs)
        )
    except ScopeError:
        if Path(ctx.path).is_dir():
            raise
        report = DiagnoseReport(path=str(ctx.path))  # one trace file: nothing for a post-mortem to read
    analysis = report.to_analysis()
    return Result(findings=analysis.findings, tables=analysis.tables, warnings=list(analysis.warnings))
