"""The analysis as Markdown, for pasting a post-mortem into a ticket: findings as a nested list (roots,
then their consequences), the per-rank summary and the tables asked for as Markdown tables."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from scope.causality import Node, describe_counts, finding_tree
from scope.render.summary import (
    SUMMARY_NOTE,
    rank_summary,
    selected_tables,
    short_list,
    table_cells,
)
from scope.result import NOTHING_READ, read_nothing

if TYPE_CHECKING:
    from scope.render import Style
    from scope.result import Analysis


def render_markdown(analysis: Analysis, tables: bool | list[str] = False, summary: bool = True) -> str:
    source = analysis.run.get("source") or analysis.run.get("run_dir") or "run"
    counts = describe_counts(analysis.findings) if analysis.findings else "0"  # as the text and the dashboard say
    out = [f"# scope analysis: {code(str(source))}", "", f"## Findings ({counts})", ""]
    if not analysis.findings:
        nothing = read_nothing(analysis.findings, analysis.steps, analysis.tables)
        out.append(NOTHING_READ if nothing else "No findings: nothing abnormal detected.")
    for node in finding_tree(analysis.findings):
        out += _node_lines(node, "")
    if summary:
        headers, rows = rank_summary(analysis)
        if rows:
            out += ["", "## Per rank", "", "Profiled steps; shares of step time.", "", *md_table(headers, rows)]
            out += ["", _escape(SUMMARY_NOTE) + "."]
    for name, df in selected_tables(analysis, tables):
        headers, rows = table_cells(df)
        out += ["", f"## {name}", "", *md_table(headers, rows)]
    if analysis.warnings:
        out += ["", "## Warnings", "", *(f"- {_escape(str(w))}" for w in analysis.warnings)]
    return "\n".join(out).rstrip() + "\n"


def _node_lines(node: Node, indent: str) -> list[str]:
    f = node.finding
    ranks = f" (ranks {short_list(f.ranks)})" if f.ranks else ""
    out = [f"{indent}- **{f.severity.upper()}** `{f.kind}`{ranks}: {_escape(f.summary)}"]
    out += [f"{indent}  - evidence: {code(e)}" for e in f.evidence[:5]]
    if f.suggestion:
        out.append(f"{indent}  - suggestion: {_escape(f.suggestion)}")
    for child in node.children:
        out += _node_lines(child, indent + "  ")
    return out


def md_table(headers: list[str], rows: list[list[str]]) -> list[str]:
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(_escape(c) for c in cells) + " |"

    return [line(headers), "|" + "|".join("---" for _ in headers) + "|", *(line(r) for r in rows)]


def _escape(text: str) -> str:
    """Text from logs and traces as Markdown text: no table breaks, no raw HTML (a log line's `<script>`
    or `<img onerror=...>` must stay text wherever the Markdown is rendered) and no link or image (a log
    line's `[details](javascript:...)` was a live link in the ticket the post-mortem was pasted into)."""
    for raw, safe in _ESCAPES:
        text = text.replace(raw, safe)
    return text


escape = _escape  # for the other Markdown renderers (scope compare)
_ESCAPES = (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("|", "\\|"), ("[", "\\["), ("]", "\\]"), ("\n", " "))


def code(text: str) -> str:
    """TEXT as an inline code span that no backtick in it can close (CommonMark: a longer fence)."""
    text = text.replace("\n", " ")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def markdown_of(analysis: Analysis, style: Style) -> str:
    """The renderer table's entry (scope.render.RENDERERS)."""
    return render_markdown(analysis, tables=style.tables, summary=style.summary)
