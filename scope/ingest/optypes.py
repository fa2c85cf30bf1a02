"""Operation types of coarse (operation-level) timelines, as data: what each op is and whom it waits for.

One row per op type: kind (compute: its duration is its own; comm: it ends when its latest participant
has started plus a transfer time), the stream it runs on (ops of one stream run in order), the group of
workers it synchronizes, and the name attributions use (a send and its recv are one transfer).

Groups: "self" (no peer: TP-only collectives run inside one DP x PP worker), "pp_next" / "pp_prev" (the
matching recv / send on the adjacent stage of the same DP rank), "dp" (all DP ranks of one stage),
"embedding" (first and last stage of one DP rank: tied embeddings), "world" (every traced worker).
Source: Megatron-LM's schedules and optimizer (p2p_communication.py, distributed optimizer,
finalize_model_grads.py) as traced by ByteDance's NDTimeline, described in "Understanding Stragglers
in Large Model Training Using What-if Analysis" (OSDI'25) and its artifact's trace schema.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OpType:
    name: str
    kind: str  # "compute" | "comm"
    stream: str
    group: str
    attribute_as: str
    partner: str = ""  # for point-to-point ops: the op type at the other end


OP_TYPES: tuple[OpType, ...] = (
    OpType("forward-compute", "compute", "compute", "self", "forward-compute"),
    OpType("backward-compute", "compute", "compute", "self", "backward-compute"),
    OpType("optimizer", "compute", "compute", "self", "optimizer"),
    OpType("gc", "compute", "compute", "self", "gc"),
    # The clip step all-reduces the gradient norm over every rank: all workers leave it together.
    OpType("optimizer-clip-main-grad", "comm", "compute", "world", "optimizer-clip-main-grad"),
    OpType("forward-send", "comm", "pp-forward-send", "pp_next", "forward-pp-comm", "forward-recv"),
    OpType("forward-recv", "comm", "pp-forward-recv", "pp_prev", "forward-pp-comm", "forward-send"),
    OpType("backward-send", "comm", "pp-backward-send", "pp_prev", "backward-pp-comm", "backward-recv"),
    OpType("backward-recv", "comm", "pp-backward-recv", "pp_next", "backward-pp-comm", "backward-send"),
    OpType("grads-reduce-scatter", "comm", "dp-comm", "dp", "grads-reduce-scatter"),
    OpType("params-all-gather", "comm", "dp-comm", "dp", "params-all-gather"),
    OpType("embedding-grads-all-reduce", "comm", "dp-comm", "embedding", "embedding-grads-all-reduce"),
    OpType("layernorm-grads-all-reduce", "comm", "dp-comm", "self", "layernorm-grads-all-reduce"),
)

BY_NAME: dict[str, OpType] = {t.name: t for t in OP_TYPES}

# An op type not in the table: kept as compute on its own stream, so it still orders the worker's ops.
UNKNOWN_KIND = "compute"


def op_type(name: str) -> OpType:
    known = BY_NAME.get(name)
    if known is not None:
        return known
    return OpType(name, UNKNOWN_KIND, "compute", "self", name)
