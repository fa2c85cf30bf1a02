"""Per operator and kernel name (and the operator that launched a kernel), across ranks: calls and time per
profiled step (what `scope compare` diffs); folded as the ranks' counts arrive (scope/rankpass/op_counts.py
OpFold), never a frame per rank."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa

from scope.rankpass.batches import as_batch
from scope.rankpass.op_counts import COLUMNS, OpFold, OpTotals
from scope.rankpass.spec import RankTable
from scope.rankpass.view import RankView

_STEPS = b"rank_steps"


def make(view: RankView) -> pa.RecordBatch | None:
    """The rank's counts, carrying its profiled steps (also when it has no rows: they count in the mean)."""
    products = view.value("op_products")
    if not products.rank_steps:
        return None
    batch = as_batch(products.counts) if products.counts is not None else None
    batch = batch or pa.RecordBatch.from_pydict({})
    return batch.replace_schema_metadata({_STEPS: str(products.rank_steps).encode()})


def prefold(parts: list[pa.RecordBatch]) -> pa.RecordBatch | None:
    """A batch of ranks' counts folded into one part on the worker that read them (dask): a rank's
    counts are ~400 rows (100 KB, most of what a rank sends); a batch of 32 shares most names, so its fold
    weighs about one rank's. Sums and maxima per key: the coordinator's fold of it is exact."""
    totals, steps = OpTotals(), 0
    for part in parts:
        rank_steps = int((part.schema.metadata or {}).get(_STEPS, b"0"))
        if rank_steps:
            steps += rank_steps
            totals.add(part.replace_schema_metadata(None) if part.num_rows else None)
    if not steps:
        return None
    total = totals.folded()
    batch = as_batch(total) if total is not None else None
    batch = batch or pa.RecordBatch.from_pydict({})
    return batch.replace_schema_metadata({_STEPS: str(steps).encode()})


class Fold:
    def __init__(self) -> None:
        self.ops = OpFold()

    def add(self, part: pa.RecordBatch | None) -> None:
        if part is None:
            return
        steps = int((part.schema.metadata or {}).get(_STEPS, b"0"))
        if steps:
            self.ops.add(part.replace_schema_metadata(None) if part.num_rows else None, None, steps)

    def table(self) -> pd.DataFrame:
        return self.ops.tables()[0]


TABLE = RankTable(
    name="op_stats", make=make, columns=tuple(COLUMNS), needs=("op_products",), fold=Fold, prefold=prefold
)
