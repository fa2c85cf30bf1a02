"""The goodput analyzer's record: every second of the job's life in one bucket, across failures and restarts,
and the link that hangs the time a failure cost (work redone, a slow restart, time hung) under that failure."""

from scope.analyzer_spec import AnalyzerSpec
from scope.causality import Link
from scope.finding import FAILURE_KINDS, Finding
from scope.options import Option

MTBF_HOURS = Option(
    "mtbf_hours",
    float,
    None,
    "mean time between failures for the checkpoint cadence (default: observed in the job)",
    metavar="HOURS",
    # a positive, finite number of hours (NaN and infinity are outside any range)
    low=0.001,
    high=1e6,
)


def lost_time_under_failure(findings: list[Finding]) -> list[Link]:
    """Work redone and a slow restart are consequences of the failure that forced the restart; hung time is
    the hang the diagnosis named, seen from the progress side."""
    roots = [f for f in findings if f.kind in FAILURE_KINDS and not f.caused_by]
    if not roots:
        return []
    hang = next((f for f in roots if f.kind in ("hang", "timeout", "collective_mismatch", "missing_rank")), None)
    links = []
    for f in findings:
        if f.kind in ("rollback_loss", "restart_slow"):
            links.append(Link(roots[0], f, why="the restart after this failure"))
        elif f.kind == "no_progress":
            links.append(Link(hang or roots[0], f, why="the time the job hung before it failed"))
    return links


ANALYZER = AnalyzerSpec(
    name="goodput",
    analyze="scope.analyzers.goodput:analyze",
    options=(MTBF_HOURS,),
    tables=("goodput", "goodput_summary", "attempts", "checkpoints", "goodput_timeline"),
    # checkpoint_stall is budget's kind too: metrics["scope"] is "job" here, a step's share there
    kinds=(
        "checkpoint_stall",
        "rollback_loss",
        "restart_slow",
        "no_progress",
        "loss_not_finite",
        "step_time_drift",
        "steps_not_logged",
    ),
    link_rules=(lost_time_under_failure,),
    reads_optrace=True,
    panels=("goodput",),
)
