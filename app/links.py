"""Where each finding's evidence is shown: one URL per view (no path ever comes from the browser)."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlencode

from scope.finding import FAILURE_KINDS
from scope.result import NOTHING_READ

COLLECTIVE_KINDS = frozenset({"comm_bound", "slow_collective"})


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


def finding_links(finding: dict[str, Any], index: int) -> list[tuple[str, str]]:
    """(href, label) of the views showing this finding's evidence, the most telling first."""
    kind = str(finding.get("kind", ""))
    ranks = [int(r) for r in finding.get("ranks") or []]
    steps = [int(s) for s in finding.get("steps") or []]
    metrics = finding.get("metrics") or {}
    rank = ranks[0] if ranks else None
    step = steps[0] if steps else None
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


SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}


def is_effect(finding: dict[str, Any], findings: list[dict[str, Any]]) -> bool:
    """A finding explained by another: linked by the analysis (`caused_by`, scope.causality), or, in an
    analysis older than the links, communication-bound steps spent waiting for a rank that is itself
    reported as a straggler (the straggler is the root cause, the waiting its consequence)."""
    cause = finding.get("caused_by")
    if cause:
        return any(f.get("id") == cause for f in findings)
    if any(f.get("id") for f in findings):
        return False  # linked findings: no link, no effect
    if finding.get("kind") != "comm_bound" or (finding.get("metrics") or {}).get("cause") != "waiting":
        return False
    waited_on = set((finding.get("metrics") or {}).get("waiting_for") or finding.get("ranks") or [])
    return any(f.get("kind") == "straggler" and waited_on & set(f.get("ranks") or []) for f in findings)


def ranked_findings(findings: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    """(original index, finding), most severe first, root causes before their effects, then by time lost."""

    def key(item: tuple[int, dict[str, Any]]) -> tuple[int, int, float, int]:
        index, f = item
        lost = float((f.get("metrics") or {}).get("time_lost_us") or 0.0)
        return (SEVERITY_ORDER.get(str(f.get("severity")), 3), int(is_effect(f, findings)), -lost, index)

    return sorted(enumerate(findings), key=key)


def verdict(
    findings: list[dict[str, Any]], analyzed: bool, n_analyzers: int | None = None, read_anything: bool = True
) -> tuple[str, str]:
    """(level, sentence) for the top of the overview: failed, slowed, healthy, not analyzed yet, or nothing
    read (then no "healthy": a folder of unreadable files is no healthy run)."""
    if not analyzed:
        return "unknown", "Not analyzed yet."
    if not read_anything:
        return "unknown", NOTHING_READ
    if not findings and n_analyzers == 0:
        return "unknown", "No findings: no analyzers are installed, so only step times are shown."
    ranked = [f for _, f in ranked_findings(findings)]
    roots = [f for f in ranked if not is_effect(f, ranked)]
    failures = [f for f in roots if f.get("kind") in FAILURE_KINDS and f.get("severity") == "critical"]
    if failures:
        return "critical", f"Failed: {failures[0].get('summary', '')}"
    slow = [f for f in roots if f.get("severity") in ("critical", "warning")]
    if slow:
        effects = sum(1 for f in ranked if is_effect(f, ranked))
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
        return "warning", f"Slowed: {slow[0].get('summary', '')}{more}"
    if findings:
        return "info", f"Healthy, with {len(findings)} note{'s' if len(findings) > 1 else ''}."
    return "ok", "Healthy: no stragglers, communication stalls or failures found."


def grouped_findings(
    findings: list[dict[str, Any]],
) -> list[tuple[tuple[int, dict[str, Any]], list[tuple[int, dict[str, Any]]]]]:
    """Roots in rank order, each with its effects: [((index, root), [(index, effect), ...])]."""
    ranked = ranked_findings(findings)
    by_id = {f.get("id"): i for i, f in enumerate(findings) if f.get("id")}
    effects: dict[int, list[tuple[int, dict[str, Any]]]] = {}
    roots = []
    for index, f in ranked:
        cause = by_id.get(f.get("caused_by")) if f.get("caused_by") else None
        if cause is None and is_effect(f, findings):  # older analysis: the straggler it waits for
            cause = next(
                (
                    j
                    for j, g in ranked
                    if g.get("kind") == "straggler" and set(g.get("ranks") or []) & set(f.get("ranks") or [])
                ),
                None,
            )
        if cause is not None and cause != index:
            effects.setdefault(cause, []).append((index, f))
        else:
            roots.append((index, f))
    return [((i, f), effects.get(i, [])) for i, f in roots]


def problem_count(findings: list[dict[str, Any]]) -> str:
    """'1 problem, 3 effects' (warnings and criticals; notes counted apart), over the overview's grouping."""
    from scope.causality import describe_counts

    groups = grouped_findings(findings)
    linked = [{**f, "id": f"#{i}", "caused_by": ""} for (i, f), _ in groups]
    linked += [{**f, "id": f"#{j}", "caused_by": f"#{i}"} for (i, _), effects in groups for j, f in effects]
    return describe_counts(linked)
