"""The rank's events as arrays, the GPU's and the training thread's, and the training thread's named spans
(scope/rankpass/budget.py Host): what the budget, its evidence and the operators' tables read; stays in the
worker."""

from __future__ import annotations

from scope.rankpass.budget import BUDGET_EVENT_COLUMNS, Host
from scope.rankpass.op_counts import OPS_EVENT_COLUMNS
from scope.rankpass.spec import RankTable
from scope.rankpass.view import RankView


def make(view: RankView) -> Host:
    return Host.of(view.arrays)


TABLE = RankTable(
    name="host", make=make, events=tuple(dict.fromkeys(BUDGET_EVENT_COLUMNS + OPS_EVENT_COLUMNS)), travels=False
)
