"""Post-mortem diagnosis of failed and hung runs: the root cause, its rank and host, and the evidence.

Reads a run directory or any folder of logs and dumps (readers/inputs.py): c10d / gloo / torchrun /
Python lines (readers/logs.py), NCCL (readers/nccl.py), kernel and driver messages (readers/kmsg.py,
knowledge/xid.py), stack dumps (readers/stacks.py) and Flight Recorder dumps (scope/flight_recorder.py,
reasoning/fr_analysis.py, fr_blame.py); orders the first anomalies in time and collapses their cascade
(reasoning/rootcause.py, symptoms.py); writes findings (words/findings.py, advice.py) and the `fr` and
`hosts` tables (words/report.py). post_mortem.py runs these steps; model.py is the data they pass.
The rooms: knowledge/ (what messages mean, as tables), readers/ (files into anomalies), reasoning/
(across lines, ranks and dumps), words/ (what the user reads).

    from scope.analyzers.diagnose import diagnose
    analysis = diagnose("RUN")        # scope.result.Analysis: findings, the fr and hosts tables, warnings,
                                      # sections (path, verdict, nccl, inputs, elapsed_s)
                                      # (`scope diagnose`: this analyzer alone, rendered by render/diagnosis.py)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scope.analyzers.diagnose.post_mortem import diagnose
from scope.analyzers.diagnose.words.report import FR_COLUMNS, HOST_COLUMNS, diagnosis_analysis, failed

if TYPE_CHECKING:
    from scope.analysis import Context, Result
    from scope.result import Analysis


__all__ = ["FR_COLUMNS", "HOST_COLUMNS", "analyze", "diagnose", "diagnosis_of", "failed"]


def analyze(ctx: Context) -> Result:
    """The analyzer contract: findings plus the `fr` and `hosts` tables (empty for a healthy run)."""
    from scope.analysis import Result
    from scope.errors import ScopeError

    try:
        analysis = diagnosis_of(ctx)
    except ScopeError:
        if ctx.inputs.layout != "file":
            raise
        analysis = diagnosis_analysis(ctx.inputs, [])  # one trace file: nothing to read
    return Result(findings=analysis.findings, tables=analysis.tables, warnings=list(analysis.warnings))


def diagnosis_of(ctx: Context) -> Analysis:
    """This analysis' diagnosis, made once and kept in the context: the diagnose analyzer's findings, the
    OOM lines memory reads, the failures goodput links each failed attempt to."""
    return ctx.memo(
        "diagnosis",
        lambda: diagnose(
            ctx.inputs,
            workers=ctx.option("workers"),
            engine=ctx.option("engine", "local"),  # on scope.engine, as ingest
            scheduler=ctx.option("scheduler"),
        ),
    )
