"""Per rank and GPU stream that ran communication kernels: busy, overlapped and exposed time
(scope/rankpass/streams.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from scope.rankpass import intervals as iv
from scope.rankpass.spec import RankTable
from scope.rankpass.streams import COLUMNS, Kernels, stream_rows
from scope.rankpass.timeline import is_in
from scope.rankpass.view import RankView

EVENTS = ("kind", "ts_ns", "dur_ns", "stream", "coll_op", "device")


def make(view: RankView) -> pd.DataFrame:
    """The GPU communication kernels per stream, against the GPU compute kernels."""
    events = view.events
    on_device = (events["device"] >= 0).to_numpy()
    comm = on_device & is_in(events["kind"], ("comm",))
    if not comm.any():
        return pd.DataFrame()
    compute = on_device & is_in(events["kind"], ("compute",))
    ts = events["ts_ns"].to_numpy(dtype=np.int64)
    end = ts + events["dur_ns"].to_numpy(dtype=np.int64)
    ops = events["coll_op"][comm].astype(object).to_numpy()
    named = np.array([isinstance(op, str) and op != "" for op in ops], dtype=bool)
    kernels = Kernels(events["stream"].to_numpy()[comm], ts[comm], end[comm], np.where(named, ops, "unknown"))
    return stream_rows(view.rank, kernels, iv.union(ts[compute], end[compute]))


TABLE = RankTable(name="comm_streams", make=make, columns=tuple(COLUMNS), events=EVENTS, order=("rank", "stream"))
