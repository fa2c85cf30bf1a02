"""Findings that appeared, disappeared or changed severity between two runs.

Findings match by kind and the ranks they name: a straggler on rank 2 in both runs is the same
finding; a straggler that moved from rank 2 to rank 5 is one that disappeared and one that appeared.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scope.finding import SEVERITIES, Finding


@dataclass
class FindingChanges:
    appeared: list[Finding] = field(default_factory=list)
    disappeared: list[Finding] = field(default_factory=list)
    changed: list[tuple[Finding, Finding]] = field(default_factory=list)  # (in A, in B): other severity
    kept: list[tuple[Finding, Finding]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        def short(f: Finding) -> dict[str, Any]:
            return {"kind": f.kind, "severity": f.severity, "ranks": list(f.ranks), "summary": f.summary}

        return {
            "appeared": [short(f) for f in self.appeared],
            "disappeared": [short(f) for f in self.disappeared],
            "changed_severity": [{"a": short(x), "b": short(y)} for x, y in self.changed],
            "unchanged": [short(y) for _, y in self.kept],
        }


def _key(f: Finding) -> tuple[str, tuple[int, ...]]:
    return f.kind, tuple(sorted(int(r) for r in f.ranks))


def compare_findings(a: list[Finding], b: list[Finding]) -> FindingChanges:
    out = FindingChanges()
    by_key_a: dict[tuple[str, tuple[int, ...]], Finding] = {}
    for f in a:
        by_key_a.setdefault(_key(f), f)
    seen: set[tuple[str, tuple[int, ...]]] = set()
    for f in b:
        key = _key(f)
        if key in seen:
            continue
        seen.add(key)
        old = by_key_a.get(key)
        if old is None:
            out.appeared.append(f)
        elif old.severity != f.severity:
            out.changed.append((old, f))
        else:
            out.kept.append((old, f))
    out.disappeared = [f for k, f in by_key_a.items() if k not in seen]
    rank = SEVERITIES.index
    out.appeared.sort(key=lambda f: rank(f.severity))
    out.disappeared.sort(key=lambda f: rank(f.severity))
    return out
