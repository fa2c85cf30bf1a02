"""Interleaved pipeline timelines (MegatronApp's aggregated Chrome trace) as critical-path graphs.

MegatronApp (OpenSQZ/MegatronApp, Apache-2.0) records per pipeline rank the forward and backward of
every (micro-batch, model chunk) as B/E pairs on one clock (`ts` µs, `pid` = pipeline rank, args
`iteration`, `microbatch`, `model_chunk`). No send or recv is recorded, so the pipeline's edges come
from the interleaved schedule's data flow: virtual stage v = chunk x P + rank; a forward waits for the
forward of the same micro-batch at v - 1, a backward for the backward at v + 1, and the last virtual
stage's backward for its own forward. Program order on each rank; the host's time between ops is each
node's residual lag (core.residuals), so a replay of the traced durations gives back the iteration.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from scope.analyzers.critical_path.core import P2P, PROGRAM, Builder, Graph

OPS = ("forward", "backward")


def read_aggregated(path: Path) -> pd.DataFrame:
    """(iteration, rank, op, microbatch, chunk, start_us, end_us) per forward/backward; a clear error
    naming the file when it is not such a trace."""
    try:
        events = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a readable JSON trace ({exc})") from exc
    if isinstance(events, dict):
        events = events.get("traceEvents", [])
    open_at: dict[tuple[int, str], float] = {}
    rows = []
    for e in events:
        if not isinstance(e, dict) or e.get("name") not in OPS or "ts" not in e:
            continue
        key = (int(e.get("pid", 0)), e["name"])
        if e.get("ph") == "B":
            open_at[key] = float(e["ts"])
        elif e.get("ph") == "E" and key in open_at:
            args = e.get("args", {})
            begin = open_at.pop(key)
            if "microbatch" in args and "model_chunk" in args:
                mb, chunk = int(args["microbatch"]), int(args["model_chunk"])
                rows.append((int(args.get("iteration", 0)), key[0], e["name"], mb, chunk, begin, float(e["ts"])))
    if not rows:
        raise ValueError(f"{path}: no forward/backward B/E pairs with microbatch and model_chunk")
    return pd.DataFrame(rows, columns=["iteration", "rank", "op", "microbatch", "chunk", "start_us", "end_us"])


def iteration_graph(ops: pd.DataFrame) -> Graph:
    """The graph of one iteration's ops (rows of `read_aggregated` for one iteration)."""
    pp = int(ops["rank"].max()) + 1
    chunks = int(ops["chunk"].max()) + 1
    b = Builder()
    node: dict[tuple[str, int, int], int] = {}
    for rank, lane in ops.sort_values(["rank", "start_us"]).groupby("rank", sort=True):
        prev = None
        for r in lane.itertuples(index=False):
            v = r.chunk * pp + r.rank
            n = b.node(int(rank), "compute", f"{r.op[0].upper()}{r.chunk}", r.op, r.start_us, r.end_us - r.start_us,
                       stage=int(rank))  # fmt: skip
            node[(r.op, v, r.microbatch)] = n
            if prev is not None:
                b.edge(prev, n, PROGRAM)
            prev = n
    last = chunks * pp - 1
    for (op, v, mb), n in node.items():
        src = node.get(("forward", v - 1, mb)) if op == "forward" else node.get(("backward", v + 1, mb))
        if op == "backward" and v == last:
            src = node.get(("forward", v, mb))
        if src is not None:
            b.edge(src, n, P2P)
    return b.build()
