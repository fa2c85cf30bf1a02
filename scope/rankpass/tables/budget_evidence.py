"""Per rank and step: what the budget's findings cite (scope/rankpass/budget_evidence.py)."""

from __future__ import annotations

from scope.rankpass.budget import Columns
from scope.rankpass.budget_evidence import EVIDENCE_COLUMNS, evidence_columns
from scope.rankpass.spec import RankTable
from scope.rankpass.view import RankView


def make(view: RankView) -> Columns:
    return evidence_columns(view.rank, None, view.value("windows"), view.value("host"))


# after the budget: it cites the largest unexplained gap the budget found in each step
TABLE = RankTable(
    name="budget_evidence",
    make=make,
    columns=tuple(EVIDENCE_COLUMNS),
    needs=("windows", "host", "budget"),
    order=("rank", "step"),
)
