"""The rank's operators and kernels counted (calls and ns per kind, name and launching operator in its
profiled steps) and its training thread's host budget (scope/rankpass/op_counts.py); stays in the worker,
read by op_stats and host_budget."""

from __future__ import annotations

from dataclasses import dataclass

from scope.rankpass import intervals as iv
from scope.rankpass.budget import Columns
from scope.rankpass.op_counts import OPS_EVENT_COLUMNS, fold_columns, host_budget_columns, rank_count_columns
from scope.rankpass.spec import RankTable
from scope.rankpass.view import RankView


@dataclass
class OpProducts:
    counts: Columns | None  # fold_columns: with the rank counted once and its own time per step; None: no rows
    host_budget: Columns | None  # a GPU rank's; None otherwise
    rank_steps: int  # its profiled steps (a rank without any is not counted at all)


def make(view: RankView) -> OpProducts:
    windows = view.value("windows")
    # with profiled steps, the windows are the rank's steps (else one window, step -1, over its trace)
    rank_steps = 0 if not view.has_steps else int(iv.distinct(windows["step"].to_numpy()).size)
    if not rank_steps:
        return OpProducts(None, None, 0)
    host = view.value("host")
    counts, gpu = rank_count_columns(view.columns.ints("step"), host)
    budget = host_budget_columns(host, view.rank, windows) if gpu else None
    return OpProducts(fold_columns(counts, rank_steps), budget, rank_steps)


TABLE = RankTable(
    name="op_products", make=make, events=tuple(OPS_EVENT_COLUMNS), needs=("host", "windows"), travels=False
)
