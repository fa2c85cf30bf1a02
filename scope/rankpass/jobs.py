"""What a worker needs for each rank: its waits (with the peer waited for) from the collectives matched
across ranks, and the intervals of its collectives whose group was only partly traced."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd

from scope.rankpass.match import Matched
from scope.rankpass.timeline import RankJob


def rank_job(root: str, matched: Matched, rank: int) -> RankJob:
    return next(rank_jobs(root, matched, [rank]))


def rank_jobs(root: str, matched: Matched | None, ranks: list[int]) -> Iterator[RankJob]:
    """rank_job for each rank, made as they are taken (None: no table reads the matching): every rank's
    rows looked up in the instances at once, then cut per rank (a lookup per rank cost 2 ms, most of the
    driver's time in the per-rank pass: 33 s at 16,384 ranks; every job made first held 80 MB there)."""
    if matched is None or matched.per_rank.empty:
        yield from (RankJob(root, rank) for rank in ranks)
        return
    per_rank, inst = matched.per_rank, matched.instances
    keyed = inst.drop_duplicates(["pg", "seq"]).set_index(["pg", "seq"]) if not inst.empty else None
    keys = pd.MultiIndex.from_arrays([per_rank["pg"], per_rank["seq"]])
    last = keyed["last_arriver"].reindex(keys).to_numpy() if keyed is not None else np.full(len(keys), np.nan)
    peers = pd.to_numeric(pd.Series(last), errors="coerce").fillna(-1).to_numpy(dtype=np.int64)
    partial = _partly_traced(keyed, keys)
    waiting = (per_rank["wait_us"] > 0).to_numpy()
    start = per_rank["start_ns"].to_numpy(dtype=np.int64)
    end_wait = start + np.rint(per_rank["wait_us"].to_numpy() * 1e3).astype(np.int64)
    end = per_rank["end_ns"].to_numpy(dtype=np.int64)
    rows = per_rank.groupby("rank", sort=False).indices
    for rank in ranks:
        if rank not in rows:
            yield RankJob(root, rank)
            continue
        mine = rows[rank]
        wait, part = mine[waiting[mine]], mine[partial[mine]]
        yield RankJob(root, rank, start[wait], end_wait[wait], peers[wait], start[part], end[part])


def _partly_traced(keyed: pd.DataFrame | None, keys: pd.MultiIndex) -> np.ndarray:
    """Collectives of a group some of whose ranks are not in the traces: from one side, time in the
    kernel waiting for the untraced peers cannot be told from transfer."""
    if keyed is None or not len(keys):
        return np.zeros(len(keys), dtype=bool)
    sub = keyed.reindex(keys)
    missing = pd.to_numeric(sub["n_missing"], errors="coerce").fillna(0).to_numpy() > 0
    size = pd.to_numeric(sub["group_size"], errors="coerce").fillna(0).to_numpy()
    present = pd.to_numeric(sub["n_ranks"], errors="coerce").fillna(0).to_numpy()
    p2p = sub["p2p"].fillna(False).to_numpy(dtype=bool) if "p2p" in sub.columns else np.zeros(len(keys), dtype=bool)
    return (missing | (size > present)) & ~p2p
