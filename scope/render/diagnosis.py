"""The terminal text of `scope diagnose`: the root cause first, with its ranks, hosts, evidence, the
cascade it set off and the fix; then the other findings, the NCCL set-up and the warnings."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scope.finding import Finding

if TYPE_CHECKING:
    from scope.analyzers.diagnose.report import DiagnoseReport


def render_diagnosis(report: DiagnoseReport, max_findings: int = 8) -> str:
    out = [f"scope diagnose {report.path}  ({_inputs_line(report.inputs)}, {report.elapsed_s:.1f} s)", ""]
    if not report.findings:
        out.append("No failure found.")
    for i, f in enumerate(report.findings[:max_findings]):
        out.extend(_finding_lines(f, root=i == 0))
    if len(report.findings) > max_findings:
        out.append(f"... {len(report.findings) - max_findings} more finding(s) in --json")
    if report.nccl.get("nranks") or report.nccl.get("transports"):
        out.append(_nccl_line(report.nccl))
    for w in report.warnings[:10]:
        out.append(f"warning: {w}")
    return "\n".join(out).rstrip() + "\n"


def _inputs_line(inputs: dict[str, Any]) -> str:
    parts = [f"{inputs.get('logs', 0)} logs", f"{inputs.get('dumps', 0)} FR dumps"]
    if inputs.get("ranks"):
        parts.append(f"{inputs['ranks']} ranks")
    if inputs.get("hosts"):
        parts.append(f"{inputs['hosts']} hosts")
    return ", ".join(parts)


def _finding_lines(f: Finding, root: bool) -> list[str]:
    label = "ROOT CAUSE" if root else f.severity.upper()
    conf = f.metrics.get("confidence")
    tag = f"[{f.kind}, confidence {conf}]" if conf and conf != "high" else f"[{f.kind}]"
    lines = [f"{label} {tag} {f.summary}"]
    hosts = f.metrics.get("hosts") or []
    if f.ranks or hosts:
        lines.append(f"  ranks: {_short_list(f.ranks)}   hosts: {', '.join(hosts[:6]) or '?'}")
    if f.metrics.get("first_seen"):
        lines.append(f"  first seen: {f.metrics['first_seen']}")
    for ev in f.evidence[:5]:
        lines.append(f"  evidence: {ev}")
    cascade = f.metrics.get("cascade")
    if cascade:
        codes = ", ".join(f"{n} {c}" for c, n in list(cascade["by_code"].items())[:5])
        lines.append(f"  cascade: {cascade['count']} later line(s) on {len(cascade['ranks'])} rank(s): {codes}")
    for rel in f.metrics.get("related", [])[:3]:
        lines.append(f"  also: {rel['summary']}")
    if f.metrics.get("reference"):
        lines.append(f"  known error: {f.metrics.get('signature')} ({f.metrics['reference']})")
    if f.suggestion:
        lines.append(f"  fix: {f.suggestion}")
    lines.append("")
    return lines


def _short_list(ranks: list[int]) -> str:
    if len(ranks) <= 12:
        return ", ".join(map(str, ranks)) or "-"
    return f"{', '.join(map(str, ranks[:12]))} ... ({len(ranks)} ranks)"


def _nccl_line(nccl: dict[str, Any]) -> str:
    bits = []
    if nccl.get("version"):
        bits.append(f"NCCL {nccl['version']}")
    if nccl.get("nranks"):
        bits.append(f"{nccl['nranks']} ranks")
    if nccl.get("hosts"):
        bits.append(f"{len(nccl['hosts'])} hosts")
    if nccl.get("network"):
        bits.append(f"network {nccl['network']}")
    if nccl.get("transports"):
        bits.append("transports " + ", ".join(nccl["transports"]))
    if nccl.get("init_complete"):
        bits.append(f"Init COMPLETE on {nccl['init_complete']} ranks")
    return "nccl: " + "; ".join(bits)
