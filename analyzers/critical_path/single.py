"""One rank's critical path inside a window (an annotation's instance), as HTA's single-rank analysis
scopes it: the CPU events inside the window and the GPU ops they launched.

HTA's breakdown classes (`bound_by` of its path's edges) from the path's segments:
- cpu_bound: time on CPU threads (ops and the host's gaps between them);
- gpu_compute_bound: GPU kernels, copies and sets;
- gpu_kernel_kernel_overhead: a stream's gap before a kernel that waited for the previous one;
- gpu_kernel_launch_overhead: a launch call on the path into its kernel, and the launch's latency.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scope.analyzers.critical_path.assemble import PARTICIPANT_COLUMNS, step_graph
from scope.analyzers.critical_path.core import Graph, Solution, solve
from scope.analyzers.critical_path.kineto import rank_part
from scope.analyzers.critical_path.path import segments

from scope.ingest.classify import GPU_CATS


def window_events(events: pd.DataFrame, start_ns: int, end_ns: int) -> pd.DataFrame:
    """The window's CPU events and the GPU ops launched from them, all as step 0."""
    on_gpu = events["cat"].astype(str).isin(GPU_CATS).to_numpy()
    ts, end = events["ts_ns"].to_numpy(), (events["ts_ns"] + events["dur_ns"]).to_numpy()
    cpu = ~on_gpu & (ts >= start_ns) & (end <= end_ns) & (events["kind"] != "other").to_numpy()
    corr = events["correlation"].to_numpy()
    launched = set(corr[cpu & (events["kind"] == "runtime").to_numpy() & (corr > 0)].tolist())
    gpu = on_gpu & np.isin(corr, list(launched))
    window = cpu & (ts == start_ns) & (end == end_ns) & (events["kind"] == "annotation").to_numpy()
    out = events[(cpu & ~window) | gpu].copy()
    out["step"] = 0
    return out


def window_path(events: pd.DataFrame, rank: int, start_ns: int, end_ns: int) -> tuple[Graph, Solution]:
    part = rank_part(window_events(events, start_ns, end_ns), rank)
    g = step_graph([part], pd.DataFrame(columns=PARTICIPANT_COLUMNS), 0)
    return g, solve(g)


def hta_breakdown(g: Graph, sol: Solution) -> pd.Series:
    """The path's µs by HTA's bound_by classes."""
    seg = segments(g, sol)
    on_gpu = seg["lane"].astype(str).str.startswith("stream")
    launch_gap = seg["op"] == "(launch gap)"
    into_kernel = seg["cls"].eq("launch") & launch_gap.shift(-1, fill_value=False)
    bound = np.select(
        [launch_gap | into_kernel, on_gpu & seg["cls"].eq("gap"), on_gpu],
        ["gpu_kernel_launch_overhead", "gpu_kernel_kernel_overhead", "gpu_compute_bound"],
        "cpu_bound",
    )
    return seg.groupby(bound)["us"].sum()
