"""Post-mortem diagnosis of failed and hung runs: the root cause, its rank and host, and the evidence.

Reads a run directory or any folder of logs and dumps (readers/inputs.py): c10d / gloo / torchrun /
Python lines (readers/logs.py), NCCL (readers/nccl.py), kernel and driver messages (readers/kmsg.py,
knowledge/xid.py), stack dumps (readers/stacks.py) and Flight Recorder dumps (scope/flight_recorder.py,
reasoning/fr_analysis.py, fr_blame.py); orders the first anomalies in time and collapses their cascade
(reasoning/rootcause.py, symptoms.py); writes findings (words/findings.py, advice.py) and the `fr` and
`hosts` tables (words/report.py). post_mortem.py runs these steps; model.py is the data they pass.
The rooms: knowledge/ (what messages mean, as tables), readers/ (files into anomalies), reasoning/
(across lines, ranks and dumps), words/ (what the user reads).

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
            "diagnose_report",
            lambda: diagnose(
                ctx.path,
                workers=ctx.option("workers"),
                inventory=ctx.inputs,
                engine=ctx.option("engine", "local"),  # on scope.engine, as ingest
                scheduler=ctx.option("scheduler"),
            ),
        )
        analysis = report.to_analysis(ctx.inputs)
    except ScopeError:
        if Path(ctx.path).is_dir():
            raise
        analysis = DiagnoseReport(path=str(ctx.path)).to_analysis(ctx.inputs)  # one trace file: nothing to read
    return Result(findings=analysis.findings, tables=analysis.tables, warnings=list(analysis.warnings))
