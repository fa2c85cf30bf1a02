"""Collective metadata from raw event args: plain Python, shared by the native and pyarrow paths.

Only communication events get here (a few per step), so clarity beats vectorising.
"""

from __future__ import annotations

import json
from math import prod
from typing import Any

import msgspec

from scope.ingest.classify import dtype_bytes
from scope.op_names import canonical_op
from scope.typed_cache import typed_lru_cache

# coll_op values that are bookkeeping around collectives, not collectives.
NOT_COLLECTIVES = frozenset({"", "wait", "start_coalescing", "end_coalescing"})


# The few distinct texts a rank's collectives carry (an op name, a group's ranks, a tensor's dims) repeat on
# every call: each is read once per ingest thread's process, not once per row (~90 rows a rank).
_TEXTS = 4096


@typed_lru_cache(maxsize=_TEXTS)
def op_from_collective(collective: str) -> str:
    return canonical_op(collective) if collective else ""


def _decode(raw: bytes) -> Any:
    try:
        return msgspec.json.decode(raw)
    except (msgspec.DecodeError, RecursionError):  # nested past msgspec's depth limit: the fuzz found "[[[[..."
        return None


def numel(raw: bytes) -> int:
    """Total elements of `Input Dims` ([[4, 4], [8]] -> 24), -1 when there are none."""
    dims = _decode(raw) if raw else None
    total = 0
    for shape in dims if isinstance(dims, list) else []:
        if isinstance(shape, list) and shape and all(isinstance(d, int) for d in shape):
            total += prod(shape)
    return total if total else -1


def first_tensor(raw_dims: bytes, raw_types: bytes) -> tuple[int, str]:
    """(elements, dtype) of the first tensor argument ([[], [4, 4], [4, 4]] -> 16): an op's input, not
    its `out` tensor or scalars beside it; (-1, '') when there is none."""
    dims = _decode(raw_dims) if raw_dims else None
    types = _decode(raw_types) if raw_types else None
    for i, shape in enumerate(dims if isinstance(dims, list) else []):
        if isinstance(shape, list) and shape and all(isinstance(d, int) for d in shape):
            dtype = types[i] if isinstance(types, list) and i < len(types) and isinstance(types[i], str) else ""
            return prod(shape), dtype
    return -1, ""


def first_type(raw: bytes) -> str:
    types = _decode(raw) if raw else None
    return next((t for t in types if isinstance(t, str) and t), "") if isinstance(types, list) else ""


# A group's rank list is written on every one of its comm events (the collectives table's group_ranks):
# the world's list alone is 0.9 MB of JSON at 131,072 ranks. A group of at least this many ranks that is
# evenly spaced (the world, a data-parallel group) is written as its range instead: "range(0,131072,1)",
# a few bytes whatever its size, read back by group_members.
COMPACT_MIN_RANKS = 64
_RANGE = "range("


def group_text(ranks: list[int]) -> str:
    """A group's ranks as group_ranks holds them: a JSON list, or its range when long and evenly spaced."""
    if len(ranks) >= COMPACT_MIN_RANKS:
        step = ranks[1] - ranks[0]
        if step > 0 and ranks == list(range(ranks[0], ranks[-1] + step, step)):
            return f"{_RANGE}{ranks[0]},{ranks[-1] + step},{step})"
    return msgspec.json.encode(ranks).decode()


def group_members(text: str | None) -> list[int]:
    """The ranks a group_ranks text names (a JSON list or group_text's range); [] when it names none."""
    if not text:
        return []
    if text.startswith(_RANGE) and text.endswith(")"):
        try:
            start, stop, step = (int(v) for v in text[len(_RANGE) : -1].split(","))
        except ValueError:
            return []
        return list(range(start, stop, step)) if step > 0 else []
    try:
        value = json.loads(text)
    except ValueError:
        return []
    return value if isinstance(value, list) and all(isinstance(v, int) for v in value) else []


@typed_lru_cache(maxsize=_TEXTS)
def ranks_text(raw: bytes) -> str | None:
    """Process Group Ranks as group_ranks holds it (group_text); traces store it as a string or a list."""
    if not raw:
        return None
    value = _decode(raw)
    if value is None:
        return None
    if isinstance(value, str):
        listed = _decode(value.encode()) if value.lstrip().startswith("[") else None
        if not isinstance(listed, list):
            return value.replace(" ", "")
        value = listed
    if isinstance(value, list) and value and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return group_text(value)
    return msgspec.json.encode(value).decode()


