"""Assemble the analysis result (the JSON contract) and render it as text.

JSON: {"scope_version", "run", "ranks", "steps", "findings", "warnings", ...one key per analyzer table}.
Later issues add keys; none is ever removed or renamed.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

import pandas as pd
from rich.console import Console
from rich.table import Table

from scope import __version__
from scope.causality import describe_counts, group_by_root
from scope.finding import Finding

SEVERITY_STYLE = {"critical": "bold red", "warning": "yellow", "info": "cyan"}


def clean(value: Any) -> Any:
    """JSON-safe: NaN/inf -> None, numpy scalars -> Python, recursively."""
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        with contextlib.suppress(ValueError, AttributeError):
            value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is pd.NA or value is pd.NaT:
        return None
    return value


def records(df: pd.DataFrame | None) -> list[dict[str, Any]]:
    if df is None or df.empty:
        return []
    return clean(df.to_dict("records"))


def build_report(
    run: dict[str, Any],
    ranks: pd.DataFrame,
    steps: pd.DataFrame,
    findings: list[Finding],
    tables: dict[str, pd.DataFrame],
    warnings: list[str],
) -> dict[str, Any]:
    ordered = sorted(findings, key=lambda f: f.sort_key())
    report: dict[str, Any] = {
        "scope_version": __version__,
        "run": clean(run),
        "ranks": records(ranks),
        "steps": records(steps),
        "findings": [clean(f.to_dict()) for f in ordered],
        "warnings": list(warnings),
    }
    for name, df in tables.items():
        if name not in report:
            report[name] = records(df)
    return report


def render_findings(console: Console, findings: list[dict[str, Any]]) -> None:
    """Root problems first, each with the findings it explains indented under it (scope.causality)."""
    if not findings:
        console.print("[green]No findings: nothing abnormal detected.[/green]")
        return
    groups = group_by_root(findings)
    console.print(f"[bold]Findings: {describe_counts(findings)}[/bold]")
    for i, (root, consequences) in enumerate(groups, 1):
        _render_one(console, f"{i}. ", root, "     ")
        for j, f in enumerate(consequences, 1):
            _render_one(console, f"   {i}.{j} consequence: ", f, "          ", evidence=2)


def _render_one(console: Console, head: str, f: dict[str, Any], indent: str, evidence: int = 5) -> None:
    style = SEVERITY_STYLE.get(f["severity"], "")
    ranks = f" ranks {_short(f['ranks'])}" if f.get("ranks") else ""
    console.print(f"{head}[{style}]{f['severity'].upper()}[/{style}] [bold]{f['kind']}[/bold]{ranks}: {f['summary']}")
    for line in f.get("evidence", [])[:evidence]:
        console.print(f"{indent}evidence: {line}")
    if f.get("suggestion"):
        console.print(f"{indent}suggestion: {f['suggestion']}")


def _short(values: list[Any], limit: int = 8) -> str:
    text = ", ".join(str(v) for v in values[:limit])
    return text + (f", ... ({len(values)} in all)" if len(values) > limit else "")


def steps_table(steps: pd.DataFrame, max_rows: int = 40) -> Table:
    """Step time per rank and step (ms), with event counts: ranks as rows, steps as columns."""
    table = Table(title="Step time (ms) per rank and step", show_lines=False)
    table.add_column("rank", justify="right")
    pivot = steps.pivot_table(index="rank", columns="step", values="step_us", aggfunc="first")
    for step in pivot.columns:
        table.add_column(f"step {step}", justify="right")
    counts = steps.groupby("rank")[[c for c in steps.columns if c.startswith("n_")]].sum()
    table.add_column("events (compute/comm/cpu_op)", justify="right")
    for rank, row in list(pivot.iterrows())[:max_rows]:
        c = counts.loc[rank]
        cells = [f"{v / 1000:.1f}" if pd.notna(v) else "-" for v in row]
        table.add_row(str(rank), *cells, f"{int(c['n_compute'])}/{int(c['n_comm'])}/{int(c['n_cpu_op'])}")
    if len(pivot) > max_rows:
        table.caption = f"{len(pivot) - max_rows} more ranks in the JSON output"
    return table


def frame_table(name: str, df: pd.DataFrame, max_rows: int = 12, max_cols: int = 8) -> Table:
    """The head of a table, narrow enough for a terminal; the JSON output has every row and column."""
    shown = df.iloc[:max_rows, :max_cols]
    notes = []
    if len(df) > max_rows:
        notes.append(f"first {max_rows} of {len(df)} rows")
    if df.shape[1] > max_cols:
        notes.append(f"{df.shape[1] - max_cols} more columns")
    table = Table(title=name, caption="; ".join(notes) + (" (all in --json)" if notes else ""))
    for col in shown.columns:
        table.add_column(str(col), overflow="ellipsis", max_width=28)
    for _, row in shown.iterrows():
        table.add_row(*[_cell(v) for v in row])
    return table


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return "-" if not math.isfinite(value) else f"{value:,.2f}"
    return str(value)
