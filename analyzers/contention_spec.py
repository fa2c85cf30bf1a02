"""The contention analyzer's record, and the links that make a CPU-contended host the cause of the pipeline
bubbles and apparent stragglers it explains (never of a failure, nor of a strong, persistent straggler)."""

from scope.analyzer_spec import AnalyzerSpec
from scope.causality import Link, of_kind
from scope.finding import FAILURE_KINDS, Finding

# A straggler this much slower than its peers (compute ratio), and persistent, is a fault of its own even on
# a contended host: sharing cores evenly slows every rank alike, it does not make one rank 1.5x slower.
CONTENTION_MAX_RATIO = 1.5


def _apparent_straggler(f: Finding) -> bool:
    """A straggler that contention alone can produce: transient, or only mildly slower than its peers."""
    ratio = float(f.metrics.get("step_ratio") or 0.0)
    return not f.metrics.get("persistent", True) or ratio < CONTENTION_MAX_RATIO


def _note_contention(straggler: Finding, hc: Finding) -> None:
    """A strong, persistent straggler on a contended host stays the root; the contention is said beside it."""
    line = (
        "host contention noted beside it: its host is CPU-contended, which slows every rank there alike; "
        "it does not make one rank persistently this much slower than its peers"
    )
    if line not in straggler.evidence:
        straggler.evidence.insert(0, line)  # first: the text report shows the first few
        straggler.metrics["host_contention"] = hc.id


def contention_explains(findings: list[Finding]) -> list[Link]:
    """Host CPU contention explains pipeline bubbles no imbalance explains, apparent stragglers on its host,
    and the communication-bound steps spent waiting for them; never a strong, persistent straggler."""
    links = []
    for hc in of_kind(findings, "host_contention"):
        hosted = set(hc.ranks)
        for f in findings:
            if f is hc or f.kind in FAILURE_KINDS or f.caused_by:
                continue
            if f.kind == "pipeline_bubble" and (not f.ranks or hosted & set(f.ranks)):
                links.append(Link(hc, f, why="stages shared the host's cores"))
            elif f.kind == "straggler" and set(f.ranks) <= hosted and _apparent_straggler(f):
                why = "a rank descheduled on a shared host, not slower hardware"
                links.append(Link(hc, f, why=why, artifact=True))
            elif f.kind == "straggler" and set(f.ranks) & hosted:
                _note_contention(f, hc)
        # Waiting for an apparent straggler is contention too (the link is lifted to the root by causality).
    return links


ANALYZER = AnalyzerSpec(
    name="contention",
    analyze="scope.analyzers.contention:analyze",
    kinds=("host_contention",),
    link_rules=(contention_explains,),
)
