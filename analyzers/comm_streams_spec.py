"""The comm_streams analyzer's record: per rank and communication stream, busy and overlapped time."""

from scope.analyzer_spec import AnalyzerSpec

ANALYZER = AnalyzerSpec(
    name="comm_streams",
    analyze="scope.analyzers.comm_streams:analyze",
    reads=("comm_streams",),
    tables=("comm_streams",),
)
