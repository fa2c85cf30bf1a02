"""The rank's operators and kernels counted (calls and ns per kind, name and launching operator in its
profiled steps) and its training thread's host budget (scope/rankpass/op_counts.py); stays in the worker,
read by op_stats and host_budget."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from scope.rankpass.budget import Columns
from scope.rankpass.op_counts import OPS_EVENT_COLUMNS, fold_rows, host_budget_columns, rank_counts
from scope.rankpass.spec import RankTable
from scope.rankpass.view import RankView


@dataclass
class OpProducts:
    counts: pd.DataFrame  # fold_rows: with the rank counted once and its own time per step
    host_budget: Columns | None  # a GPU rank's; None otherwise
    rank_steps: int  # its profiled steps (a rank without any is not counted at all)


def make(view: RankView) -> OpProducts:
    steps = view.steps
    rank_steps = int(steps["step"].nunique()) if not steps.empty else 0
    if not rank_steps:
        return OpProducts(pd.DataFrame(), None, 0)
    host = view.value("host")
    counts, gpu = rank_counts(view.events, host)
    budget = host_budget_columns(host, view.rank, steps) if gpu else None
    return OpProducts(fold_rows(counts, rank_steps), budget, rank_steps)


TABLE = RankTable(name="op_products", make=make, events=tuple(OPS_EVENT_COLUMNS), needs=("host",), travels=False)
