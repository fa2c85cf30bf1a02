"""The critical path of a step across all ranks (issue 44): which chain of work set the step's length.

`core` holds the graph and its solver, `path` the path's segments, shares and what-if edits, `kineto`
one rank's nodes and edges from the store's events, `assemble` a step's graph across ranks (joined at the
matched collectives), `single` HTA's single-rank window and breakdown, `optrace` and `timeline` the
graphs of operation-level timelines (the what-if engine's model, so both analyses answer from one
graph), `megatron_pipeline` MegatronApp's interleaved pipeline timelines, `classes` the op classes,
`analyze` the analyzer.
"""
