"""Each rank's pipeline stage, for Kineto traces (which name none): from who sends to whom.

- Topology: ranks joined by sends and recvs that name their other end (the collectives table's
  `peer`) form chains (one per data-parallel replica) or, with interleaved stages, rings. Activations
  flow from stage 0, so stage 0 is the rank whose first transfer of a step is a send (every other
  stage first waits for a recv), the majority over steps; the stages follow along the chain, or
  around the ring in the direction of stage 0's first send.
- Group membership, where no transfer names its peer: a send's or recv's process group smaller than
  the world is a pipeline group, and its ranks are listed in stage order (as Megatron and torch's
  DeviceMesh build them).
A rank in neither keeps stage -1 (unknown), as does every rank of a layout that fits neither reading.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd

STAGE_COLUMNS = ["rank", "op", "ts_ns", "step", "peer", "group_ranks"]


def rank_stages(coll: pd.DataFrame, world: int) -> dict[int, int]:
    """Rank -> pipeline stage, from the collectives table's sends and recvs (STAGE_COLUMNS)."""
    p2p = coll[coll["op"].isin(("send", "recv")) & (coll["step"] >= 0)]
    if p2p.empty:
        return {}
    named = p2p[p2p["peer"] >= 0] if "peer" in p2p else p2p.iloc[:0]
    stages = _topology_stages(named)
    for rank, stage in _membership_stages(p2p, world).items():
        stages.setdefault(rank, stage)
    return stages


def _confirmed(p2p: pd.DataFrame) -> pd.DataFrame:
    """The transfers whose direction both ends name (a send a -> b, and a recv on b from a): a peer read
    as a rank of a subgroup (gloo's c10d ops give no group) then joins nothing."""
    send = p2p["op"].to_numpy() == "send"
    rank, peer = p2p["rank"].to_numpy(np.int64), p2p["peer"].to_numpy(np.int64)
    src, dst = np.where(send, rank, peer), np.where(send, peer, rank)
    keys = pd.Series(list(zip(src.tolist(), dst.tolist(), strict=True)), index=p2p.index)
    both = set(keys[send]) & set(keys[~send])
    return p2p[keys.isin(both).to_numpy()]


def _topology_stages(p2p: pd.DataFrame) -> dict[int, int]:
    p2p = _confirmed(p2p) if not p2p.empty else p2p
    if p2p.empty:
        return {}
    links: dict[int, set[int]] = {}
    for a, b in zip(p2p["rank"].astype(int), p2p["peer"].astype(int), strict=True):
        if a != b:
            links.setdefault(a, set()).add(b)
            links.setdefault(b, set()).add(a)
    starts_sending = _starts_with_send(p2p)
    first_peer = _first_send_peer(p2p)
    out: dict[int, int] = {}
    for part in _components(links):
        order = _stage_order(part, links, starts_sending, first_peer)
        out.update({rank: stage for stage, rank in enumerate(order)})
    return out


def _starts_with_send(p2p: pd.DataFrame) -> set[int]:
    """Ranks whose first transfer of a step is a send, in most of their steps."""
    first = p2p.sort_values("ts_ns").groupby(["rank", "step"], sort=False)["op"].first()
    share = (first == "send").groupby(level="rank").mean()
    return {int(r) for r, s in share.items() if s > 0.5}


def _first_send_peer(p2p: pd.DataFrame) -> dict[int, int]:
    """Rank -> the peer of its first send of a step, the most common over steps."""
    sends = p2p[p2p["op"] == "send"].sort_values("ts_ns")
    first = sends.groupby(["rank", "step"], sort=False)["peer"].first()
    return {int(r): int(Counter(v.tolist()).most_common(1)[0][0]) for r, v in first.groupby(level="rank")}


def _components(links: dict[int, set[int]]) -> list[set[int]]:
    seen: set[int] = set()
    parts = []
    for start in sorted(links):
        if start in seen:
            continue
        part, todo = set(), [start]
        while todo:
            r = todo.pop()
            if r not in part:
                part.add(r)
                todo.extend(links[r] - part)
        seen |= part
        parts.append(part)
    return parts


def _stage_order(part: set[int], links: dict[int, set[int]], starts: set[int], first_peer: dict[int, int]) -> list[int]:
    """The component's ranks in stage order; [] when it is neither a chain nor a ring, or its first
    stage is not the one rank that starts each step with a send."""
    degree = {r: len(links[r]) for r in part}
    first = [r for r in part if r in starts]
    if len(part) < 2 or max(degree.values()) > 2 or len(first) != 1:
        return []
    head = first[0]
    ends = [r for r in part if degree[r] == 1]
    if len(ends) == 2 and head not in ends:
        return []  # a chain starts at one of its ends
    order, prev = [head], -1
    nxt = first_peer.get(head, -1) if not ends else next(iter(links[head]))
    while nxt >= 0 and nxt not in order:
        order.append(nxt)
        prev, cur = order[-2], nxt
        nxt = next((r for r in links[cur] if r != prev and r not in order), -1)
    return order if len(order) == len(part) else []


def _membership_stages(p2p: pd.DataFrame, world: int) -> dict[int, int]:
    """Stage = the rank's place in its pipeline group's rank list (a group smaller than the world)."""
    out: dict[int, int] = {}
    for text, sub in p2p.groupby("group_ranks", sort=False):
        members = _ranks(str(text))
        if not 2 <= len(members) < world:
            continue
        for rank in np.unique(sub["rank"].to_numpy()).tolist():
            if rank in members:
                out.setdefault(int(rank), members.index(int(rank)))
    return out


def _ranks(text: str) -> list[int]:
    from scope.ingest.comm import group_members

    return group_members(text)
