"""The breakdown analyzer's record: per rank and step, compute, exposed and overlapped communication, idle."""

from scope.analyzer_spec import AnalyzerSpec

ANALYZER = AnalyzerSpec(
    name="breakdown",
    analyze="scope.analyzers.breakdown:analyze",
    reads=("breakdown",),
    tables=("breakdown",),
    panels=("heatmap", "timeline"),
)
