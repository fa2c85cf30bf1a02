"""What a host thread waits for when a CUDA (or HIP) runtime call blocks it: the GPU ops that must end
before the call returns, read from the trace's runtime calls and their correlation ids (the order in
which the host enqueued work).

- cudaStreamSynchronize: the last op enqueued on the stream before the call. The stream is the one
  Kineto's "Stream Sync" record (cat cuda_sync, same correlation) names; without it, the stream of the
  last op this thread enqueued.
- cudaDeviceSynchronize: the last op enqueued on every stream before the call.
- cudaEventSynchronize: the stream point its event marks: the event is the latest cudaEventRecord of
  this thread before the call (traces name no event ids), and the point is the last op enqueued on the
  record's stream (the stream of this thread's last op before the record) before the record.
- cudaMemcpy, cudaMemset (synchronous): the copy or set with the call's own correlation id.
Any other *Synchronize call, or one of the above whose reading finds nothing: the latest GPU op that
ended before the call returned (a reading by time, not by order).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

_RECORDS = ("cudaEventRecord", "hipEventRecord", "cudaEventRecordWithFlags", "hipEventRecordWithFlags")
_SYNC_COPIES = ("cudaMemcpy", "hipMemcpy", "cudaMemset", "hipMemset", "cudaMemcpy2D", "hipMemcpy2D")
# The µs a GPU op may end after the call that waited for it returned (timer rounding).
END_SLACK_US = 1.0


class _GpuOps:
    """The rank's GPU ops in enqueue order (correlation), with their streams, ends and launching threads."""

    def __init__(self, ev: pd.DataFrame, on_gpu: np.ndarray, thread_of: pd.Series) -> None:
        ops = ev[on_gpu & (ev["correlation"].to_numpy() > 0)].sort_values("correlation")
        self.corr = ops["correlation"].to_numpy(np.int64)
        self.stream = ops["stream"].to_numpy(np.int64)
        self.eid = ops["event_id"].to_numpy(np.int64)
        self.thread = thread_of.reindex(self.corr).fillna(-1).to_numpy(np.int64)

    def last_on(self, stream: int, before: int) -> list[int]:
        k = np.flatnonzero((self.stream == stream) & (self.corr < before))
        return [int(self.eid[k[-1]])] if len(k) else []

    def stream_of_last(self, thread: int, before: int) -> int:
        k = np.flatnonzero((self.thread == thread) & (self.corr < before))
        return int(self.stream[k[-1]]) if len(k) else -1

    def last_on_every_stream(self, before: int) -> list[int]:
        return [e for s in np.unique(self.stream).tolist() for e in self.last_on(int(s), before)]

    def with_corr(self, corr: int) -> list[int]:
        return [int(e) for e in self.eid[self.corr == corr]]


def host_waits(ev: pd.DataFrame, on_gpu: np.ndarray) -> list[tuple[int, list[int]]]:
    """(call's event id, the GPU ops' event ids it waits for) per blocking runtime call."""
    names = ev["name"].to_numpy()
    runtime = ~on_gpu & (ev["kind"] == "runtime").to_numpy() & (ev["cat"] != "cuda_sync").to_numpy()
    calls = ev[runtime & (ev["correlation"].to_numpy() > 0)]
    thread_of = calls.drop_duplicates("correlation").set_index("correlation")["thread"]
    ops = _GpuOps(ev, on_gpu, thread_of)
    synced = ev[(ev["cat"] == "cuda_sync").to_numpy() & (names == "Stream Sync")]
    sync_stream = synced.drop_duplicates("correlation").set_index("correlation")["thread"]
    recs = ev[np.isin(names, _RECORDS)].sort_values("correlation")
    blocking = runtime & (ev["name"].str.contains("Synchronize").to_numpy() | np.isin(names, _SYNC_COPIES))
    out = []
    for eid, name, corr, thread, end in zip(*(ev.loc[blocking, c] for c in ("event_id", "name", "correlation",
                                            "thread", "end")), strict=True):  # fmt: skip
        corr, thread = int(corr), int(thread)
        if name.endswith("StreamSynchronize"):
            stream = int(sync_stream.get(corr, ops.stream_of_last(thread, corr)))
            waits = ops.last_on(stream, corr)
        elif name.endswith("DeviceSynchronize"):
            waits = ops.last_on_every_stream(corr)
        elif name.endswith("EventSynchronize"):
            waits = _event_point(recs, ops, thread, corr)
        elif name in _SYNC_COPIES:
            waits = ops.with_corr(corr)
        else:
            waits = []
        if not waits and "Synchronize" in name:
            waits = _ended_before(ev, on_gpu, float(end))
        out.append((int(eid), waits))
    return out


def _event_point(recs: pd.DataFrame, ops: _GpuOps, thread: int, corr: int) -> list[int]:
    mine = recs[(recs["thread"] == thread).to_numpy() & (recs["correlation"] < corr).to_numpy()]
    if mine.empty:
        return []
    record = int(mine["correlation"].iloc[-1])
    return ops.last_on(ops.stream_of_last(thread, record), record)


def _ended_before(ev: pd.DataFrame, on_gpu: np.ndarray, end: float) -> list[int]:
    gpu = ev[on_gpu]
    done = gpu[gpu["end"].to_numpy() <= end + END_SLACK_US]
    return [] if done.empty else [int(done["event_id"].iloc[int(np.argmax(done["end"].to_numpy()))])]
