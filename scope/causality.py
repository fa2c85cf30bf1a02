"""Causal links between findings: which finding is a root problem and which are its consequences.

One cause often shows up in several analyzers: a straggler makes the others' steps communication-bound
(they wait for it), an imbalanced pipeline stage inflates the bubble, CPU contention on a shared host
inflates both. Reported side by side these read as several problems. `link_findings` gives every
finding a stable id, then applies the link rules in order; each rule is a small function that looks at
the findings and returns the links it sees:

- `Link(cause, effect)`: the effect gets `caused_by = cause.id`, the cause lists it in `explains`;
- `Link(cause, effect, merge=True)`: the two are the same problem seen twice; the effect is folded into
  the cause (its summary becomes an evidence line of the cause) and leaves the list.

A link whose cause is itself explained by another finding is moved up to that root, so every effect
points at a root (no chains to follow). The rules belong to the analyzers whose findings are the cause:
each declares its own in its record (`link_rules`, scope.analyzer_spec), and `scope.analyzers.link_rules()`
lists them all in the order they apply. The failure diagnosis keeps its own cascade (`metrics["cascade"]`
of its root finding); the performance rules never touch failure kinds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from scope.finding import SEVERITIES, Finding


@dataclass(frozen=True)
class Link:
    cause: Finding
    effect: Finding
    merge: bool = False
    why: str = ""
    # The effect is only an artifact of the cause (nothing to fix where it points): it becomes a note
    # (severity info, metrics["artifact"]), and so does every finding explained through it.
    artifact: bool = False


Rule = Callable[[list[Finding]], list[Link]]


def of_kind(findings: Iterable[Finding], *kinds: str) -> list[Finding]:
    """The findings of these kinds, in order (what most rules start from)."""
    return [f for f in findings if f.kind in kinds]


def assign_ids(findings: Sequence[Finding]) -> None:
    """`<kind>-<n>`, n counting that kind's findings in order: stable for one analysis of one input.
    An id an analyzer set itself is kept when it is unique."""
    seen: set[str] = set()
    counts: dict[str, int] = {}
    for f in findings:
        if f.id and f.id not in seen:
            seen.add(f.id)
            continue
        n = counts.get(f.kind, 0)
        while f"{f.kind}-{n}" in seen:
            n += 1
        counts[f.kind] = n + 1
        f.id = f"{f.kind}-{n}"
        seen.add(f.id)


def _root(f: Finding, by_id: dict[str, Finding]) -> Finding:
    hops = 0
    while f.caused_by and f.caused_by in by_id and hops < len(by_id):
        f, hops = by_id[f.caused_by], hops + 1
    return f


def _fold(cause: Finding, effect: Finding, why: str) -> None:
    """The same problem reported twice: keep the cause, its evidence naming what the other analyzer saw."""
    cause.evidence.append(f"also reported as {effect.kind}: {effect.summary}" + (f" ({why})" if why else ""))
    cause.metrics.setdefault("merged", []).append({"kind": effect.kind, "id": effect.id, "ranks": list(effect.ranks)})


def link_findings(findings: list[Finding], rules: Iterable[Rule] = ()) -> list[Finding]:
    """Ids, then the rules' links (scope.analyzers.link_rules() for all of them), in order; returns the
    findings left after merges (same order), linked in place."""
    assign_ids(findings)
    live = list(findings)
    by_id = {f.id: f for f in live}
    absorbed: dict[str, str] = {}  # merged-away id -> the id it was folded into
    for rule in dict.fromkeys(rules):  # each rule once, in order
        for link in rule([f for f in live if f.id not in absorbed]):
            _apply(link, by_id, absorbed, live)
    for f in live:  # effects of a finding merged away belong to what absorbed it
        while f.caused_by in absorbed:
            f.caused_by = absorbed[f.caused_by]
    by_id = {f.id: f for f in live}
    _demote_artifacts(live, by_id)
    _lift_to_roots(live, by_id)
    return live


def _apply(link: Link, by_id: dict[str, Finding], absorbed: dict[str, str], live: list[Finding]) -> None:
    cause, effect = _root(link.cause, by_id), link.effect
    if cause is effect or effect.id in absorbed or effect.caused_by:
        return
    if link.merge:
        _fold(cause, effect, link.why)
        absorbed[effect.id] = cause.id
        for other in live:
            if other.caused_by == effect.id:
                other.caused_by = cause.id
        live.remove(effect)
        return
    effect.caused_by = cause.id
    if link.why:
        effect.metrics.setdefault("caused_by_why", link.why)
    if link.artifact:
        effect.metrics["artifact"] = True


def _demote_artifacts(live: list[Finding], by_id: dict[str, Finding]) -> None:
    """Artifacts, and what is explained through one (waiting for an apparent straggler), become notes."""
    for f in live:
        chain, seen = f, 0
        while chain.caused_by in by_id and seen < len(by_id) and not chain.metrics.get("artifact"):
            chain, seen = by_id[chain.caused_by], seen + 1
        if chain.metrics.get("artifact"):
            f.metrics["artifact"] = True
            f.severity = "info"


def _lift_to_roots(live: list[Finding], by_id: dict[str, Finding]) -> None:
    """Every effect points at a root; every root's `explains` lists its effects, in finding order."""
    for f in live:
        if f.caused_by and f.caused_by not in by_id:
            f.caused_by = ""
        root = _root(f, by_id)
        f.caused_by = "" if root is f else root.id
    for f in live:
        f.explains = [g.id for g in live if g.caused_by == f.id]
        # A cause is at least as severe as what it explains (a note that explains a warning is the problem).
        worst = min((SEVERITIES.index(g.severity) for g in live if g.caused_by == f.id), default=len(SEVERITIES))
        if worst < SEVERITIES.index(f.severity):
            f.severity = SEVERITIES[worst]


