"""Goodput: every second of a job's life in one bucket, across failures and restarts.

    from scope.analyzers.goodput import goodput
    report = goodput("RUN_OR_LOGS")       # GoodputReport: buckets, attempts, checkpoints, cadence

From scope's own records in a run directory (the hook's checkpoint and attempt records, heartbeats:
records.py) or, for jobs not run under scope, from the logs they already write (formats/: one row
per framework line format). The analyzer contract adds the `goodput`, `goodput_summary`, `attempts`,
`checkpoints` and `goodput_timeline` tables and the findings of findings.py to `scope analyze`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from scope.causality import assign_ids
from scope.finding import FAILURE_KINDS, Finding

if TYPE_CHECKING:
    from scope.analyzers.goodput.report import GoodputReport

    from scope.analysis import Context, Result
    from scope.inputs import Inventory

# Trace files, archives and binaries are never logs.
NOT_LOGS = (".json", ".gz", ".pt", ".pkl", ".parquet", ".npy", ".zip", ".tar")


def goodput(source: Path | str | Inventory, mtbf_s: float | None = None) -> GoodputReport:
    """The job's goodput from a run directory's records, else from the logs under PATH (the files its
    inventory lists, scope.inputs)."""
    from scope.analyzers.goodput.findings import goodput_findings
    from scope.analyzers.goodput.records import has_records, records_report
    from scope.analyzers.goodput.report import build_report
    from scope.analyzers.goodput.sources import merge, read_logs
    from scope.analyzers.goodput.timeline import account

    from scope.inputs import inventory_of

    inputs = inventory_of(source)
    path = inputs.path
    if has_records(inputs):
        report = records_report(inputs, mtbf_s)
    elif inputs.layout == "file" and path.name.endswith(NOT_LOGS):
        report = build_report(str(path), "none", [], account([]), mtbf_s=mtbf_s)
    else:
        logs, warnings = read_logs(inputs)
        stream = merge(logs)
        acc = account(stream.marks, stream.wall)
        warnings += stream.warnings + acc.warnings
        report = build_report(str(path), stream.clock, stream.primary, acc, mtbf_s=mtbf_s, warnings=warnings)
    report.findings = goodput_findings(report)
    return report


def found_anything(report: GoodputReport) -> bool:
    """Steps, a checkpoint, a relaunch, or a training the log shows started with no step line to show what it did
    (steps_unseen: accounted with a bound): a log with neither launches nor steps is refused."""
    acc = report.acc
    return bool(acc.steps_completed is not None or report.checkpoints or len(acc.attempts) > 1 or report.steps_unseen)


def link_diagnosis(report: GoodputReport, failures: list[Finding]) -> None:
    """Each failed attempt names the failure finding that explains it: the root failure whose evidence
    points into the attempt's lines, else one that names a rank that failed on its own in the attempt
    (scope's records), else (one failure for the whole job) the top root."""
    from scope.analyzers.goodput.states import FAILED_ENDS

    roots = [f for f in failures if f.kind in FAILURE_KINDS and not f.caused_by]
    if not roots:
        return
    failed = [a for a in report.acc.attempts if a.ended in FAILED_ENDS]
    for a in failed:
        files = {m.file for m in a.marks}
        lo, hi = (min(m.line for m in a.marks), max(m.line for m in a.marks)) if a.marks else (0, 0)
        match = next(
            (f for f in roots if any(_points_into(e, files, lo, hi + 50) for e in f.evidence)),
            None,
        )
        if match is None and a.failed_ranks:
            match = next((f for f in roots if set(f.ranks) & set(a.failed_ranks)), None)
        chosen = match or (roots[0] if a is failed[-1] or len(roots) == 1 else None)
        if chosen is not None:
            a.diagnosis = f"{chosen.id or chosen.kind}: {chosen.summary}"
            a.diagnosis_id = chosen.id or chosen.kind


def _points_into(evidence: str, files: set[str], lo: int, hi: int) -> bool:
    for f in files:
        name = Path(f).name
        idx = evidence.find(f"{name}:")
        if idx < 0:
            continue
        digits = ""
        for ch in evidence[idx + len(name) + 1 :]:
            if not ch.isdigit():
                break
            digits += ch
        if digits and lo <= int(digits) <= hi:
            return True
    return False


def analyze(ctx: Context) -> Result:
    from scope.analysis import Result

    mtbf_h = ctx.option("mtbf_hours")
    report = goodput(ctx.inputs, mtbf_s=_hours_s(mtbf_h))
    if not found_anything(report):
        return Result()
    link_diagnosis(report, _diagnosed_failures(ctx, report))
    tables = report.tables()
    tables["goodput_summary"] = summary_table(report)
    from scope.goodput_result import SECTION

    # the same typed result `scope goodput` shows: `scope analyze` prints its summary line from it
    return Result(
        findings=report.findings, tables=tables, warnings=report.warnings, sections={SECTION: report.result()}
    )


def _hours_s(hours: Any) -> float | None:
    """The configured MTBF in seconds; a value that is not a positive finite number of hours is ignored."""
    import math

    try:
        value = float(hours) * 3600 if hours not in (None, "") else None
    except (TypeError, ValueError):
        return None
    return value if value is not None and math.isfinite(value) and value > 0 else None


def _diagnosed_failures(ctx: Context, report: GoodputReport) -> list[Finding]:
    """The diagnose analyzer's findings (it ran first in this analysis and left its Analysis in the context),
    when an attempt failed: each failed attempt row then names the finding that explains it."""
    from scope.analyzers.goodput.states import FAILED_ENDS

    from scope.errors import ScopeError

    if not any(a.ended in FAILED_ENDS for a in report.acc.attempts):
        return []
    from scope.analyzers.diagnose import diagnosis_of

    try:
        diag = diagnosis_of(ctx)
    except ScopeError:
        return []
    failures = list(diag.findings)
    assign_ids(failures)  # the ids they get in this analysis: the diagnose analyzer's findings come first
    return failures


def summary_table(report: GoodputReport) -> Any:
    import pandas as pd

    d = report.to_dict()
    cad = d["cadence"]
    row = {
        k: d[k]
        for k in (
            "clock",
            "wall_s",
            "goodput_pct",
            "goodput_pct_at_most",
            "productive_at_most_s",
            "steps_completed",
            "steps_completed_is_lower_bound",
            # (beside optimizer steps, litgpt's iterations: the unit ideal_step_s and slow_steps time)
            "iterations_completed",
            "steps_redone",
            "steps_redone_is_lower_bound",
            "restarts",
            "failures",
            "membership_changes",
            "ideal_step_s",
            "slow_steps",
        )
    }
    row.update(
        {
            f"cadence_{k}": cad[k]
            for k in (
                "checkpoint_cost_s",
                "mtbf_s",
                "interval_used_s",
                "young_s",
                "daly_s",
                "hours_per_week_saved",
                "note",
            )
        }
    )
    row["cannot"] = "; ".join(report.cannot)
    table = pd.DataFrame([row])
    table["iterations_completed"] = table["iterations_completed"].astype("Int64")  # (None: no such counter)
    return table
