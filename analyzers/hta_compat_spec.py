"""The hta_compat analyzer's record: HTA 0.5.0's temporal breakdown and comm-comp overlap, on request."""

from scope.analyzer_spec import AnalyzerSpec
from scope.options import Option

HTA_COMPAT = Option(
    "hta_compat", bool, False, "also compute HTA 0.5.0's temporal breakdown and comm-comp overlap per rank"
)

ANALYZER = AnalyzerSpec(
    name="hta_compat", analyze="scope.analyzers.hta_compat:analyze", options=(HTA_COMPAT,), tables=("hta_compat",)
)
