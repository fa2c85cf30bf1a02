"""One module per question; each returns findings plus its tables, never plots or prints."""

# Module paths of the analyzers `scope analyze` runs, in order. Each exposes NAME and
# analyze(ctx: scope.analysis.Context) -> scope.analysis.Result.
ANALYZERS: tuple[str, ...] = (
    "scope.analyzers.diagnose",
    "scope.analyzers.stall",
    "scope.analyzers.breakdown",
    "scope.analyzers.budget",
    "scope.analyzers.comm_streams",
    "scope.analyzers.collectives",
    "scope.analyzers.stragglers",
    "scope.analyzers.comm_bound",
    "scope.analyzers.pipeline",
    "scope.analyzers.contention",
    "scope.analyzers.mfu",
    "scope.analyzers.ops",
    "scope.analyzers.hta_compat",
    "scope.analyzers.whatif",
    "scope.analyzers.goodput",
)

# The analyzers that read operation-level timelines (store layout "optrace"); the others need
# kernel-level traces (matched collectives, kernels, CPU ops) and would misread coarse ops.
OPTRACE_ANALYZERS: frozenset[str] = frozenset(
    {"scope.analyzers.diagnose", "scope.analyzers.stall", "scope.analyzers.whatif", "scope.analyzers.goodput"}
)
