"""The critical path of a step across all ranks (issue 44): which chain of work set the step's length.

`core` holds the graph and its solver, `path` the path's segments, shares and what-if edits, `kineto`
the graph of a step built from the store's per-rank traces, `optrace` the graph of operation-level
timelines (the what-if engine's dependency model, so both analyses answer from one graph).
"""
