"""The comm_bound analyzer's record: steps whose exposed communication passes a share of the step, and why
(waiting for a late peer, launching, or the transfer itself); process groups with a slow link."""

from scope.analyzer_spec import AnalyzerSpec
from scope.options import Option

# Causes of a comm_bound finding (metrics["cause"]) that are someone else's problem (the waited-for rank's),
# not the network's: the link rules of the analyzers that name that rank hang the finding under theirs.
WAITING_CAUSES = frozenset({"waiting", "launching"})

COMM_BOUND_THRESHOLD = Option(
    "comm_bound_threshold",
    float,
    0.30,
    "exposed communication share of a step that makes it communication-bound",
    metavar="FRACTION",
    low=0,
    high=1,
)
LINK_GBPS = Option(
    "link_gbps", float, None, "nominal link bandwidth (GB/s) to compare bus bandwidth with", metavar="GB/S", low=1e-9
)

ANALYZER = AnalyzerSpec(
    name="comm_bound",
    analyze="scope.analyzers.comm_bound:analyze",
    reads=("breakdown", "budget"),
    options=(COMM_BOUND_THRESHOLD, LINK_GBPS),
    tables=("comm_bound_steps",),
    kinds=("comm_bound", "slow_collective"),
    panels=("collectives",),
)
