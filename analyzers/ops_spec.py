"""The ops analyzer's record: per op and kernel name, time per step (what `scope compare` diffs), and the host
budget of each rank's training thread."""

from scope.analyzer_spec import AnalyzerSpec

ANALYZER = AnalyzerSpec(
    name="ops",
    analyze="scope.analyzers.ops:analyze",
    reads=("op_stats", "host_budget"),
    tables=("op_stats", "host_budget"),
)
