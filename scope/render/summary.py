"""What every renderer shows besides the finding tree (scope.causality.finding_tree): one compact per-rank
summary with units, plus cell formatting for full tables (integers as integers)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from scope.result import Analysis


def short_list(values: list[Any], limit: int = 8) -> str:
    text = ", ".join(str(v) for v in values[:limit])
    return text + (f", ... ({len(values)} in all)" if len(values) > limit else "")


# (header, unit) of the per-rank summary, in order; a column whose values are all missing is dropped.
SUMMARY_COLUMNS: tuple[tuple[str, str], ...] = (
    ("rank", ""),
    ("host", ""),
    ("steps", ""),
    ("step", "ms"),
    ("compute", "%"),
    ("comm", "%"),
    ("(wait)", "%"),
    ("input", "%"),
    ("host-bd", "%"),
    ("sync", "%"),
    ("other", "%"),
    ("unexpl", "%"),
    ("busbw", "GB/s"),
    ("findings", ""),
)
# Share columns -> the step-budget buckets (analyzers/budget/analyze.py) each adds up. `(wait)` is part of
# `comm` and not added again: the other share columns add to 100% of the profiled step time.
SHARE_BUCKETS: dict[str, tuple[str, ...]] = {
    "compute": ("compute", "comm_overlapped"),
    "comm": ("comm_wait", "comm_unknown", "comm_transfer"),
    "(wait)": ("comm_wait",),
    "input": ("input",),
    "host-bd": ("host_bound",),
    "sync": ("sync",),
    "other": ("optimizer", "checkpoint", "memcpy", "gc"),
    "unexpl": ("unexplained",),
}
# Without a budget table (an analysis saved by an older scope): the breakdown's columns.
_BREAKDOWN_SHARES = {
    "compute": "compute_us",
    "comm": "exposed_comm_us",
    "(wait)": "exposed_comm_wait_us",
    "other": "memcpy_us",
    "unexpl": "idle_us",
}
SUMMARY_NOTE = (
    "compute, comm, input, host-bd, sync, other and unexpl add to 100% of the step. comm: exposed communication "
    "(not hidden under compute), (wait): the part of it spent waiting for a later rank; host-bd: GPU idle while "
    "the CPU is busy launching; unexpl: no recorded cause; other: optimizer, "
    "checkpoint, copies, gc (--table budget has every bucket)"
)


def _shares(analysis: Analysis) -> dict[int, dict[str, float]]:
    """Per rank, each share column's percentage of all its profiled step time."""
    budget = analysis.table("budget")
    if budget is not None and not budget.empty and "bucket" in budget.columns:
        return _budget_shares(budget)
    out: dict[int, dict[str, float]] = {}
    bd = analysis.table("breakdown")
    if bd is None or bd.empty or "rank" not in bd.columns:
        return out
    for rank, sub in bd.groupby("rank"):
        total = float(sub["step_us"].sum())
        out[int(rank)] = {
            col: 100.0 * float(sub[src].sum()) / total
            for col, src in _BREAKDOWN_SHARES.items()
            if src in sub.columns and total > 0
        }
    return out


def _budget_shares(budget: pd.DataFrame) -> dict[int, dict[str, float]]:
    """The share columns from the step budget, summed per rank over its steps, in one pass of grouped sums
    (a lookup per rank in the grouped index was quadratic in the ranks)."""
    import numpy as np

    steps = budget.drop_duplicates(["rank", "step"]).groupby("rank")["step_us"].sum()
    us = budget.groupby(["rank", "bucket"])["us"].sum().unstack("bucket", fill_value=0.0)
    us = us.reindex(steps.index, fill_value=0.0)
    spent = steps.to_numpy(dtype=float)
    shares = {}
    for col, buckets in SHARE_BUCKETS.items():
        present = [b for b in buckets if b in us.columns]
        total = us[present].to_numpy(dtype=float).sum(axis=1) if present else np.zeros(len(us))
        with np.errstate(divide="ignore", invalid="ignore"):
            shares[col] = np.where(spent > 0, 100.0 * total / spent, 0.0)
    return {int(rank): {col: float(values[i]) for col, values in shares.items()} for i, rank in enumerate(steps.index)}


