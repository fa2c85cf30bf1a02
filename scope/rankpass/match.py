"""Match per-rank collectives across ranks: one row per collective instance, one per (instance, rank).

Key: process group, ProfilerStep, and the order within that step on each rank. Keying by step (not
only by the rank-local sequence number of the whole trace) keeps ranks aligned when their profiling
windows caught a different number of collectives before the first step.

Per instance: the ranks present, op and size (with any disagreement noted), arrival skew (latest
start - earliest start), last arriver, each rank's wait (latest start - own start, within its own
duration), transfer time (the shortest duration across ranks: the last arriver's collective has
nobody left to wait for), algorithm and bus bandwidth.

Point-to-point ops (send, recv) carry no peer in traces, so they are not matched: each stays an
instance of one rank, whose transfer time is the shortest op of the same kind and size anywhere in
the job and whose wait is the rest of its duration. NCCL's SendRecv kernels are matched like
collectives when every rank of the group ran the same number of them in the step (an all-to-all),
and left unmatched otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from scope.store import Store

P2P_OPS = frozenset({"send", "recv"})
# Bus bandwidth = algorithm bandwidth x this factor (n = ranks in the group); nccl-tests' convention.
_BUS_FACTOR = {
    "all_reduce": lambda n: 2.0 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
}

INSTANCE_COLUMNS = [
    "pg",
    "seq",
    "op",
    "bytes",
    "ranks",
    "skew_us",
    "last_arriver",
    "busbw_gbps",
    "step",
    "first_arriver",
    "n_ranks",
    "group_size",
    "n_missing",
    "missing_ranks",
    "transfer_us",
    "algbw_gbps",
    "max_wait_us",
    "start_ns",
    "end_ns",
    "mismatch",
    "p2p",
]
RANK_COLUMNS = ["pg", "seq", "rank", "start_ns", "end_ns", "dur_us", "wait_us", "late_us", "is_last"]


@dataclass
class Matched:
    instances: pd.DataFrame  # INSTANCE_COLUMNS
    per_rank: pd.DataFrame  # RANK_COLUMNS
    traced_ranks: list[int]

    @property
    def empty(self) -> bool:
        return self.instances.empty


def bus_factor(op: str, n: int) -> float:
    return _BUS_FACTOR[op](n) if op in _BUS_FACTOR and n > 1 else 1.0


def _group_members(df: pd.DataFrame, traced: list[int]) -> dict[str, list[int]]:
    """Traced ranks expected in each process group: its listed ranks when known, else every traced
    rank that ran something in it."""
    members: dict[str, list[int]] = {}
    for pg, sub in df.groupby("pg", sort=False):
        listed = _listed_ranks(sub["group_ranks"].dropna())
        seen = sorted(int(r) for r in sub["rank"].unique())
        members[str(pg)] = sorted(set(listed) & set(traced)) if listed else seen
    return members


def _listed_ranks(values: pd.Series) -> list[int]:
    from scope.ingest.comm import group_members

    for text in values.unique()[:1]:
        if isinstance(text, str) and (ranks := group_members(text)):
            return ranks
    return []


def _keyed(df: pd.DataFrame) -> pd.DataFrame:
    """Add the matching key: (pg, step, index within the step on that rank); p2p stays per rank."""
    df = df.sort_values(["rank", "pg", "ts_ns", "event_id"], kind="stable")
    counts = df.groupby(["pg", "step", "op", "rank"]).size().rename("n").reset_index()
    uneven = counts.groupby(["pg", "step", "op"])["n"].nunique() > 1
    # Kernels of the catalog (symmetric memory, DeepEP, ...) name no group: when the ranks ran different
    # numbers of them in a step, they cannot be matched and stay per rank, like uneven SendRecv.
    groupless = _groupless_keys(df)
    uneven_sr = {key for key, bad in uneven.items() if bad and (key[2] == "send_recv" or key in groupless)}
    is_p2p = df["op"].isin(P2P_OPS)
    if uneven_sr:  # a tuple per row only where some key is uneven: at 16,384 ranks the table has ~350k rows
        is_p2p |= pd.Series(
            [(pg, st, op) in uneven_sr for pg, st, op in zip(df["pg"], df["step"], df["op"], strict=True)],
            index=df.index,
        )
    df["p2p"] = is_p2p.to_numpy()
    # Collectives count among themselves, so a rank's extra p2p traffic does not shift their keys.
    df["k"] = df.groupby(["rank", "pg", "step", "p2p"], sort=False).cumcount()
    # Unmatched rows get a key of their own (rank-specific), so they never join another rank's.
    df["key_rank"] = np.where(df["p2p"], df["rank"], -1)
    return df


def _groupless_keys(df: pd.DataFrame) -> set[tuple[str, int, str]]:
    """(pg, step, op) of GPU kernels outside NCCL's family that carry no process group of their own."""
    if "name" not in df.columns or "on_gpu" not in df.columns:
        return set()
    from scope.ingest.classify import is_nccl_family

    names = df["name"].astype(object).fillna("")
    nccl = names.map({n: is_nccl_family(n) for n in names.unique()})
    rows = df[df["on_gpu"].fillna(False).astype(bool) & ~nccl.astype(bool) & (df["pg"] == "")]
    return set(zip(rows["pg"], rows["step"], rows["op"], strict=True))


