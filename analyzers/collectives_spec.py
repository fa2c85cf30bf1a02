"""The collectives analyzer's record: collectives matched across ranks, and the ones ranks disagree on."""

from scope.analyzer_spec import AnalyzerSpec

ANALYZER = AnalyzerSpec(
    name="collectives",
    analyze="scope.analyzers.collectives:analyze",
    tables=("collectives", "collective_ranks", "collective_groups"),
    kinds=("collective_mismatch",),
    panels=("collectives", "timeline"),
)
