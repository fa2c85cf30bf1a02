"""Overview: the verdict, the findings ranked by impact (each linked to its evidence), the run's facts."""

from __future__ import annotations

from typing import Any

from dash import Dash, html
from scope.app import aggregate, figures, figures_budget
from scope.app.data import RunData, Snapshot
from scope.app.links import verdict
from scope.app.pages.common import analysis_hint, empty_state, facts, finding_card, graph

from scope.causality import describe_counts, finding_tree
from scope.finding import Finding
from scope.result import NOTHING_READ, read_nothing

PATH = "/"
TITLE = "Overview"


def run_facts(snap: Snapshot) -> list[tuple[str, Any]]:
    run = snap.run
    hosts = run.get("hosts") or []
    host_names = [h.get("name", h) if isinstance(h, dict) else h for h in hosts]
    steps = sorted(snap.steps["step"].unique().tolist()) if not snap.steps.empty else []
    truth = run.get("ground_truth") or {}
    items: list[tuple[str, Any]] = [
        ("status", run.get("status")),
        ("ranks", f"{len(snap.ranks):,} traced" + (f" of {run['world_size']:,}" if run.get("world_size") else "")),
        (
            "hosts",
            f"{len(host_names):,}: {', '.join(map(str, host_names[:6]))}" + (" …" if len(host_names) > 6 else "")
            if host_names
            else None,
        ),
        ("steps", f"{len(steps)} profiled ({steps[0]}–{steps[-1]})" if steps else "none profiled"),
        ("backend", run.get("backend")),
        ("parallelism", parallelism(snap)),
        ("command", " ".join(run["command"]) if isinstance(run.get("command"), list) else run.get("command")),
        ("source", run.get("source")),
    ]
    if truth:
        items.append(
            (
                "injected fault",
                f"{truth.get('fault')} on rank {truth.get('fault_rank')}"
                if truth.get("fault_rank") is not None
                else str(truth.get("fault") or truth.get("scenario")),
            )
        )
    return items


def parallelism(snap: Snapshot) -> str | None:
    parts = []
    pipeline = snap.table("pipeline")
    if pipeline is not None and "stage" in pipeline.columns:
        parts.append(f"pipeline: {pipeline['stage'].nunique()} stages")
    coll = snap.table("collectives")
    if coll is not None and "pg" in coll.columns:
        sizes = coll.groupby("pg")["ranks"].first() if "ranks" in coll.columns else None
        count = coll["pg"].nunique()
        if sizes is not None:
            widths = sorted({len(v) if hasattr(v, "__len__") and not isinstance(v, str) else v for v in sizes})
            parts.append(f"{count} process group{'s' if count > 1 else ''} (sizes {', '.join(map(str, widths[:5]))})")
        else:
            parts.append(f"{count} process groups")
    return "; ".join(parts) or None


def installed_analyzers() -> int:
    import scope.analyzers as analyzers  # part of scope: an import error is a broken installation

    return len(analyzers.ANALYZERS)


def layout(data: RunData, params: dict[str, str]) -> html.Div:
    snap = data.snapshot
    read = not read_nothing(snap.findings, snap.steps, snap.tables)
    level, sentence = verdict(snap.findings, snap.analyzed, installed_analyzers(), read_anything=read)
    children: list[Any] = [html.Div(sentence, className=f"verdict verdict-{level}", id="verdict")]
    if not snap.analyzed:
        children.append(empty_state("This run has not been analyzed yet", analysis_hint(data), data.message or ""))
    children.append(html.Div([html.H3("Run"), facts(run_facts(snap))], className="panel"))
    cards = finding_cards(snap.findings)
    if snap.analyzed:
        none = "No findings: nothing abnormal detected." if read else NOTHING_READ
        findings_block = cards or [html.P(none, className="muted")]
        title = f"Findings ({describe_counts(snap.findings)})" if cards else "Findings (0)"
        children.append(html.Div([html.H3(title), *findings_block], className="panel", id="findings"))
    summary = aggregate.step_summary(snap.steps)
    children.append(html.Div(graph("overview-steps", figures.step_time_figure(summary)), className="panel"))
    if snap.table("budget") is not None:
        budget = figures_budget.budget_figure(snap.table("budget"))
        children.append(html.Div(graph("overview-budget", budget), className="panel", id="budget"))
    if snap.warnings:
        items = [html.Li(str(w)) for w in snap.warnings[:50]]
        more = [html.Li(f"… and {len(snap.warnings) - 50} more")] if len(snap.warnings) > 50 else []
        children.append(
            html.Details(
                [html.Summary(f"Input warnings ({len(snap.warnings)})"), html.Ul(items + more)], className="panel"
            )
        )
    return html.Div(children)


def finding_cards(findings: list[Finding]) -> list[Any]:
    """Each root problem's card, its consequences folded under it: the causal tree every view shows
    (scope.causality.finding_tree), in the analysis' order. A card's index is its place in `findings`."""
    index = {id(f): i for i, f in enumerate(findings)}
    out: list[Any] = []
    for node in finding_tree(findings):
        root, effects = node.finding, node.descendants()
        out.append(finding_card(root, index[id(root)]))
        if effects:
            label = f"{len(effects)} effect{'s' if len(effects) > 1 else ''} of this problem"
            out.append(
                html.Details(
                    [html.Summary(label), *[finding_card(f, index[id(f)]) for f in effects]],
                    className="finding-effects",
                    id=f"effects-{index[id(root)]}",
                )
            )
    return out


def register(app: Dash, data: RunData) -> None:
    """The overview has no callbacks of its own: its links navigate."""
