"""Per rank, step and cause: the step time budget (scope/rankpass/budget.py)."""

from __future__ import annotations

from scope.rankpass.budget import BUDGET_COLUMNS, Columns, rank_budget, waits_of
from scope.rankpass.spec import RankTable
from scope.rankpass.view import RankView


def make(view: RankView) -> Columns:
    on_gpu = view.value("sets").timeline == "gpu"
    # sets the host's largest unexplained gaps per step, which the evidence then cites
    return rank_budget(view.rank, view.events, on_gpu, waits_of(view.job), view.value("windows"), view.value("host"))


TABLE = RankTable(
    name="budget",
    make=make,
    columns=tuple(BUDGET_COLUMNS),
    needs=("sets", "windows", "host"),
    matching=True,
    order=("rank", "step"),
)
