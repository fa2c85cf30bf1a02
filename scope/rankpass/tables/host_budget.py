"""Per GPU rank and step: the training thread's time in launches, other runtime calls, operators and the
named host spans, in the budget's long format with timeline "host" (analyzers/ops.py says more)."""

from __future__ import annotations

from scope.rankpass.budget import Columns
from scope.rankpass.spec import RankTable
from scope.rankpass.view import RankView


def make(view: RankView) -> Columns | None:
    products = view.value("op_products")
    return products.host_budget if products.rank_steps else None


TABLE = RankTable(name="host_budget", make=make, needs=("op_products",), order=("rank", "step"))
