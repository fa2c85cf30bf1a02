"""The memory analyzer's record: every rank's memory over time from the traces' "[memory]" events."""

from scope.analyzer_spec import AnalyzerSpec
from scope.causality import Link, of_kind
from scope.finding import Finding
from scope.options import Option

DEVICE_MEMORY_GIB = Option(
    "device_memory_gib",
    float,
    None,
    "capacity of one device in GiB, for headroom (default: the trace's deviceProperties)",
    metavar="GIB",
    low=1e-6,
)
HEADROOM_LOW_PCT = Option(
    "memory_headroom_pct",
    float,
    10.0,
    "report a rank whose peak reserved memory leaves less than this share of its device free",
    metavar="PCT",
    low=0.0,
    high=100.0,
)


def memory_explains(findings: list[Finding]) -> list[Link]:
    """An OOM's unallocated reserve (its message's figures) is the OOM seen closer: it hangs under the
    failure it explains, so the failure stays the root. A leaking rank explains the imbalance it makes."""
    links = []
    ooms = of_kind(findings, "oom")
    for frag in of_kind(findings, "fragmentation"):
        if frag.metrics.get("source") != "oom_message":
            continue
        oom = next((o for o in ooms if set(o.ranks) & set(frag.ranks)), ooms[0] if ooms else None)
        if oom is not None:
            links.append(Link(oom, frag, why="the OOM message: reserved by PyTorch but unallocated"))
    for growth in of_kind(findings, "memory_growth"):
        for imbalance in of_kind(findings, "memory_imbalance"):
            if imbalance.ranks and set(imbalance.ranks) <= set(growth.ranks):
                links.append(Link(growth, imbalance, why="the rank whose memory grows each step peaks highest"))
    return links


ANALYZER = AnalyzerSpec(
    name="memory",
    analyze="scope.analyzers.memory:analyze",
    reads=("pipeline_candidates",),
    options=(DEVICE_MEMORY_GIB, HEADROOM_LOW_PCT),
    tables=(
        "memory_ranks",
        "memory_steps",
        "memory_timeline",
        "memory_peak_allocators",
        "memory_snapshots",
        "memory_peak_sites",
        "memory_peak_flame",
        "memory_snapshot_timeline",
        "oom_figures",
    ),
    kinds=("memory_headroom_low", "memory_growth", "memory_imbalance", "fragmentation"),
    link_rules=(memory_explains,),
    panels=("memory",),
)
