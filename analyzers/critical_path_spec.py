"""The critical_path analyzer's record: per step, the chain of work across ranks that set its length."""

from scope.analyzer_spec import AnalyzerSpec
from scope.causality import Link, of_kind
from scope.finding import Finding
from scope.options import Option

# Findings that name a rank whose work, when it sets the path, they already explain.
EXPLAINING_KINDS = ("straggler", "slow_collective", "pipeline_imbalance", "input_bound", "slow_worker")

# Building the graph costs ~15 µs of CPU per traced event (one pass per rank, in this process): past this
# many events in all the analyzer says so and steps aside, rather than add minutes to every analysis.
CRITICAL_PATH_MAX_EVENTS = Option(
    "critical_path_max_events",
    int,
    5_000_000,
    "build the cross-rank critical path only for runs of at most this many trace events (0: always)",
    metavar="N",
    low=0,
)


def path_set_by_named_rank(findings: list[Finding]) -> list[Link]:
    """The path's lead rank is one another finding names (a straggler, the stage that bounds a pipeline, an
    input-bound rank): that finding is why the path runs there."""
    links = []
    for path in of_kind(findings, "critical_path"):
        for cause in of_kind(findings, *EXPLAINING_KINDS):
            if set(path.ranks) & set(cause.ranks):
                links.append(Link(cause, path, why=f"the path runs mostly on rank(s) {sorted(path.ranks)}"))
                break
    return links


ANALYZER = AnalyzerSpec(
    name="critical_path",
    analyze="scope.analyzers.critical_path.analyze:analyze",
    options=(CRITICAL_PATH_MAX_EVENTS,),
    tables=("critical_path", "critical_path_shares", "critical_path_steps", "critical_path_whatif"),
    kinds=("critical_path",),
    link_rules=(path_set_by_named_rank,),
    reads_optrace=True,
)
