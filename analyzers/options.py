"""The analyzers' options, as data: name, type, default and help of each, by analyzer module.

Declared apart from the analyzers' code so `scope analyze --help` builds its flags without importing
pandas, and so the library and the dashboard can list, validate and document them. An analyzer reads
its options with `ctx.option(name, DEFAULT)`, where DEFAULT is the `default` declared here.
"""

from __future__ import annotations

from scope.options import Option

# pipeline schedules the pipeline analyzer models (analyzers/pipeline/structure.py)
SCHEDULES = ("gpipe", "1f1b", "interleaved", "zero-bubble")
_PP = "pipeline parallelism (what the traces cannot tell)"

PEAK_TFLOPS = Option("peak_tflops", float, None, "peak TFLOP/s of one device (for MFU)", metavar="TFLOPS", low=1e-9)
MODEL_FLOPS_PER_STEP = Option(
    "model_flops_per_step",
    float,
    None,
    "model FLOPs per step per rank (for MFU; default: FLOPs recorded in the trace)",
    metavar="FLOPS",
    low=1e-9,
)
COMM_BOUND_THRESHOLD = Option(
    "comm_bound_threshold",
    float,
    0.30,
    "exposed communication share of a step that makes it communication-bound",
    metavar="FRACTION",
    low=0,
    high=1,
)
LINK_GBPS = Option(
    "link_gbps", float, None, "nominal link bandwidth (GB/s) to compare bus bandwidth with", metavar="GB/S", low=1e-9
)
HTA_COMPAT = Option(
    "hta_compat", bool, False, "also compute HTA 0.5.0's temporal breakdown and comm-comp overlap per rank"
)
STRAGGLER_THRESHOLD = Option(
    "straggler_threshold",
    float,
    0.75,
    "flag ranks whose straggler score (0 to 1) is below this",
    metavar="SCORE",
    low=0,
    high=1,
)
STRAGGLER_MIN_LOSS = Option(
    "straggler_min_loss",
    float,
    0.15,
    "flag only ranks that cost at least this fraction of the median step (a 3x straggler costs 2)",
    metavar="FRACTION",
    low=0,
)

PP_BUBBLE_MARGIN = Option(
    "pp_bubble_margin",
    float,
    10.0,
    "report a bubble this many points above theory",
    "POINTS",
    group=_PP,
    low=0,
    high=100,
)
PP_IMBALANCE_RATIO = Option(
    "pp_imbalance_ratio",
    float,
    1.3,
    "report a stage with this much more compute than the others' median",
    "RATIO",
    group=_PP,
    low=1,
)
PP_OPTIONS = (
    Option(
        "pp_schedule", str, None, "pipeline schedule (default: inferred from the actions)", choices=SCHEDULES, group=_PP
    ),
    Option(
        "pp_microbatches",
        int,
        None,
        "micro-batches per step (default: forwards per stage and step)",
        "M",
        group=_PP,
        low=1,
    ),
    Option(
        "pp_stages",
        str,
        None,
        "ranks in stage order, for traces whose actions carry no stage index",
        "R0,R1,...",
        group=_PP,
    ),
    Option("pp_chunks", int, None, "stages (model chunks) per rank for interleaved schedules", "V", group=_PP, low=1),
    PP_BUBBLE_MARGIN,
    PP_IMBALANCE_RATIO,
)

MTBF_HOURS = Option(
    "mtbf_hours",
    float,
    None,
    "mean time between failures for the checkpoint cadence (default: observed in the job)",
    metavar="HOURS",
)

# analyzer module -> its options (analyzers not named here take none)
OPTIONS: dict[str, tuple[Option, ...]] = {
    "scope.analyzers.stragglers": (STRAGGLER_THRESHOLD, STRAGGLER_MIN_LOSS),
    "scope.analyzers.comm_bound": (COMM_BOUND_THRESHOLD, LINK_GBPS),
    "scope.analyzers.pipeline": PP_OPTIONS,
    "scope.analyzers.mfu": (PEAK_TFLOPS, MODEL_FLOPS_PER_STEP),
    "scope.analyzers.hta_compat": (HTA_COMPAT,),
    "scope.analyzers.goodput": (MTBF_HOURS,),
}


def all_options() -> list[Option]:
    return [option for options in OPTIONS.values() for option in options]