# What matching reads of the collectives table (Store.collectives), and which of those are text repeated on
# most rows, read as categoricals: at 16,384 ranks the table has ~350k rows, and the peak of reading and
# matching it was the analysis' largest.
MATCH_COLUMNS = [
    "rank", "pg", "op", "ts_ns", "end_ns", "dur_ns", "bytes", "group_size", "group_ranks", "step", "event_id",
    "on_gpu", "name",
]  # fmt: skip
MATCH_TEXT = ("group_ranks", "name")


def match_collectives(coll: pd.DataFrame, traced_ranks: list[int]) -> Matched:
    if coll is None or coll.empty:
        return Matched(pd.DataFrame(columns=INSTANCE_COLUMNS), pd.DataFrame(columns=RANK_COLUMNS), traced_ranks)
    df = coll.drop(columns=["seq"], errors="ignore")  # a new frame (copy on write): coll is left as it is
    df["pg"] = df["pg"].fillna("").astype(str)
    df["op"] = df["op"].fillna("unknown").astype(str)
    df = _keyed(df)
    members = _group_members(df, traced_ranks)
    # Unmatched p2p: the fastest op of the same kind and size is the transfer; the rest is waiting
    # for the peer (a recv posted before its send).
    df["p2p_min_ns"] = (
        df["dur_ns"].where(df["p2p"]).groupby([df["pg"], df["op"], df["bytes"]], dropna=False).transform("min")
    )
    keys = ["pg", "step", "k", "key_rank"]
    grouped = df.groupby(keys, sort=False)
    inst = grouped.agg(
        start_ns=("ts_ns", "min"),
        latest_ns=("ts_ns", "max"),
        end_ns=("end_ns", "max"),
        transfer_ns=("dur_ns", "min"),
        n_ranks=("rank", "nunique"),
        bytes=("bytes", "max"),
        min_bytes=("bytes", "min"),
        n_ops=("op", "nunique"),
        op=("op", "first"),
        group_size=("group_size", "max"),
        p2p=("p2p", "first"),
        p2p_min_ns=("p2p_min_ns", "min"),
        ranks=("rank", lambda r: sorted(int(x) for x in r)),
    ).reset_index()
    first_last = df.loc[df.groupby(keys, sort=False)["ts_ns"].idxmin(), [*keys, "rank"]].rename(
        columns={"rank": "first_arriver"}
    )
    last = df.loc[df.groupby(keys, sort=False)["ts_ns"].idxmax(), [*keys, "rank"]].rename(
        columns={"rank": "last_arriver"}
    )
    inst = inst.merge(first_last, on=keys).merge(last, on=keys)
    inst["transfer_ns"] = np.where(inst["p2p"], inst["p2p_min_ns"], inst["transfer_ns"])
    inst = inst.sort_values(["pg", "start_ns"], kind="stable").reset_index(drop=True)
    inst["seq"] = inst.groupby("pg").cumcount().astype("int64")
    inst = _describe(inst, df, members)
    per_rank = _per_rank(df.merge(inst[[*keys, "seq", "latest_ns", "last_arriver", "transfer_ns"]], on=keys))
    return Matched(inst[INSTANCE_COLUMNS], per_rank, traced_ranks)


def _describe(inst: pd.DataFrame, df: pd.DataFrame, members: dict[str, list[int]]) -> pd.DataFrame:
    """Skew, bandwidth, missing participants and disagreements of each instance."""
    matched = ~inst["p2p"] & (inst["n_ranks"] > 1)
    inst["skew_us"] = np.where(matched, (inst["latest_ns"] - inst["start_ns"]) / 1e3, np.nan)
    inst["max_wait_us"] = inst["skew_us"]
    for col in ("last_arriver", "first_arriver"):
        inst[col] = inst[col].where(matched).astype("Int64")
    inst["transfer_us"] = inst["transfer_ns"] / 1e3
    n = np.where(inst["group_size"] > 1, inst["group_size"], inst["n_ranks"])
    known = (inst["bytes"] > 0) & (inst["transfer_ns"] > 0)
    alg = np.where(known, inst["bytes"] / inst["transfer_ns"].clip(lower=1), np.nan)  # bytes/ns = GB/s
    inst["algbw_gbps"] = alg
    inst["busbw_gbps"] = alg * np.array([bus_factor(o, int(k)) for o, k in zip(inst["op"], n, strict=True)])
    inst["bytes"] = inst["bytes"].where(inst["bytes"] >= 0)
    missing = []
    for pg, ranks, p2p in zip(inst["pg"], inst["ranks"], inst["p2p"], strict=True):
        expected = [] if p2p else members.get(pg, [])
        # a set: `r not in` the instance's list scanned it for every expected rank (21 instances of 16,384
        # ranks: 2.8e9 comparisons, about a minute of the coordinator's time)
        present = set(ranks)
        missing.append([r for r in expected if r not in present])
    inst["missing_ranks"] = missing
    inst["n_missing"] = [len(m) for m in missing]
    inst["mismatch"] = _mismatch(inst)
    return inst


