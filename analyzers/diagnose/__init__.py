"""Post-mortem diagnosis of failed and hung runs: the root cause, its rank and host, and the evidence.

Reads a run directory or any folder of logs and dumps (see discover.py): c10d / gloo / torchrun /
Python lines (logs.py), NCCL (nccl.py), kernel and driver messages (kmsg.py, xid.py), stack dumps
(stacks.py) and Flight Recorder dumps (flight_recorder.py, fr_blame.py); orders the first anomalies
in time and collapses their cascade (rootcause.py, symptoms.py); writes findings (findings.py,
advice.py) and the `fr` and `hosts` tables (report.py).

    from scope.analyzers.diagnose import diagnosis
    analysis = diagnosis("RUN")       # scope.result.Analysis: findings, the fr and hosts tables, warnings
                                      # (`scope diagnose`: this analyzer alone, rendered by render/diagnosis.py)
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from scope.analyzers.diagnose.post_mortem import diagnose
from scope.analyzers.diagnose.words.report import FR_COLUMNS, HOST_COLUMNS, DiagnoseReport

if TYPE_CHECKING:
    from scope.analysis import Context, Result
    from scope.inputs import Inventory
    from scope.result import Analysis


__all__ = ["FR_COLUMNS", "HOST_COLUMNS", "DiagnoseReport", "analyze", "diagnose", "diagnosis"]


def diagnosis(path: Path | str, workers: int | None = None, inputs: Inventory | None = None) -> Analysis:
    """The diagnose analyzer alone (`scope diagnose`): the same findings, tables and warnings it gives
    `scope analyze`, as the same Analysis, plus its own sections. An input it cannot diagnose raises."""
    return diagnose(path, workers=workers, inventory=inputs).to_analysis(inputs)


def analyze(ctx: Context) -> Result:
    """The analyzer contract: findings plus the `fr` and `hosts` tables (empty for a healthy run)."""
    from scope.analysis import Result
    from scope.errors import ScopeError

    try:
        # kept in the context: goodput links each failed attempt to this diagnosis
        report = ctx.memo(
            "diagnose_report", lambda: diagnose(ctx.path, workers=ctx.option("workers"), inventory=ctx.inputs)
        )
        analysis = report.to_analysis(ctx.inputs)
    except ScopeError:
        if Path(ctx.path).is_dir():
            raise
        analysis = DiagnoseReport(path=str(ctx.path)).to_analysis(ctx.inputs)  # one trace file: nothing to read
    return Result(findings=analysis.findings, tables=analysis.tables, warnings=list(analysis.warnings))
