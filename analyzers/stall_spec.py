"""The stall analyzer's record: a hang the run survived (the watchdog fired, then the ranks went on)."""

from scope.analyzer_spec import AnalyzerSpec

ANALYZER = AnalyzerSpec(name="stall", analyze="scope.analyzers.stall:analyze", kinds=("stall",), reads_optrace=True)
