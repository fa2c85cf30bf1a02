"""rank: the ranks whose events hold a micro-batch action or a point-to-point op, the only ones the pipeline
analyzer reads again (analyzers/pipeline)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from scope.rankpass.spec import RankTable
from scope.rankpass.view import RankView

P2P_OPS = ("send", "recv")
# A GPipe-style micro-batch action's name (the pipeline analyzer parses it: analyzers/pipeline/rank.py).
GPIPE_ACTION = re.compile(r"^(Forward|Backward) (\d+)$")


def looks_pipelined(names: list[str], ops: list[str]) -> bool:
    """Any micro-batch action (PP:..., Forward 3) among the distinct names, or a point-to-point op?"""
    if set(ops) & {*P2P_OPS, "send_recv"}:
        return True
    return any(n.startswith("PP:") or GPIPE_ACTION.match(n) for n in names)


def _categories(column: pd.Series) -> list[str]:
    """A column's distinct non-empty texts (the store gives them as categoricals: their dictionary)."""
    values = column.cat.categories if isinstance(column.dtype, pd.CategoricalDtype) else column.dropna().unique()
    return [str(v) for v in values if isinstance(v, str) and v]


def make(view: RankView) -> dict[str, np.ndarray] | None:
    events = view.events
    if not looks_pipelined(_categories(events["name"]), _categories(events["coll_op"])):
        return None
    return {"rank": np.array([view.rank], dtype=np.int64)}


TABLE = RankTable(name="pipeline_candidates", make=make, columns=("rank",), events=("name", "coll_op"))
