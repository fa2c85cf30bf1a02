"""The memory analyzer's record: every rank's memory over time from the traces' "[memory]" events."""

from scope.analyzer_spec import AnalyzerSpec
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

ANALYZER = AnalyzerSpec(
    name="memory",
    analyze="scope.analyzers.memory:analyze",
    options=(DEVICE_MEMORY_GIB, HEADROOM_LOW_PCT),
    tables=("memory_ranks", "memory_steps", "memory_timeline"),
    kinds=("memory_headroom_low", "memory_growth", "memory_imbalance", "fragmentation"),
)
