"""The pipeline analyzer's record, its options (what the traces cannot tell about pipeline parallelism), and
the links that make an imbalanced stage the cause of the bubble and of the straggler on that stage."""

from scope.analyzer_spec import AnalyzerSpec
from scope.causality import Link, of_kind
from scope.finding import Finding
from scope.options import Option

# pipeline schedules the pipeline analyzer models (analyzers/pipeline/structure.py)
SCHEDULES = ("gpipe", "1f1b", "interleaved", "zero-bubble")
_PP = "pipeline parallelism (what the traces cannot tell)"
# A bubble is a consequence of the imbalance when unequal stage compute explains this share of its excess.
BUBBLE_EXPLAINED_SHARE = 0.5

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


def straggler_is_bound_stage(findings: list[Finding]) -> list[Link]:
    """A compute straggler on the stage that bounds an imbalanced pipeline is the imbalance itself."""
    links = []
    for st in of_kind(findings, "straggler"):
        if st.metrics.get("straggler_kind", "compute") != "compute":
            continue
        for imb in of_kind(findings, "pipeline_imbalance"):
            if set(st.ranks) & set(imb.ranks):
                links.append(Link(imb, st, merge=True, why="the bound stage computes longer than its peers"))
                break
    return links


def bubble_from_imbalance(findings: list[Finding]) -> list[Link]:
    """A pipeline bubble whose excess is mostly unequal stage compute is the imbalance's consequence."""
    links = []
    for bubble in of_kind(findings, "pipeline_bubble"):
        excess = float(bubble.metrics.get("excess_pct") or 0.0)
        imbalance_pts = float(bubble.metrics.get("imbalance_pts") or 0.0)
        if excess <= 0 or imbalance_pts < BUBBLE_EXPLAINED_SHARE * excess:
            continue
        for imb in of_kind(findings, "pipeline_imbalance"):
            if set(imb.ranks) & set(bubble.ranks) or not bubble.ranks:
                links.append(Link(imb, bubble, why=f"{imbalance_pts:.0f} of {excess:.0f} excess points"))
                break
    return links


ANALYZER = AnalyzerSpec(
    name="pipeline",
    analyze="scope.analyzers.pipeline:analyze",
    reads=("pipeline_candidates",),
    options=PP_OPTIONS,
    tables=("pipeline", "pipeline_p2p", "pipeline_summary"),
    kinds=("pipeline_bubble", "pipeline_imbalance"),
    link_rules=(straggler_is_bound_stage, bubble_from_imbalance),
    panels=("overview", "timeline"),
)
