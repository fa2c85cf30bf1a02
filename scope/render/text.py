"""The terminal report: findings first (roots, their consequences indented under them), then one
compact per-rank summary, then the full tables asked for. Plain text, wrapped to `width` columns."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scope.causality import Node, describe_counts, finding_tree
from scope.render import wrap
from scope.render.summary import (
    SUMMARY_NOTE,
    rank_summary,
    selected_tables,
    short_list,
    table_cells,
)
from scope.result import NOTHING_READ, read_nothing
from scope.units import count

if TYPE_CHECKING:
    from scope.render import Style
    from scope.result import Analysis

MAX_EVIDENCE = 5
SUMMARY_MAX_RANKS = 64


def render_text(analysis: Analysis, width: int = 100, tables: bool | list[str] = False, summary: bool = True) -> str:
    out = findings_lines(analysis, width)
    out += goodput_lines(analysis)
    if summary:
        out += summary_lines(analysis, width)
    for name, df in selected_tables(analysis, tables):
        headers, rows = table_cells(df)
        out += ["", f"{name} ({count(len(rows), 'row')})", *grid(headers, rows)]
    return "\n".join(out).rstrip() + "\n"


def findings_lines(analysis: Analysis, width: int) -> list[str]:
    if not analysis.findings:
        if read_nothing(analysis.findings, analysis.steps, analysis.tables):
            return [NOTHING_READ]
        return ["No findings: nothing abnormal detected."]
    out = [f"Findings: {describe_counts(analysis.findings)}"]
    for i, node in enumerate(finding_tree(analysis.findings), 1):
        out += _node_lines(node, f"{i}. ", "   ", width)
    return out


def _node_lines(node: Node, first: str, rest: str, width: int) -> list[str]:
    f = node.finding
    ranks = f" ranks {short_list(f.ranks)}" if f.ranks else ""
    head = f"{f.severity.upper()} {f.kind}{ranks}: {f.summary}"
    out = _wrap(head, width, first, rest + "  ")
    for line in f.evidence[:MAX_EVIDENCE]:
        out += _wrap(f"evidence: {line}", width, rest + "  ", rest + "    ")
    if len(f.evidence) > MAX_EVIDENCE:
        more = count(len(f.evidence) - MAX_EVIDENCE, "more evidence line")
        out.append(f"{rest}  ... {more} (all in --json)")
    if f.suggestion:
        out += _wrap(f"suggestion: {f.suggestion}", width, rest + "  ", rest + "    ")
    for child in node.children:
        out += _node_lines(child, rest + "  -> ", rest + "     ", width)
    return out


def _wrap(text: str, width: int, first: str, rest: str) -> list[str]:
    return wrap(text, width, first, rest)


def goodput_lines(analysis: Analysis) -> list[str]:
    """The job's wall time by bucket in one line, from the goodput result `scope goodput` shows whole."""
    result = analysis.goodput
    if result is None:
        return []
    from scope.render.goodput import summary_line

    return ["", summary_line(result)]


def summary_lines(analysis: Analysis, width: int = 100) -> list[str]:
    headers, rows = rank_summary(analysis)
    if not rows:
        return []
    out = ["", "Per rank (profiled steps; shares of step time)"]
    out += grid(headers, rows[:SUMMARY_MAX_RANKS], left={"host", "findings"})
    if len(rows) > SUMMARY_MAX_RANKS:
        out.append(f"... {count(len(rows) - SUMMARY_MAX_RANKS, 'more rank')} (--table breakdown, or --json)")
    return out + _wrap(SUMMARY_NOTE, width, "", "")


def grid(headers: list[str], rows: list[list[str]], left: set[str] | None = None) -> list[str]:
    """Columns two spaces apart, numbers right-aligned, full headers (never cut)."""
    left = left or set()
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        parts = [
            c.ljust(w) if headers[i] in left or not _numeric(rows, i) else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    return [line(headers), "  ".join("-" * w for w in widths), *(line(r) for r in rows)]


def _numeric(rows: list[list[str]], i: int) -> bool:
    values = [r[i] for r in rows if r[i] != "-"]
    return bool(values) and all(v.replace(",", "").replace(".", "", 1).lstrip("-").isdigit() for v in values)


def text_of(analysis: Analysis, style: Style) -> str:
    """The renderer table's entry (scope.render.RENDERERS)."""
    return render_text(analysis, width=style.width, tables=style.tables, summary=style.summary)