@typed_lru_cache(maxsize=_TEXTS)
def collective_meta(
    dtype: str, in_n: int, out_n: int, input_dims: bytes, input_type: bytes, first_only: bool = False
) -> tuple[int, int, str, int]:
    """(in elements, out elements, dtype, bytes); gloo annotations carry sizes only as Input Dims / type;
    first_only: the size is the first tensor's (ops that launch catalog kernels: input, then out)."""
    if in_n < 0 and input_dims and first_only:
        in_n, first_dtype = first_tensor(input_dims, input_type)
        out_n = in_n
        dtype = dtype or first_dtype
    elif in_n < 0 and input_dims:
        in_n = numel(input_dims)
        out_n = in_n
        if not dtype:
            dtype = first_type(input_type)
    size = dtype_bytes(dtype) if dtype else 0
    count = max(in_n, out_n)
    return in_n, out_n, dtype, count * size if size and count >= 0 else -1


def default_group(header: dict[str, Any]) -> tuple[str, int, str | None]:
    """(pg name, size, ranks) of the only process group, for comm events that do not name theirs."""
    raw = header.get("distributedInfo")
    info: dict[str, Any] = raw if isinstance(raw, dict) else {}
    config = info.get("pg_config")
    if isinstance(config, list) and len(config) == 1 and isinstance(config[0], dict):
        pg = config[0]
        ranks = pg.get("ranks")
        return (
            str(pg.get("pg_name", "0")),
            int(pg.get("pg_size") or -1),
            _listed_text(ranks) if ranks else None,
        )
    size = info.get("world_size")
    return "", int(size) if isinstance(size, int) else -1, None


def _listed_text(ranks: Any) -> str:
    if isinstance(ranks, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in ranks):
        return group_text(ranks)
    return json.dumps(ranks).replace(" ", "")


# c10d's point-to-point ops take (tensors, process group, peer, tag): the peer is their third input,
# a rank of the op's group (recorded when the profiler records shapes, as "Concrete Inputs").
_P2P_OPS = {"c10d::send": "send", "c10d::recv_": "recv"}
_PEER_INPUT = 2


def p2p_peer(name: str, op: str, src_rank: int, dst_rank: int, concrete: bytes, group_ranks: str | None) -> int:
    """The other end of a send or recv, a global rank; -1 when the event is neither or names no peer.
    NCCL's record_param_comms (and the kernels Kineto copies its args to) say "Dst Rank" on a send and
    "Src Rank" on a recv, both global; c10d's send/recv ops give a group rank, mapped through the
    group's ranks when the event names them (else it is the default group's: the same number)."""
    if op == "send" and dst_rank >= 0:
        return dst_rank
    if op == "recv" and src_rank >= 0:
        return src_rank
    if name not in _P2P_OPS or not concrete:
        return -1
    inputs = _decode(concrete)
    try:
        peer = int(inputs[_PEER_INPUT]) if isinstance(inputs, list) and len(inputs) > _PEER_INPUT else -1
    except (TypeError, ValueError):
        return -1
    members = group_members(group_ranks)
    if 0 <= peer < len(members):
        return members[peer]
    return peer if peer >= 0 else -1


def inherit_peers(ts: list[int], thread: list[int], op: list[str], peer: list[int], is_c10d: list[bool]) -> list[int]:
    """Peers for transfers that name none (gloo's "gloo:send"/"gloo:recv" annotations) from the c10d op
    that issued them: the latest c10d op of the same direction on the same thread started at or before
    the transfer. Rows in time order; returns the peers, the given ones kept."""
    latest: dict[tuple[int, str], int] = {}
    out = list(peer)
    for i in range(len(ts)):
        key = (thread[i], op[i])
        if is_c10d[i]:
            if peer[i] >= 0:
                latest[key] = peer[i]
        elif out[i] < 0 and op[i] in ("send", "recv") and key in latest:
            out[i] = latest[key]
    return out
