"""Per rank and GPU stream that ran communication kernels: busy, overlapped and exposed time
(scope/rankpass/streams.py)."""

from __future__ import annotations

import numpy as np

from scope.rankpass import intervals as iv
from scope.rankpass.arrays import lookup
from scope.rankpass.budget import Columns
from scope.rankpass.spec import RankTable
from scope.rankpass.streams import COLUMNS, Kernels, stream_columns
from scope.rankpass.view import RankView

EVENTS = ("kind", "ts_ns", "dur_ns", "stream", "coll_op", "device")


def make(view: RankView) -> Columns | None:
    """The GPU communication kernels per stream, against the GPU compute kernels."""
    columns = view.columns
    on_device = columns.ints("device") >= 0
    kind, kinds = columns.codes("kind")
    comm = on_device & lookup(kind, [k == "comm" for k in kinds])
    if not comm.any():
        return None
    compute = on_device & lookup(kind, [k == "compute" for k in kinds])
    ts = columns.ints("ts_ns")
    end = ts + columns.ints("dur_ns")
    op, ops = columns.codes("coll_op")
    # the collective each kernel runs, 'unknown' where the trace names none (missing or empty)
    labels = np.array([o if o else "unknown" for o in ops] + ["unknown"], dtype=object)
    kernels = Kernels(columns.ints("stream")[comm], ts[comm], end[comm], labels[op[comm]])
    return stream_columns(view.rank, kernels, iv.union(ts[compute], end[compute]))


TABLE = RankTable(name="comm_streams", make=make, columns=tuple(COLUMNS), events=EVENTS, order=("rank", "stream"))
