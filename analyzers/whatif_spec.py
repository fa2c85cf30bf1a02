"""The whatif analyzer's record: each step replayed without a slow worker, stage, micro-batch or op type."""

from scope.analyzer_spec import AnalyzerSpec

ANALYZER = AnalyzerSpec(
    name="whatif",
    analyze="scope.analyzers.whatif:analyze",
    tables=("whatif_summary", "whatif_workers", "whatif_attribution", "whatif_attribution_steps", "whatif_steps"),
    kinds=("slow_worker", "stage_imbalance", "data_imbalance", "slow_op_type"),
    reads_optrace=True,
    panels=("heatmap",),
)
