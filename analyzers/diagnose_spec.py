"""The diagnose analyzer's record: why a run failed or hung (the post-mortem of its logs, dumps and stacks)."""

from scope.analyzer_spec import AnalyzerSpec
from scope.finding import FAILURE_KINDS

ANALYZER = AnalyzerSpec(
    name="diagnose",
    analyze="scope.analyzers.diagnose:analyze",
    tables=("fr", "hosts"),
    kinds=tuple(sorted(FAILURE_KINDS)),
    reads_optrace=True,
    panels=("failure",),
)
