"""Synthetic operation-level timelines grown from a real one, with a chosen cause of slowdown.

`tile_dp` widens a job by repeating its DP ranks (a DP2 x PP4 trace becomes DP256 x PP4 = 1,024
workers). `synthesize` takes one step of a trace as the schedule, gives every op a new duration (the
mean of its type in the template, times a factor per cause), replays the schedule and writes the ops
back as a tracer would see them: compute at its replayed start; communication from when its last
participant arrived (the Chrome timeline form, waits trimmed). Used by the scale benchmark and the
tests of the cause classes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scope.analyzers.whatif.graph import StepGraph, build, prepare
from scope.analyzers.whatif.replay import node_ends

CAUSES = ("none", "slow_worker", "last_stage", "first_stage", "sequence_length")


def tile_dp(ops: pd.DataFrame, factor: int) -> pd.DataFrame:
    """The job with its DP ranks repeated `factor` times (DP collectives span all copies)."""
    ops = ops.astype({"dp_rank": "int64", "stage": "int64"})
    dp = int(ops["dp_rank"].max()) + 1
    copies = [ops.assign(dp_rank=ops["dp_rank"] + k * dp) for k in range(factor)]
    out = pd.concat(copies, ignore_index=True)
    out["rank"] = out["stage"] * dp * factor + out["dp_rank"]
    return out


def synthesize(
    ops: pd.DataFrame, n_steps: int, pp: int, cause: str = "none", seed: int = 0, jitter: float = 0.02
) -> pd.DataFrame:
    """`n_steps` steps on the schedule of the first step of `ops`, slowed by `cause` (one of CAUSES)."""
    if cause not in CAUSES:
        raise ValueError(f"cause must be one of {CAUSES}, got {cause!r}")
    prepared = prepare(ops)
    first = int(prepared["step"].min())
    g = build(prepared, [first], pp)
    rng = np.random.default_rng(seed)
    compute = ~g.node_comm
    factor = np.ones((g.n_nodes, n_steps))
    factor[compute] = rng.lognormal(0.0, jitter, size=(int(compute.sum()), n_steps))
    factor *= _cause_factor(g, cause, n_steps, rng)
    durations = _balanced(g)[:, None] * factor
    end = node_ends(g, durations)
    start = end - durations
    return _as_ops(g, start, end, first)


def _balanced(g: StepGraph) -> np.ndarray:
    """Every node at the mean of its type in the template: a job with no cause of slowdown."""
    types = pd.Series(g.node_type)
    return types.map(pd.Series(g.duration[:, 0]).groupby(types).mean()).to_numpy()


def _cause_factor(g: StepGraph, cause: str, n_steps: int, rng: np.random.Generator) -> np.ndarray:
    """Multipliers on compute durations (n_nodes x n_steps) for the cause."""
    out = np.ones((g.n_nodes, n_steps))
    if cause == "none":
        return out
    assert g.op_frame is not None and g.op_node is not None
    frame = g.op_frame.assign(node=g.op_node)
    frame = frame[~g.node_comm[frame["node"]] & frame["optype"].isin(["forward-compute", "backward-compute"])]
    if cause == "slow_worker":  # one worker's GPU at half speed
        out[frame.loc[frame["worker"] == frame["worker"].min(), "node"].to_numpy()] = 2.0
    elif cause in ("last_stage", "first_stage"):  # that stage holds more layers than the others
        # 1F1B hides a heavy first stage far better than a heavy last one (whose F and B run back to back)
        stage, factor = (frame["stage"].max(), 1.5) if cause == "last_stage" else (frame["stage"].min(), 4.0)
        out[frame.loc[frame["stage"] == stage, "node"].to_numpy()] = factor
    else:  # sequence_length: each DP rank's micro-batch has its own length, the same on every stage
        mb = frame["mb_id"] if "mb_id" in frame.columns else frame["occurrence"]
        key = frame["dp_rank"].to_numpy(np.int64) * 4096 + mb.to_numpy(np.int64)
        uniq, inv = np.unique(key, return_inverse=True)
        lengths = rng.lognormal(0.0, 0.35, size=(len(uniq), n_steps))
        out[frame["node"].to_numpy()] = lengths[inv]
    return out


def _as_ops(g: StepGraph, start: np.ndarray, end: np.ndarray, first_step: int) -> pd.DataFrame:
    assert g.op_frame is not None and g.op_node is not None
    frame = g.op_frame
    n_ops, n_steps = len(frame), start.shape[1]
    node = np.tile(g.op_node, n_steps)
    col = np.repeat(np.arange(n_steps), n_ops)
    out = pd.DataFrame(
        {
            "dp_rank": np.tile(frame["dp_rank"].to_numpy(), n_steps),
            "stage": np.tile(frame["stage"].to_numpy(), n_steps),
            "rank": np.tile(frame["rank"].to_numpy() if "rank" in frame else frame["worker"].to_numpy(), n_steps),
            "step": first_step + col,
            "optype": np.tile(frame["optype"].to_numpy(), n_steps),
            "start_ts": start[node, col],
            "duration": end[node, col] - start[node, col],
            "seq_id": np.tile(frame["seq_id"].to_numpy() if "seq_id" in frame else frame["occurrence"], n_steps),
        }
    )
    for c in ("mc", "gmc", "mb_id"):
        out[c] = np.tile(frame[c].to_numpy(), n_steps) if c in frame else -1
    return out
