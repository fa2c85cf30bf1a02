"""The critical_path analyzer's record: per step, the chain of work across ranks that set its length."""

from scope.analyzer_spec import AnalyzerSpec
from scope.options import Option

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

ANALYZER = AnalyzerSpec(
    name="critical_path",
    analyze="scope.analyzers.critical_path.analyze:analyze",
    options=(CRITICAL_PATH_MAX_EVENTS,),
    tables=("critical_path", "critical_path_shares", "critical_path_steps", "critical_path_whatif"),
    kinds=("critical_path",),
    reads_optrace=True,
)
