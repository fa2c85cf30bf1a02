"""The replay: every node starts when all it waits for have ended, and lasts its (given) duration.

Columns are independent what-ifs (a step with its traced durations, the ideal step, a step with only
one worker's ops traced and the rest ideal, ...): one pass over the nodes replays all of them.
"""

from __future__ import annotations

import numpy as np

from analyzers.whatif.graph import StepGraph

# Columns replayed per pass: bounds memory at n_nodes x this many float64.
COLUMN_CHUNK = 2048


def replay(graph: StepGraph, durations: np.ndarray) -> np.ndarray:
    """Step time of each column of `durations` (n_nodes x n_columns): the latest end of any node."""
    n_cols = durations.shape[1]
    out = np.empty(n_cols)
    for lo in range(0, n_cols, COLUMN_CHUNK):
        out[lo : lo + COLUMN_CHUNK] = _replay_chunk(graph, durations[:, lo : lo + COLUMN_CHUNK])
    return out


def _replay_chunk(graph: StepGraph, durations: np.ndarray) -> np.ndarray:
    end = np.empty_like(durations)
    ptr, idx = graph.dep_ptr, graph.dep_idx
    for n in range(graph.n_nodes):
        lo, hi = ptr[n], ptr[n + 1]
        if hi == lo:
            end[n] = durations[n]
        elif hi - lo == 1:
            np.add(end[idx[lo]], durations[n], out=end[n])
        else:
            np.add(end[idx[lo:hi]].max(axis=0), durations[n], out=end[n])
    return end.max(axis=0) if len(end) else np.zeros(durations.shape[1])
