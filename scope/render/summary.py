"""What every renderer shows: the findings as a tree (roots, then their consequences) and one compact
per-rank summary with units, plus cell formatting for full tables (integers as integers)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scope.finding import Finding

if TYPE_CHECKING:
    import pandas as pd

    from scope.result import Analysis


@dataclass
class Node:
    finding: Finding
    children: list[Node] = field(default_factory=list)


def finding_tree(findings: list[Finding]) -> list[Node]:
    """Roots are the findings no other finding explains (empty caused_by, or a cause not in this list);
    each consequence sits under the finding whose id it names. Order within a level is kept."""
    nodes = [Node(f) for f in findings]
    by_id = {n.finding.id: n for n in nodes if n.finding.id}
    roots: list[Node] = []
    for node in nodes:
        parent = by_id.get(node.finding.caused_by) if node.finding.caused_by else None
        if parent is None or parent is node or _descends(parent, node, by_id):
            roots.append(node)
        else:
            parent.children.append(node)
    return roots


def _descends(candidate: Node, ancestor: Node, by_id: dict[str, Node]) -> bool:
    """Is `candidate` under `ancestor` already (a cycle of caused_by links must not hide findings)?"""
    seen: set[str] = set()
    node: Node | None = candidate
    while node is not None and node.finding.caused_by and node.finding.caused_by not in seen:
        seen.add(node.finding.caused_by)
        node = by_id.get(node.finding.caused_by)
        if node is ancestor:
            return True
    return False


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
    ("exp.comm", "%"),
    ("wait", "%"),
    ("idle", "%"),
    ("busbw", "GB/s"),
    ("findings", ""),
)


def rank_summary(analysis: Analysis) -> tuple[list[str], list[list[str]]]:
    """(headers with units, rows of cells): per rank, the median step, where its time went (shares of all
    profiled step time), the median bus bandwidth of its collectives and the kinds of finding naming it."""
    bd = analysis.table("breakdown")
    steps = analysis.steps if analysis.steps is not None and not analysis.steps.empty else None
    source = bd if bd is not None else steps
    if source is None or "rank" not in source.columns:
        return [], []
    hosts = _hosts(analysis.ranks)
    busbw = _rank_busbw(analysis.table("collectives"))
    kinds: dict[int, list[str]] = {}
    for f in analysis.findings:
        for r in f.ranks:
            if f.kind not in kinds.setdefault(int(r), []):
                kinds[int(r)].append(f.kind)
    rows = []
    for rank, sub in source.groupby("rank", sort=True):
        total = float(sub["step_us"].sum())

        def share(col: str, sub: pd.DataFrame = sub, total: float = total) -> float | None:
            return 100.0 * float(sub[col].sum()) / total if col in sub.columns and total > 0 else None

        rows.append(
            [
                str(int(rank)),
                hosts.get(int(rank), ""),
                str(len(sub)),
                number(float(sub["step_us"].median()) / 1000.0),
                number(share("compute_us")),
                number(share("exposed_comm_us")),
                number(share("exposed_comm_wait_us")),
                number(share("idle_us")),
                number(busbw.get(int(rank))),
                ", ".join(kinds.get(int(rank), [])) or "-",
            ]
        )
    headers = [f"{name} {unit}".strip() for name, unit in SUMMARY_COLUMNS]
    always = {"rank", "findings"}
    keep = [
        i
        for i, (name, _unit) in enumerate(SUMMARY_COLUMNS)
        if name in always or any(row[i] not in ("", "-") for row in rows)
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
