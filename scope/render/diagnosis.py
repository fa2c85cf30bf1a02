"""The terminal text of `scope diagnose`: the root cause first, with its ranks, hosts, evidence, the
cascade it set off and the fix; then the other findings, the NCCL set-up and the warnings. It renders
the Analysis the diagnose analyzer gives alone (scope.analyzers.diagnose.diagnose): the findings, in
the analysis' order, are those `scope analyze` shows; the header and the NCCL line read its sections."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scope.finding import Finding
from scope.render import terminal_width, wrap
from scope.units import count

if TYPE_CHECKING:
    from scope.result import Analysis


def render_diagnosis(analysis: Analysis, max_findings: int = 8, width: int = 0) -> str:
    """The diagnosis as text wrapped to `width` columns (default: the terminal's, at most 100)."""
    width = width or terminal_width()
    sections = analysis.sections
    path = sections.get("path") or analysis.run.get("source", "")
    inputs, nccl = sections.get("inputs") or {}, sections.get("nccl") or {}
    head = f"scope diagnose {path}  ({_inputs_line(inputs)}, {float(sections.get('elapsed_s') or 0):.1f} s)"
    out = [*wrap(head, width, "", "  "), ""]
    findings = analysis.findings
    if not findings:
        out.extend(wrap("No failure found." + _stopped_words(sections.get("stopped") or {}), width, "", "  "))
    for i, f in enumerate(findings[:max_findings]):
        out.extend(_finding_lines(f, root=i == 0, width=width))
    if len(findings) > max_findings:
        out.append(f"... {count(len(findings) - max_findings, 'more finding', 'more findings')} in --json")
    if nccl.get("nranks") or nccl.get("transports"):
        out.extend(wrap(_nccl_line(nccl), width, "", "  "))
    for w in analysis.warnings[:10]:
        out.extend(wrap(f"warning: {w}", width, "", "  "))
    return "\n".join(out).rstrip() + "\n"


def _stopped_words(stopped: dict[str, Any]) -> str:
    """Where the log stopped, for a run with no failure finding: a clean end, or a stage the log may be cut in."""
    if not stopped.get("stage"):
        return ""
    where = f"{stopped.get('file', '')}:{stopped.get('line', '')}"
    stage = str(stopped["stage"]).replace("_", " ")
    if stopped.get("clean_end"):
        return f" The log ends cleanly ({stage}, {where})."
    cut = " (an excerpt: the log goes on)" if stopped.get("cut") else ""
    return (
        f" The log ends in {stage} ({where}){cut} with no end shown: if the job is still running and silent, it is "
        f"stuck there; expected next: {stopped.get('expected_next', '')}."
    )


def _inputs_line(inputs: dict[str, Any]) -> str:
    parts = [count(int(inputs.get("logs", 0)), "log"), count(int(inputs.get("dumps", 0)), "FR dump")]
    if inputs.get("ranks"):
        parts.append(count(int(inputs["ranks"]), "rank"))
    if inputs.get("hosts"):
        parts.append(count(int(inputs["hosts"]), "host"))
    return ", ".join(parts)


def _finding_lines(f: Finding, root: bool, width: int) -> list[str]:
    label = "ROOT CAUSE" if root else f.severity.upper()
    conf = f.metrics.get("confidence")
    tag = f"[{f.kind}, confidence {conf}]" if conf and conf != "high" else f"[{f.kind}]"
    fields: list[tuple[str, str]] = []
    where = _where(f.ranks, f.metrics.get("hosts") or [])
    if where:
        fields.append(("where", where))
    if f.metrics.get("first_seen"):
        fields.append(("first seen", str(f.metrics["first_seen"])))
    fields += [("evidence", str(ev)) for ev in f.evidence[:5]]
    cascade = f.metrics.get("cascade")
    if cascade and cascade.get("count"):
        fields.append(("cascade", _cascade_line(cascade)))
    fields += [("also", str(rel["summary"])) for rel in f.metrics.get("related", [])[:3]]
    if f.metrics.get("reference"):
        fields.append(("known error", f"{f.metrics.get('signature')} ({f.metrics['reference']})"))
    if f.suggestion:
        fields.append(("fix", f.suggestion))
    lines = wrap(f"{label} {tag} {f.summary}", width, "", "  ")
    for name, value in fields:
        lines.extend(wrap(f"{name}: {value}", width, "  ", "    "))
    lines.append("")
    return lines


def _where(ranks: list[int], hosts: list[str]) -> str:
    """'ranks 3, 5 on host-a' - only what is known (no '-' or '?' placeholders)."""
    parts = []
    if ranks:
        parts.append(f"rank{'s' if len(ranks) > 1 else ''} {_short_list(ranks)}")
    if hosts:
        shown = ", ".join(hosts[:6]) + (f" ... ({len(hosts)} hosts)" if len(hosts) > 6 else "")
        parts.append(f"host{'s' if len(hosts) > 1 else ''} {shown}")
    return " on ".join(parts)


def _cascade_line(cascade: dict[str, Any]) -> str:
    """'3 later lines on 2 ranks: 2 nccl error, 1 c10d timeout' (the rank count only when ranks are known)."""
    count = int(cascade["count"])
    ranks = cascade.get("ranks") or []
    on = f" on {len(ranks)} rank{'s' if len(ranks) != 1 else ''}" if ranks else ""
    # the codes in words ('child_exit' -> 'child exit'): the JSON keeps the codes
    codes = ", ".join(f"{n} {str(c).replace('_', ' ')}" for c, n in list(cascade.get("by_code", {}).items())[:5])
    return f"{count} later line{'s' if count != 1 else ''}{on}" + (f": {codes}" if codes else "")


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
