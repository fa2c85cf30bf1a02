"""Findings from the step time budget (placeholder until the norms land)."""

from __future__ import annotations

import pandas as pd

from scope.analysis import Context
from scope.finding import Finding


def find(ctx: Context, table: pd.DataFrame, evidence: pd.DataFrame) -> list[Finding]:
    return []
