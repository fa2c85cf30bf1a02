"""The mfu analyzer's record: model FLOPs utilization per rank and step."""

from scope.analyzer_spec import AnalyzerSpec
from scope.options import Option

PEAK_TFLOPS = Option("peak_tflops", float, None, "peak TFLOP/s of one device (for MFU)", metavar="TFLOPS", low=1e-9)
MODEL_FLOPS_PER_STEP = Option(
    "model_flops_per_step",
    float,
    None,
    "model FLOPs per step per rank (for MFU; default: FLOPs recorded in the trace)",
    metavar="FLOPS",
    low=1e-9,
)

ANALYZER = AnalyzerSpec(
    name="mfu",
    analyze="scope.analyzers.mfu:analyze",
    reads=("breakdown", "trace_flops"),
    options=(PEAK_TFLOPS, MODEL_FLOPS_PER_STEP),
    tables=("mfu",),
)