def rank_summary(analysis: Analysis) -> tuple[list[str], list[list[str]]]:
    """(headers with units, rows of cells): per rank, the median step, where its time went (shares of all
    profiled step time, from the step budget: they add to 100%, see SUMMARY_NOTE), the median bus
    bandwidth of its collectives and the kinds of finding naming it."""
    bd = analysis.table("breakdown")
    steps = analysis.steps if analysis.steps is not None and not analysis.steps.empty else None
    source = bd if bd is not None else steps
    if source is None or "rank" not in source.columns:
        return [], []
    hosts = _hosts(analysis.ranks)
    busbw = _rank_busbw(analysis.table("collectives"))
    shares = _shares(analysis)
    kinds: dict[int, list[str]] = {}
    for f in analysis.findings:
        for r in f.ranks:
            if f.kind not in kinds.setdefault(int(r), []):
                kinds[int(r)].append(f.kind)
    rows = []
    for rank, sub in source.groupby("rank", sort=True):
        mine = shares.get(int(rank), {})
        rows.append(
            [
                str(int(rank)),
                hosts.get(int(rank), ""),
                str(len(sub)),
                number(float(sub["step_us"].median()) / 1000.0),
                *(number(mine.get(col)) if col in mine else "-" for col in SHARE_BUCKETS),
                number(busbw.get(int(rank))),
                ", ".join(kinds.get(int(rank), [])) or "-",
            ]
        )
    headers = [f"{name} {unit}".strip() for name, unit in SUMMARY_COLUMNS]
    always = {"rank", "findings", "compute"}
    # a share column at zero on every rank says nothing (the rest still add to 100%)
    keep = [
        i
        for i, (name, _unit) in enumerate(SUMMARY_COLUMNS)
        if name in always or any(row[i] not in ("", "-", "0") for row in rows)
    ]
    return [headers[i] for i in keep], [[row[i] for i in keep] for row in rows]


def _hosts(ranks: pd.DataFrame | None) -> dict[int, str]:
    if ranks is None or ranks.empty or "rank" not in ranks.columns:
        return {}
    col = next((c for c in ("host_name", "host") if c in ranks.columns), None)
    if col is None:
        return {}
    return {int(r): str(h)[:16] for r, h in zip(ranks["rank"], ranks[col], strict=True) if isinstance(h, str) and h}


def _rank_busbw(instances: pd.DataFrame | None) -> dict[int, float]:
    """Median bus bandwidth of the collectives each rank took part in (latency-size ones included)."""
    if instances is None or "busbw_gbps" not in instances.columns or "ranks" not in instances.columns:
        return {}
    values: dict[int, list[float]] = {}
    for ranks, bw in zip(instances["ranks"], instances["busbw_gbps"], strict=True):
        if bw is None or not math.isfinite(float(bw)) or float(bw) <= 0:
            continue
        for r in list(ranks) if ranks is not None else []:
            values.setdefault(int(r), []).append(float(bw))
    return {r: sorted(v)[len(v) // 2] for r, v in values.items() if v}


def number(value: float | None) -> str:
    """A measured figure with three significant digits at most: 1234, 56.7, 8.91, 0.123; '-' when missing."""
    if value is None or not math.isfinite(value):
        return "-"
    magnitude = abs(value)
    if magnitude >= 100 or value == int(value):
        return f"{value:,.0f}"
    return f"{value:.1f}" if magnitude >= 10 else f"{value:.2f}" if magnitude >= 0.01 else f"{value:.2g}"


def cell(value: Any) -> str:
    """One cell of a full table: integers as integers (even when pandas made them floats), lists joined."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        if not math.isfinite(value):
            return "-"
        return str(int(value)) if value == int(value) and abs(value) < 1e15 else f"{value:.4g}"
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return ",".join(cell(v) for v in value)
    if type(value).__name__ in ("NAType", "NaTType"):
        return "-"
    return str(value)


def table_cells(df: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    return [str(c) for c in df.columns], [[cell(v) for v in row] for row in df.itertuples(index=False)]


def selected_tables(analysis: Analysis, tables: bool | list[str]) -> list[tuple[str, pd.DataFrame]]:
    """Every table (True), the named ones (unknown names are reported), or none."""
    from scope.errors import EXIT_USAGE, ScopeError

    if tables is True:
        return [(n, df) for n, df in analysis.tables.items() if not df.empty]
    if not tables:
        return []
    missing = [n for n in tables if n not in analysis.tables]
    if missing:
        known = ", ".join(sorted(analysis.tables)) or "none"
        raise ScopeError(f"no table {', '.join(missing)} in this analysis (tables: {known})", EXIT_USAGE)
    return [(n, analysis.tables[n]) for n in tables]