# --- The finding tree: built here once, rendered by every view (text, Markdown, JSON links, dashboard) ---


@dataclass
class Node:
    """One finding and the findings it explains (its consequences), in finding order."""

    finding: Finding
    children: list[Node] = field(default_factory=list)

    def descendants(self) -> list[Finding]:
        """Every consequence below this node, depth first."""
        return [g for child in self.children for g in (child.finding, *child.descendants())]


def finding_tree(findings: Sequence[Finding]) -> list[Node]:
    """Roots are the findings no other finding explains (empty caused_by, or a cause not in this list);
    each consequence sits under the finding whose id it names. Order within a level is kept, so the
    analysis' order (most severe first, then time lost) is every view's order."""
    nodes = [Node(f) for f in findings]
    by_id = {n.finding.id: n for n in nodes if n.finding.id}
    roots: list[Node] = []
    for node in nodes:
        parent = by_id.get(node.finding.caused_by) if node.finding.caused_by else None
        if parent is None or parent is node or _descends(parent, node, by_id):
            roots.append(node)
        else:
            parent.children.append(node)
    return roots


def _descends(candidate: Node, ancestor: Node, by_id: dict[str, Node]) -> bool:
    """Is `candidate` under `ancestor` already (a cycle of caused_by links must not hide findings)?"""
    seen: set[str] = set()
    node: Node | None = candidate
    while node is not None and node.finding.caused_by and node.finding.caused_by not in seen:
        seen.add(node.finding.caused_by)
        node = by_id.get(node.finding.caused_by)
        if node is ancestor:
            return True
    return False


def count_roots(findings: Sequence[Finding]) -> tuple[int, int, int]:
    """(problems, effects, notes): root findings of severity warning or critical, the findings linked under
    a root, and the roots that are notes (severity info)."""
    tree = finding_tree(findings)
    notes = sum(1 for node in tree if node.finding.severity == "info")
    return len(tree) - notes, sum(len(node.descendants()) for node in tree), notes


def describe_counts(findings: Sequence[Finding]) -> str:
    """'1 problem, 3 effects, 1 note' (zero effects and notes left out)."""
    problems, effects, notes = count_roots(findings)
    parts = [f"{problems} problem{'s' if problems != 1 else ''}"]
    parts += [f"{effects} effect{'s' if effects != 1 else ''}"] if effects else []
    parts += [f"{notes} note{'s' if notes != 1 else ''}"] if notes else []
    return ", ".join(parts)