def _mismatch(inst: pd.DataFrame) -> list[str | None]:
    out: list[str | None] = []
    for n_ops, lo, hi in zip(inst["n_ops"], inst["min_bytes"], inst["bytes"], strict=True):
        if n_ops > 1:
            out.append("op")
        elif lo >= 0 and hi >= 0 and lo != hi:
            out.append("size")
        else:
            out.append(None)
    return out


def _per_rank(df: pd.DataFrame) -> pd.DataFrame:
    """Each rank's part in each instance: its own start/end, how long it waited, how late it came."""
    earliest = df.groupby(["pg", "seq"])["ts_ns"].transform("min")
    peer_wait = (np.minimum(df["latest_ns"], df["end_ns"]) - df["ts_ns"]).clip(lower=0)
    wait_ns = np.where(df["p2p"], (df["dur_ns"] - df["transfer_ns"]).clip(lower=0), peer_wait)
    out = pd.DataFrame(
        {
            "pg": df["pg"],
            "seq": df["seq"],
            "rank": df["rank"].astype("int64"),
            "start_ns": df["ts_ns"],
            "end_ns": df["end_ns"],
            "dur_us": df["dur_ns"] / 1e3,
            "wait_us": wait_ns / 1e3,
            "late_us": np.where(df["p2p"], 0.0, (df["ts_ns"] - earliest) / 1e3),
            "is_last": (~df["p2p"]) & (df["rank"] == df["last_arriver"]),
        }
    )
    return out.sort_values(["pg", "seq", "rank"]).reset_index(drop=True)[RANK_COLUMNS]


def rank_waits(per_rank: pd.DataFrame, rank: int) -> tuple[np.ndarray, np.ndarray]:
    """The intervals in which this rank's collectives were waiting for a later peer."""
    sub = per_rank[(per_rank["rank"] == rank) & (per_rank["wait_us"] > 0)]
    start = sub["start_ns"].to_numpy(dtype=np.int64)
    return start, start + np.rint(sub["wait_us"].to_numpy() * 1e3).astype(np.int64)


def group_summary(inst: pd.DataFrame, per_rank: pd.DataFrame, traced: list[int]) -> pd.DataFrame:
    """Per process group and op: counts, skew, wait, bandwidth, who arrives last, who is missing."""
    if inst.empty:
        return pd.DataFrame()
    waited = per_rank.groupby(["pg", "seq"])["wait_us"].sum()
    inst = inst.assign(waited=[waited.get((pg, seq), 0.0) for pg, seq in zip(inst["pg"], inst["seq"], strict=True)])
    rows = []
    for (pg, op), sub in inst.groupby(["pg", "op"], sort=True):
        matched = sub[~sub["p2p"] & (sub["n_ranks"] > 1)]
        last = matched["last_arriver"].dropna().astype(int)
        top = last.value_counts()
        ranks = sorted({r for rs in sub["ranks"] for r in rs})
        size = int(sub["group_size"].max()) if sub["group_size"].max() > 0 else len(ranks)
        rows.append(
            {
                "pg": pg,
                "op": op,
                "instances": len(sub),
                "matched": len(matched),
                "ranks": ranks,
                "group_size": size,
                "untraced_ranks": max(0, size - len(ranks)),
                "instances_missing_ranks": int((sub["n_missing"] > 0).sum()),
                "mismatched": int(sub["mismatch"].notna().sum()),
                "bytes_total": float(sub["bytes"].fillna(0).sum()),
                "skew_median_us": float(matched["skew_us"].median()) if len(matched) else np.nan,
                "skew_max_us": float(matched["skew_us"].max()) if len(matched) else np.nan,
                "wait_total_us": float(sub["waited"].sum()),
                "transfer_total_us": float(sub["transfer_us"].sum()),
                "busbw_median_gbps": float(sub["busbw_gbps"].median()),
                "busbw_max_gbps": float(sub["busbw_gbps"].max()),
                "top_last_arriver": int(top.index[0]) if len(top) else None,
                "top_last_arriver_share": float(top.iloc[0] / len(last)) if len(top) else np.nan,
            }
        )
    return pd.DataFrame(rows)


def matched_of(store: Store | None) -> Matched:
    """The store's collectives matched across its ranks (what Context.matched computes on first use);
    nothing matched without a store."""
    from scope.engine import give_back_memory

    if store is None:
        return match_collectives(pd.DataFrame(), [])
    matched = match_collectives(store.collectives(MATCH_COLUMNS, MATCH_TEXT), store.ranks)
    give_back_memory()  # what reading every rank's collectives file freed
    return matched
