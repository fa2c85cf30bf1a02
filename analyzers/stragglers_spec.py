"""The stragglers analyzer's record, and the links that make a straggler the cause of others' waiting.

A straggler makes the other ranks' steps communication-bound: they wait for it at every collective. And a
rank whose communication path is slow slows every transfer that runs through it (a ring or a tree is as
fast as its slowest link).
"""

from scope.analyzers.comm_bound_spec import WAITING_CAUSES

from scope.analyzer_spec import AnalyzerSpec
from scope.causality import Link, of_kind
from scope.finding import Finding
from scope.options import Option

STRAGGLER_KINDS = ("straggler", "slow_collective")

# What to look at, per class of a straggler: the post-mortem's and the live detector's advice (here, not in the
# analyzer, whose pandas import cost the live monitor 0.3 CPU-s at its first finding: 10 runs of its looks).
STRAGGLER_SUGGESTIONS = {
    "compute": "compare this rank's hardware and inputs with its peers (clocks and throttling, other "
    "processes on the host, a larger data shard or longer sequences)",
    "host": "the rank's host leaves its device idle: look at data loading (workers, pinned memory) "
    "and CPU launch overhead on that host",
    "communication": "the rank starts its collectives late: check its communication hooks, its NIC "
    "and links, and what runs before each collective on that rank",
}

STRAGGLER_THRESHOLD = Option(
    "straggler_threshold",
    float,
    0.75,
    "flag ranks whose straggler score (0 to 1) is below this",
    metavar="SCORE",
    low=0,
    high=1,
)
STRAGGLER_MIN_LOSS = Option(
    "straggler_min_loss",
    float,
    0.15,
    "flag only ranks that cost at least this fraction of the median step (a 3x straggler costs 2)",
    metavar="FRACTION",
    low=0,
)


def comm_bound_waits_for_straggler(findings: list[Finding]) -> list[Link]:
    """Communication-bound steps spent mostly waiting for a named straggler, slow link or the stage that bounds
    a pipeline are that finding's consequence."""
    links = []
    for cb in of_kind(findings, "comm_bound"):
        if cb.metrics.get("cause") not in WAITING_CAUSES:
            continue
        waited = set(cb.metrics.get("waiting_for") or cb.ranks)  # older analyses named the waited-for rank
        for st in of_kind(findings, *STRAGGLER_KINDS, "pipeline_imbalance"):
            if waited & set(st.ranks):
                links.append(Link(st, cb, why=f"the waiting is for rank(s) {sorted(waited & set(st.ranks))}"))
                break
    return links


def transfer_through_slow_link(findings: list[Finding]) -> list[Link]:
    """Transfer-bound steps while one rank's communication path is named slow: every collective's transfer
    runs through that path (a ring or tree is as fast as its slowest link), so the slow path is the cause."""
    links = []
    slow = [f for f in of_kind(findings, "slow_collective") if f.ranks]
    for cb in of_kind(findings, "comm_bound"):
        if cb.metrics.get("cause") == "transfer" and slow:
            links.append(Link(slow[0], cb, why=f"the transfer runs through rank(s) {sorted(slow[0].ranks)}"))
    return links


ANALYZER = AnalyzerSpec(
    name="stragglers",
    analyze="scope.analyzers.stragglers:analyze",
    reads=("breakdown", "pipeline_candidates"),
    options=(STRAGGLER_THRESHOLD, STRAGGLER_MIN_LOSS),
    tables=("straggler_scores", "straggler_steps"),
    kinds=STRAGGLER_KINDS,
    link_rules=(comm_bound_waits_for_straggler, transfer_through_slow_link),
    panels=("heatmap",),
)
