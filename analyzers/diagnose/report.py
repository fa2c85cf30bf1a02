"""The diagnosis as data (JSON) and as text for a terminal."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scope import __version__
from scope.finding import Finding

FR_COLUMNS = ["pg", "pg_desc", "rank", "last_enqueued", "last_completed", "last_enqueued_op", "role"]
HOST_COLUMNS = ["host", "ranks", "n_ranks", "status", "anomalies", "first_anomaly", "codes"]


@dataclass
class DiagnoseReport:
    path: str
    findings: list[Finding] = field(default_factory=list)
    hosts: list[dict[str, Any]] = field(default_factory=list)
    fr: list[dict[str, Any]] = field(default_factory=list)
    nccl: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0

    @property
    def failed(self) -> bool:
        return any(f.severity == "critical" for f in self.findings)

    def to_json(self) -> dict[str, Any]:
        return {
            "scope_version": __version__,
            "path": self.path,
            "verdict": self.verdict(),
            "findings": [f.to_dict() for f in self.findings],
            "hosts": self.hosts,
            "fr": self.fr,
            "nccl": self.nccl,
            "inputs": self.inputs,
            "warnings": self.warnings,
            "elapsed_s": round(self.elapsed_s, 3),
        }

    def verdict(self) -> str:
        if not self.findings:
            return "no failure found"
        return self.findings[0].summary

    def render_text(self, max_findings: int = 8) -> str:
        out = [f"scope diagnose {self.path}  ({self._inputs_line()}, {self.elapsed_s:.1f} s)", ""]
        if not self.findings:
            out.append("No failure found.")
        for i, f in enumerate(self.findings[:max_findings]):
            out.extend(_finding_lines(f, root=i == 0))
        if len(self.findings) > max_findings:
            out.append(f"... {len(self.findings) - max_findings} more finding(s) in --json")
        if self.nccl.get("nranks") or self.nccl.get("transports"):
            out.append(_nccl_line(self.nccl))
        for w in self.warnings[:10]:
            out.append(f"warning: {w}")
        return "\n".join(out).rstrip() + "\n"

    def _inputs_line(self) -> str:
        i = self.inputs
        parts = [f"{i.get('logs', 0)} logs", f"{i.get('dumps', 0)} FR dumps"]
        if i.get("ranks"):
            parts.append(f"{i['ranks']} ranks")
        if i.get("hosts"):
            parts.append(f"{i['hosts']} hosts")
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
