"""The per-rank pass: the tables made from each rank's events, one read of the rank for all of them.

A per-rank table is declared data (spec.RankTable): its name, its columns, the event columns it reads, the
other per-rank products it reads (made first, for the same rank, in the same worker) and whether it reads
the cross-rank matching. The registry (registry.TABLES) lists them; an analyzer's record names the tables it
reads (AnalyzerSpec.reads); the pass (run.py) makes those and what they need, once per analysis, in
dependency order, on the run's engine; the Context hands them out (Context.table).

Adding a table is one module under tables/ and one line in registry.py. The rest of this room is what the
tables are made of: interval arithmetic (intervals.py), the collectives matched across ranks (match.py),
the step timeline (timeline.py), the step budget (budget.py, budget_evidence.py), the operators' counts
(op_counts.py), the communication streams (streams.py) and the Arrow batches the ranks' parts travel in
(batches.py). Nothing here imports scope.analysis or an analyzer: the analysis and the analyzers import
this room, never the other way round.
"""
