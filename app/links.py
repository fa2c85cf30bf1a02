"""Where each finding's evidence is shown: one URL per view (no path ever comes from the browser), and the
overview's one-sentence verdict, read off the causal tree (scope.causality.finding_tree)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qs, urlencode

from scope.analyzers import analyzer

from scope.causality import finding_tree
from scope.finding import FAILURE_KINDS, Finding
from scope.result import NOTHING_READ

# The findings the collectives page shows and links to: the kinds comm_bound's record declares.
COLLECTIVE_KINDS = frozenset(analyzer("comm_bound").kinds)


def href(page: str, **params: Any) -> str:
    query = urlencode({k: v for k, v in params.items() if v is not None and v != ""})
    return f"/{page}" + (f"?{query}" if query else "")


def parse_search(search: str | None) -> dict[str, str]:
    """'?rank=2&step=3' -> {'rank': '2', 'step': '3'} (first value of each)."""
    parsed = parse_qs((search or "").lstrip("?"))
    return {k: v[0] for k, v in parsed.items() if v}


def int_param(params: dict[str, str], name: str) -> int | None:
    try:
        return int(params[name])
    except (KeyError, ValueError):
        return None


def finding_links(finding: Finding, index: int) -> list[tuple[str, str]]:
    """(href, label) of the views showing this finding's evidence, the most telling first."""
    kind, metrics = finding.kind, finding.metrics
    rank = int(finding.ranks[0]) if finding.ranks else None
    step = int(finding.steps[0]) if finding.steps else None
    if kind == "straggler":
        return [
            (href("heatmap", rank=rank, step=step, metric="compute_us"), f"heat-map at rank {rank}"),
            (href("timeline", rank=rank, step=step), f"timeline of rank {rank}"),
        ]
    if kind in COLLECTIVE_KINDS:
        pg, op = metrics.get("pg"), metrics.get("op")
        links = [(href("collectives", pg=pg, op=op, finding=index), "collectives")]
        if step is not None:
            links.append((href("timeline", step=step, rank=rank), f"timeline at step {step}"))
        return links
    if kind.startswith("pipeline"):
        return [(href("timeline", view="pipeline", step=step, rank=rank), "pipeline timeline")]
    if kind in FAILURE_KINDS:
        return [(href("failure", focus=index), "failure report")]
    return [(href("heatmap", rank=rank, step=step), "heat-map")] if rank is not None else []


def verdict(
    findings: Sequence[Finding], analyzed: bool, n_analyzers: int | None = None, read_anything: bool = True
) -> tuple[str, str]:
    """(level, sentence) for the top of the overview: failed, slowed, healthy, not analyzed yet, or nothing
    read (then no "healthy": a folder of unreadable files is no healthy run). The roots are the causal
    tree's (scope.causality), in the analysis' order: most severe first, then the most time lost."""
    if not analyzed:
        return "unknown", "Not analyzed yet."
    if not read_anything:
        return "unknown", NOTHING_READ
    if not findings and n_analyzers == 0:
        return "unknown", "No findings: no analyzers are installed, so only step times are shown."
    tree = finding_tree(findings)
    roots = [node.finding for node in tree]
    failures = [f for f in roots if f.kind in FAILURE_KINDS and f.severity == "critical"]
    if failures:
        return "critical", f"Failed: {failures[0].summary}"
    slow = [f for f in roots if f.severity in ("critical", "warning")]
    if slow:
        effects = sum(len(node.descendants()) for node in tree)
        notes = []
        if effects:
            notes.append(
                f"{effects} effect{'s' if effects > 1 else ''} of it folded under it"
                if len(slow) == 1
                else f"{effects} effect{'s' if effects > 1 else ''} folded under their causes"
            )
        if len(slow) > 1:
            notes.append(f"{len(slow) - 1} more problem{'s' if len(slow) > 2 else ''} below")
        more = f" ({'; '.join(notes)})" if notes else ""
        return "warning", f"Slowed: {slow[0].summary}{more}"
    if findings:
        return "info", f"Healthy, with {len(findings)} note{'s' if len(findings) > 1 else ''}."
    return "ok", "Healthy: no stragglers, communication stalls or failures found."
