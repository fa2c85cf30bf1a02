"""rank: the ranks whose events hold a micro-batch action or a point-to-point op, the only ones the pipeline
analyzer reads again (analyzers/pipeline)."""

from __future__ import annotations

import re

import numpy as np

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


def _texts(labels: list[str]) -> list[str]:
    """A text column's distinct non-empty texts: its dictionary (the store's name-like columns are encoded)."""
    return [v for v in labels if v]


def make(view: RankView) -> dict[str, np.ndarray] | None:
    columns = view.columns
    if not looks_pipelined(_texts(columns.codes("name")[1]), _texts(columns.codes("coll_op")[1])):
        return None
    return {"rank": np.array([view.rank], dtype=np.int64)}


TABLE = RankTable(name="pipeline_candidates", make=make, columns=("rank",), events=("name", "coll_op"))
