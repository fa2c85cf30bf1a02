"""Per rank, step and cause: the step time budget (scope/rankpass/budget.py)."""

from __future__ import annotations

from scope.rankpass.budget import BUDGET_COLUMNS, Columns, cpu_claims, gpu_claims, resolved, waits_of
from scope.rankpass.spec import RankTable
from scope.rankpass.view import RankView


def make(view: RankView) -> Columns:
    sets, host = view.value("sets"), view.value("host")
    waits = waits_of(view.job)
    on_gpu = sets.timeline == "gpu"
    claims = gpu_claims(None, waits, host) if on_gpu else cpu_claims(None, waits, host, sets)
    # sets the host's largest unexplained gaps per step, which the evidence then cites
    return resolved(view.rank, on_gpu, claims, view.value("windows"), host)


TABLE = RankTable(
    name="budget",
    make=make,
    columns=tuple(BUDGET_COLUMNS),
    needs=("sets", "windows", "host"),
    matching=True,
    order=("rank", "step"),
)
