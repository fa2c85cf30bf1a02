"""The critical_path analyzer's record: per step, the chain of work across ranks that set its length."""

from scope.analyzer_spec import AnalyzerSpec

ANALYZER = AnalyzerSpec(
    name="critical_path",
    analyze="scope.analyzers.critical_path.analyze:analyze",
    tables=("critical_path", "critical_path_shares", "critical_path_steps", "critical_path_whatif"),
    kinds=("critical_path",),
    reads_optrace=True,
)
