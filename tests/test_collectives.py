"""Collectives matched across ranks: skew, last arriver, waits, bandwidth, mismatches, p2p."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scope.analyzers.collectives as collectives

from scope.cli import main
from scope.ingest import ingest
from scope.rankpass.match import bus_factor, group_summary, match_collectives, rank_waits
from scope.store import Store
from tests.conftest import shared_data
from tests.helpers import context

MS = 1_000_000  # ns


def _coll(rows: list[tuple]) -> pd.DataFrame:
    """rows: (rank, op, step, start_ms, dur_ms, bytes)."""
    out = []
    for i, (rank, op, step, start, dur, nbytes) in enumerate(rows):
        out.append(
            {
                "rank": rank,
                "pg": "0",
                "seq": -1,
                "op": op,
                "ts_ns": int(start * MS),
                "end_ns": int((start + dur) * MS),
                "dur_ns": int(dur * MS),
                "bytes": nbytes,
                "dtype": "float",
                "group_size": 3,
                "group_ranks": "[0,1,2]",
                "step": step,
                "event_id": i,
                "on_gpu": True,
                "stream": 7,
                "thread": -1,
                "name": op,
            }
        )
    return pd.DataFrame(out)


def test_skew_last_arriver_waits_and_bandwidth() -> None:
    coll = _coll(
        [
            (0, "all_reduce", 1, 10, 12, 3_000_000),
            (1, "all_reduce", 1, 14, 8, 3_000_000),
            (2, "all_reduce", 1, 20, 2, 3_000_000),
            (0, "all_gather", 1, 30, 1, 1_000_000),
            (1, "all_gather", 1, 30.5, 0.5, 1_000_000),
            (2, "all_gather", 1, 30.2, 0.8, 1_000_000),
        ]
    )
    m = match_collectives(coll, [0, 1, 2])
    inst = m.instances.set_index("seq")
    ar = inst.loc[0]
    assert ar["op"] == "all_reduce" and ar["ranks"] == [0, 1, 2]
    assert ar["skew_us"] == pytest.approx(10_000) and ar["last_arriver"] == 2 and ar["first_arriver"] == 0
    assert ar["transfer_us"] == pytest.approx(2_000)  # the last arriver's, nobody left to wait for
    alg = 3_000_000 / 2e-3 / 1e9  # GB/s
    assert ar["algbw_gbps"] == pytest.approx(alg)
    assert ar["busbw_gbps"] == pytest.approx(alg * 2 * 2 / 3)
    assert inst.loc[1, "last_arriver"] == 1 and inst.loc[1, "busbw_gbps"] == pytest.approx(2 / 3 * 1e6 / 5e5)
    waits = m.per_rank.set_index(["seq", "rank"])["wait_us"]
    assert waits.loc[(0, 0)] == pytest.approx(10_000) and waits.loc[(0, 1)] == pytest.approx(6_000)
    assert waits.loc[(0, 2)] == 0
    starts, ends = rank_waits(m.per_rank, 1)
    assert (ends - starts).tolist() == [6 * MS]  # last at the all-gather: no wait there
    assert inst["mismatch"].isna().all() and (inst["n_missing"] == 0).all()
    groups = group_summary(m.instances, m.per_rank, [0, 1, 2]).set_index("op")
    assert groups.loc["all_reduce", "top_last_arriver"] == 2 and groups.loc["all_reduce", "untraced_ranks"] == 0


def test_bus_factors() -> None:
    assert bus_factor("all_reduce", 8) == pytest.approx(1.75)
    assert bus_factor("reduce_scatter", 4) == pytest.approx(0.75)
    assert bus_factor("broadcast", 4) == 1.0 and bus_factor("all_reduce", 1) == 1.0


def test_mismatch_and_missing_participants_are_reported() -> None:
    coll = _coll(
        [
            (0, "all_reduce", 1, 10, 1, 400),
            (1, "all_reduce", 1, 10, 1, 400),
            (2, "all_reduce", 1, 10, 1, 4096),
            (0, "all_reduce", 2, 20, 1, 400),
            (1, "broadcast", 2, 20, 1, 400),
            (2, "all_reduce", 2, 20, 1, 400),
            (0, "all_reduce", 3, 30, 1, 400),
            (1, "all_reduce", 3, 30, 1, 400),
        ]
    )
    m = match_collectives(coll, [0, 1, 2])
    inst = m.instances.set_index("step")
    assert inst.loc[1, "mismatch"] == "size" and inst.loc[2, "mismatch"] == "op"
    assert inst.loc[3, "missing_ranks"] == [2]
    ctx = context(None, Store(Path("."), {}))  # a store without traces: the matching is given
    ctx.matched = m
    result = collectives.analyze(ctx)
    kinds = [(f.kind, f.metrics.get("mismatch") or tuple(f.metrics.get("types", ()))) for f in result.findings]
    assert ("collective_mismatch", ("op", "size")) in kinds
    assert ("collective_mismatch", "missing participant") in kinds
    missing = next(f for f in result.findings if f.metrics.get("mismatch") == "missing participant")
    assert missing.ranks == [2] and missing.steps == [3]


def test_p2p_and_uneven_sendrecv_stay_unmatched() -> None:
    coll = _coll(
        [
            (0, "send", 1, 10, 1, 100),
            (1, "recv", 1, 10, 2, 100),
            (0, "send_recv", 1, 20, 1, 100),
            (1, "send_recv", 1, 20, 1, 100),
            (1, "send_recv", 1, 22, 1, 100),
            (0, "all_reduce", 1, 30, 1, 100),
            (1, "all_reduce", 1, 31, 1, 100),
            (0, "recv", 1, 40, 5, 100),
        ]
    )
    coll["group_ranks"] = "[0,1]"
    m = match_collectives(coll, [0, 1])
    inst = m.instances
    assert inst["p2p"].sum() == 6 and (inst.loc[inst["p2p"], "n_ranks"] == 1).all()
    assert inst.loc[inst["p2p"], "skew_us"].isna().all()
    ar = inst[inst["op"] == "all_reduce"].iloc[0]
    assert not ar["p2p"] and ar["ranks"] == [0, 1] and ar["last_arriver"] == 1
    # p2p: transfer = the fastest recv of that size (2 ms); the slower recv waited 3 ms for its peer
    recvs = inst[inst["op"] == "recv"]
    assert (recvs["transfer_us"] == 2_000).all()
    waits = m.per_rank.merge(recvs[["pg", "seq"]], on=["pg", "seq"]).sort_values("start_ns")["wait_us"]
    assert waits.tolist() == [0.0, 3_000.0]


@pytest.mark.shared_data
def test_trace_filter_sendrecv_skew_and_last_arriver(tmp_path: Path) -> None:
    """The two real ranks of trace_filter: 10 SendRecv kernels each, matched in order."""
    out = tmp_path / "a.json"
    args = [
        "analyze",
        str(shared_data("hta", "trace_filter")),
        "--store",
        str(tmp_path / "s"),
        "--json",
        str(out),
        "-q",
    ]
    assert main(args) == 0
    data = json.loads(out.read_text())
    rows = data["collectives"]
    assert len(rows) == 10
    for row in rows:
        assert {"pg", "seq", "op", "bytes", "ranks", "skew_us", "last_arriver", "busbw_gbps"} <= set(row)
        assert row["op"] == "send_recv" and row["ranks"] == [0, 1]
        assert row["skew_us"] >= 0 and row["last_arriver"] in (0, 1)
    first = rows[0]
    # First SendRecv: rank 0 starts at ...098094377 us, rank 1 at ...098129911 us (35.5 ms later).
    assert first["skew_us"] == pytest.approx(35_534.0) and first["last_arriver"] == 1
    skews = np.array([r["skew_us"] for r in rows])
    assert skews.min() >= 80 and skews.max() <= 165_000  # 0.1-164 ms, as measured by hand
    groups = data["collective_groups"]
    assert groups[0]["untraced_ranks"] == 126 and groups[0]["top_last_arriver"] == 1
    assert [r["rank"] for r in data["breakdown"]] == [0, 0, 1, 1]


@pytest.mark.shared_data
def test_store_gets_the_tables(tmp_path: Path) -> None:
    store_dir = tmp_path / "s"
    ingest(shared_data("hta", "trace_filter"), store_dir)
    assert (
        main(
            [
                "analyze",
                str(shared_data("hta", "trace_filter")),
                "--store",
                str(store_dir),
                "--json",
                str(tmp_path / "x.json"),
                "-q",
            ]
        )
        == 0
    )
    for table in (
        "breakdown",
        "collectives",
        "collective_ranks",
        "collective_groups",
        "straggler_scores",
        "comm_bound_steps",
    ):
        assert (store_dir / "tables" / f"{table}.parquet").exists(), table


def test_large_evenly_spaced_groups_are_written_as_their_range() -> None:
    """A 131,072-rank world's list is 0.9 MB of JSON on every comm event; its range is a few bytes, and
    reads back as the same ranks (matching, p2p peers, pipeline stages)."""
    from scope.ingest.comm import default_group, group_members, group_text, p2p_peer, ranks_text

    world = list(range(131072))
    assert group_text(world) == "range(0,131072,1)"
    assert group_members(group_text(world)) == world
    strided = list(range(3, 4096, 8))
    assert group_members(ranks_text(str(strided).encode())) == strided
    assert group_text([0, 1]) == "[0,1]" and group_text([0, 5, 6] * 30)[0] == "["  # short or uneven: listed
    header = {"distributedInfo": {"pg_config": [{"pg_name": "0", "pg_size": 131072, "ranks": world}]}}
    assert default_group(header) == ("0", 131072, "range(0,131072,1)")
    # a c10d send to group rank 5 of the strided group goes to global rank 3 + 5 * 8
    assert p2p_peer("c10d::send", "send", -1, -1, b"[null, null, 5]", group_text(strided)) == 43
    assert group_members("range(0,x,1)") == [] and group_members("not json") == []
