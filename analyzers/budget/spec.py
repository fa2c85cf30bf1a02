"""The budget analyzer's record: where every microsecond of each step went, by cause (analyzers/budget/analyze.py),
the findings built on it (analyzers/budget/findings.py), and the link that makes a rank slow to get its
data the cause of the others' waiting."""

from scope.analyzers.comm_bound_spec import WAITING_CAUSES

from scope.analyzer_spec import AnalyzerSpec
from scope.causality import Link
from scope.finding import Finding


def comm_bound_waits_for_input(findings: list[Finding]) -> list[Link]:
    """Peers waiting (comm_bound, cause waiting) for a rank that is slow to get its data: the input
    problem is the root."""
    links = []
    for cb in findings:
        if cb.kind != "comm_bound" or cb.metrics.get("cause") not in WAITING_CAUSES:
            continue
        waited = set(cb.metrics.get("waiting_for") or cb.ranks)  # older analyses named the waited-for rank
        for f in findings:
            slow_input = f.kind == "input_bound" or (
                f.kind == "straggler" and f.metrics.get("straggler_kind") == "input"
            )
            if slow_input and waited & set(f.ranks):
                links.append(Link(f, cb, why=f"the waiting is for rank(s) {sorted(waited & set(f.ranks))}"))
                break
    return links


ANALYZER = AnalyzerSpec(
    name="budget",
    analyze="scope.analyzers.budget.analyze:analyze",
    reads=("budget", "budget_evidence"),
    tables=("budget", "budget_evidence"),
    kinds=(
        "input_bound",
        "host_bound",
        "sync_bound",
        "checkpoint_stall",
        "unexplained_time",
        "straggler",  # a rank far slower than its peers to get its data (straggler_kind "input")
        "comm_inferred",  # a note: kernels outside the catalog counted as communication by their name and structure
    ),
    link_rules=(comm_bound_waits_for_input,),
    panels=("overview",),
)
