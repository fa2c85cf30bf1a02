"""Failure: the root-cause report, the Flight Recorder table with culprits marked, log evidence in context."""

from __future__ import annotations

import re
from typing import Any

import pandas as pd
from dash import Dash, html
from scope.app.aggregate import format_ranks
from scope.app.data import RunData, Snapshot
from scope.app.links import FAILURE_KINDS, int_param
from scope.app.pages.common import analysis_hint, empty_state, finding_card, frame_table

from scope.finding import Finding

PATH = "/failure"
TITLE = "Failure"
EVIDENCE = re.compile(r"^(?P<file>[^:\s][^:]*?):(?P<line>\d+)(?::\s?(?P<text>.*))?$")
# A Flight Recorder dump is cited by entry (analyzers/diagnose/reasoning/fr_blame.entry_evidence):
# "FILE, entry N: call".
DUMP_EVIDENCE = re.compile(r"^(?P<file>[^,:\s][^,:]*?), entry (?P<line>\d+)(?::\s?(?P<text>.*))?$")
QUOTED_PER_FINDING = 4


def culprits(findings: list[Finding]) -> set[int]:
    return {int(r) for f in findings if f.kind in FAILURE_KINDS for r in f.ranks}


def fr_groups(fr: pd.DataFrame, blamed: set[int]) -> pd.DataFrame:
    """Ranks of each process group grouped by (last enqueued, last completed): the odd group out stands out."""
    keys = [c for c in ("last_enqueued", "last_enqueued_op", "last_completed", "role") if c in fr.columns]
    if not keys or "pg" not in fr.columns or "rank" not in fr.columns:
        return pd.DataFrame()
    data = fr.copy()
    for key in keys:
        data[key] = data[key].astype(str)
    if "role" in data.columns:  # the diagnosis says who is the culprit; trust it over the findings' rank list
        blamed = blamed | set(data.loc[data["role"] == "culprit", "rank"].astype(int))
    grouped = data.groupby(["pg", *keys])["rank"].agg(lambda r: sorted(int(x) for x in r)).reset_index()
    grouped["n_ranks"] = grouped["rank"].map(len)
    grouped["culprit"] = grouped["rank"].map(
        lambda rs: "yes: " + format_ranks(set(rs) & blamed) if set(rs) & blamed else ""
    )
    grouped["ranks"] = grouped["rank"].map(format_ranks)
    return grouped.sort_values(["pg", "n_ranks"])[["pg", *keys, "n_ranks", "ranks", "culprit"]]


def evidence_block(data: RunData, finding: Finding) -> Any:
    items = []
    for n, line in enumerate(finding.evidence[:12]):
        dump = DUMP_EVIDENCE.match(str(line))
        match = dump or EVIDENCE.match(str(line))
        quoted = data.quote(match["file"], int(match["line"])) if match and n < QUOTED_PER_FINDING else []
        if quoted and match:  # (quoted only with a match)
            target = int(match["line"])
            code = [html.Div(f"{i:>6}  {text}", className="hit" if i == target else None) for i, text in quoted]
            where = f"{match['file']}, entry {target}" if dump else f"{match['file']}:{target}"
            items.append(html.Li([html.Code(where), html.Pre(code, className="quote")]))
        else:
            items.append(html.Li(html.Code(str(line))))
    return html.Ul(items, className="evidence") if items else None


def failure_findings(data: RunData, snap: Snapshot, focus: int | None) -> list[Any]:
    out = []
    for i, f in enumerate(snap.findings):
        if f.kind not in FAILURE_KINDS:
            continue
        out.append(
            html.Div(
                [finding_card(f, i, focused=i == focus, links=False), evidence_block(data, f)],
                className="failure-entry",
            )
        )
    return out


def layout(data: RunData, params: dict[str, str]) -> html.Div:
    snap = data.snapshot
    if not snap.analyzed:
        return html.Div([html.H2("Failure"), empty_state("Not diagnosed yet", analysis_hint(data), data.message)])
    status = snap.run.get("status")
    entries = failure_findings(data, snap, int_param(params, "focus"))
    children: list[Any] = [html.H2("Failure")]
    if entries:
        children += [html.H3("Root cause first"), *entries]
    else:
        children.append(
            empty_state(
                "No failure found",
                f"Run status: {status or 'unknown'}. No log, dump or kernel message points at a crash, hang or fault.",
            )
        )
    fr = snap.table("fr")
    if fr is not None:
        blamed = culprits(snap.findings)
        if "role" in fr.columns:
            blamed |= set(fr.loc[fr["role"] == "culprit", "rank"].astype(int))
        groups = fr_groups(fr, blamed)
        marks = ["culprit-row" if c else "" for c in groups["culprit"]] if not groups.empty else None
        children += [
            html.H3("Flight Recorder: last collective per rank and process group"),
            frame_table(groups, max_rows=60, table_id="fr-table", row_class=marks),
        ]
        if blamed:
            rows = fr[fr["rank"].isin(blamed)]
            children += [html.H4("Culprit ranks"), frame_table(rows, max_rows=40, table_id="fr-culprits")]
    else:
        children.append(
            html.P("No Flight Recorder dumps in this run (set TORCH_FR_BUFFER_SIZE to record them).", className="muted")
        )
    hosts = snap.table("hosts")
    if hosts is not None:
        children += [html.H3("Hosts"), frame_table(hosts, max_rows=60)]
    return html.Div(children)


def register(app: Dash, data: RunData) -> None:
    """Static page: its content changes only with the data version."""
