"""One module per question; each returns findings plus its tables, never plots or prints."""

# Module paths of the analyzers `scope analyze` runs, in order. Each exposes NAME and
# analyze(ctx: scope.analysis.Context) -> scope.analysis.Result.
ANALYZERS: tuple[str, ...] = (
    "analyzers.diagnose",
    "analyzers.breakdown",
    "analyzers.comm_streams",
    "analyzers.collectives",
    "analyzers.stragglers",
    "analyzers.comm_bound",
    "analyzers.pipeline",
    "analyzers.contention",
    "analyzers.mfu",
    "analyzers.hta_compat",
    "analyzers.whatif",
)

# The analyzers that read operation-level timelines (store layout "optrace"); the others need
# kernel-level traces (matched collectives, kernels, CPU ops) and would misread coarse ops.
OPTRACE_ANALYZERS: frozenset[str] = frozenset({"analyzers.diagnose", "analyzers.whatif"})
