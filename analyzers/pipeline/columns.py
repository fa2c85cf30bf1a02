"""The pipeline analyzer's per-rank tables and interval sets: what pipeline_rank (the map stage) hands to
pipeline_phases (its accounting), in a module of their own so neither imports the other back."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scope.rankpass import intervals as iv

COMPUTE_OPS = ("F", "B", "I", "W")
BACKWARD_OPS = ("B", "I", "W")
ACTION_COLUMNS = [
    "rank",
    "step",
    "stage",
    "op",
    "mb",
    "start_ns",
    "end_ns",
    "cstart_ns",
    "cend_ns",
    "compute_us",
    "source",
]
STEP_COLUMNS = [
    "rank",
    "step",
    "start_ns",
    "end_ns",
    "steady_start_ns",
    "cooldown_start_ns",
    "step_us",
    "compute_us",
    "other_comm_us",
    "bubble_us",
    "p2p_wait_us",
    "warmup_us",
    "steady_us",
    "cooldown_us",
    "warmup_len_us",
    "steady_len_us",
    "cooldown_len_us",
]
WAIT_COLUMNS = ["rank", "step", "direction", "wait_us", "transfers"]


@dataclass
class RankSets:
    compute: iv.Spans
    other_comm: iv.Spans  # exposed non-pipeline communication
    p2p_starts: np.ndarray  # one row per point-to-point transfer (or enqueue op)
    p2p_ends: np.ndarray
    p2p_kind: np.ndarray  # "send" | "recv"
    p2p_transfer: np.ndarray  # True for the transfer itself, False for its enqueue op
