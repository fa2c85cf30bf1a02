"""Straggler and communication-bound verdicts on breakdown tables built by hand.

Each table models a synchronous data-parallel step: every rank's step lasts as long as the slowest
rank's non-waiting time, and the others wait for it inside their collectives.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scope.analyzers.comm_bound as comm_bound
import scope.analyzers.stragglers as stragglers

from scope.analysis import Context
from scope.rankpass.match import match_collectives
from scope.store import Store
from tests.helpers import context

MS = 1000.0  # us


def _ctx(bd: pd.DataFrame, options: dict | None = None) -> Context:
    # a store without traces: the breakdown and the matching are given
    ctx = context(None, Store(Path("."), {}), **(options or {}))
    empty = match_collectives(pd.DataFrame(), sorted(bd["rank"].unique()))
    ctx.breakdown, ctx.matched = bd, empty
    return ctx


def synthetic(
    n_ranks: int = 4,
    n_steps: int = 5,
    *,
    compute: float = 100,
    host: float = 5,
    launch: float = 0.1,
    transfer: float = 20,
    noise: float = 0.10,
    slow: dict | None = None,
    seed: int = 0,
) -> pd.DataFrame:
    """slow: {rank: {"compute": x, "host": y, "launch": z, "steps": [...]}} multiplies/adds."""
    rng = np.random.default_rng(seed)
    rows = []
    for step in range(n_steps):
        parts = {}
        for rank in range(n_ranks):
            c = compute * MS * (1 + noise * rng.uniform(-1, 1))
            h, k = host * MS * (1 + noise * rng.uniform(-1, 1)), launch * MS
            spec = (slow or {}).get(rank, {})
            if step in spec.get("steps", range(n_steps)):
                c *= spec.get("compute", 1.0)
                h += spec.get("host", 0.0) * MS
                k += spec.get("launch", 0.0) * MS
            parts[rank] = (c, h, k)
        busy = {r: c + h + k + transfer * MS for r, (c, h, k) in parts.items()}
        step_len = max(busy.values())
        for rank, (c, h, k) in parts.items():
            wait = step_len - busy[rank]
            exposed = wait + transfer * MS + k
            rows.append(
                {
                    "rank": rank,
                    "step": step,
                    "step_us": step_len,
                    "compute_us": c,
                    "exposed_comm_us": exposed,
                    "exposed_comm_wait_us": wait,
                    "exposed_comm_transfer_us": transfer * MS + k,
                    "overlapped_comm_us": 0.0,
                    "memcpy_us": 0.0,
                    "idle_us": h,
                    "comm_launch_us": k,
                    "comm_us": exposed,
                }
            )
    return pd.DataFrame(rows)


def test_healthy_noise_is_not_a_straggler() -> None:
    for seed in range(10):
        ctx = _ctx(synthetic(noise=0.15, seed=seed))
        assert stragglers.analyze(ctx).findings == [], seed
        assert comm_bound.analyze(ctx).findings == [], seed


def test_compute_straggler_is_named_with_score_and_time_lost() -> None:
    ctx = _ctx(synthetic(slow={2: {"compute": 2.0}}))
    result = stragglers.analyze(ctx)
    (finding,) = result.findings
    assert finding.kind == "straggler" and finding.ranks == [2]
    assert finding.metrics["straggler_kind"] == "compute" and finding.metrics["persistent"]
    assert finding.metrics["score"] == pytest.approx(0.5, abs=0.08)
    # replaying the step with rank 2 at the median removes its extra ~100 ms
    assert finding.metrics["time_lost_us"] == pytest.approx(100 * MS, rel=0.2)
    scores = result.tables["straggler_scores"].set_index("rank")
    assert scores.loc[2, "flagged"] and not scores.drop(index=2)["flagged"].any()
    assert scores.loc[2, "reference_rank"] != 2
    # the others spend the step waiting for it: they are comm-bound by waiting, rank 2 named as waited for
    (cb,) = comm_bound.analyze(ctx).findings
    assert cb.kind == "comm_bound" and cb.metrics["cause"] == "waiting" and cb.metrics["waiting_for"] == [2]
    assert 2 not in cb.ranks


def _contended_breakdown(n_steps: int = 5) -> pd.DataFrame:
    """CPU ranks sharing cores: rank 2 computes 1.5x its peers, but the peers' busy time is inflated
    (they compute slower while it works), so replaying rank 2 at the median saves only ~20 ms of
    a 160 ms step, under the 15% loss margin."""
    rows = []
    for step in range(n_steps):
        for rank in range(4):
            compute, wait = (120.0, 0.0) if rank == 2 else (80.0, 20.0)
            rows.append(
                {
                    "rank": rank,
                    "step": step,
                    "step_us": 160 * MS,
                    "compute_us": compute * MS,
                    "exposed_comm_us": (wait + 10) * MS,
                    "exposed_comm_wait_us": wait * MS,
                    "exposed_comm_transfer_us": 10 * MS,
                    "overlapped_comm_us": 0.0,
                    "memcpy_us": 0.0,
                    "idle_us": (150 - compute - wait) * MS,
                    "comm_launch_us": 0.0,
                    "comm_us": (wait + 10) * MS,
                }
            )
    return pd.DataFrame(rows)


def _collectives(n_steps: int, late: dict[int, float], n_ranks: int = 4) -> pd.DataFrame:
    """Two all-reduces per step; each rank in `late` starts the first one that many ms after the others."""
    rows = []
    for step in range(n_steps):
        for k in range(2):
            for rank in range(n_ranks):
                ts = int((step * 160 + 100 + 30 * k) * 1e6) + rank * 1000
                if k == 0:
                    ts += int(late.get(rank, 0.0) * 1e6)
                rows.append(
                    {"rank": rank, "pg": "0", "seq": 2 * step + k, "op": "all_reduce", "ts_ns": ts,
                     "end_ns": ts + 5_000_000, "dur_ns": 5_000_000, "bytes": 4096, "dtype": "Float",
                     "group_size": n_ranks, "group_ranks": str(list(range(n_ranks))), "step": step,
                     "event_id": 2 * step + k,
                     "on_gpu": False, "stream": -1, "thread": 1, "name": "gloo:all_reduce"}
                )  # fmt: skip
    return pd.DataFrame(rows)


def _ctx_matched(bd: pd.DataFrame, coll: pd.DataFrame) -> Context:
    ctx = _ctx(bd)
    ctx.matched = match_collectives(coll, sorted(bd["rank"].unique()))
    return ctx


def test_contended_straggler_is_named_by_the_time_it_holds_its_peers_up() -> None:
    bd = _contended_breakdown()
    # the replayed loss alone is under the margin: without arrivals, nothing is flagged
    assert stragglers.analyze(_ctx(bd)).findings == []
    result = stragglers.analyze(_ctx_matched(bd, _collectives(5, {2: 60})))
    (finding,) = result.findings
    assert finding.kind == "straggler" and finding.ranks == [2] and finding.metrics["straggler_kind"] == "compute"
    assert finding.metrics["held_up_us"] == pytest.approx(60 * MS, rel=0.01)
    assert any("held up: the other ranks waited 60.0 ms per step" in e for e in finding.evidence)
    held = result.tables["straggler_steps"].query("kind == 'compute'").set_index("rank")["held_up_us"]
    assert list(held.loc[2]) == pytest.approx([60 * MS] * 5, rel=0.01)
    assert (held.drop(index=2) < 0.01 * MS).all()


def test_holding_peers_up_briefly_or_without_slow_compute_is_not_a_straggler() -> None:
    bd = _contended_breakdown()
    # half of a 30 ms hold-up is under the margin (24 ms of 160), and so is the replay: noise on a shared host
    assert stragglers.analyze(_ctx_matched(bd, _collectives(5, {2: 30}))).findings == []
    # long waits for a rank whose compute is like its peers': not a compute straggler
    assert stragglers.analyze(_ctx_matched(bd, _collectives(5, {1: 60}))).findings == []


def test_transient_straggler_lists_its_steps() -> None:
    ctx = _ctx(synthetic(n_steps=6, slow={1: {"compute": 3.5, "steps": [1, 4]}}))
    (finding,) = stragglers.analyze(ctx).findings
    assert finding.ranks == [1] and not finding.metrics["persistent"] and finding.steps == [1, 4]
    # a single slow step is not enough: it is as often the OS descheduling a process
    assert stragglers.analyze(_ctx(synthetic(n_steps=6, slow={1: {"compute": 3.5, "steps": [4]}}))).findings == []


def test_host_straggler() -> None:
    ctx = _ctx(synthetic(slow={0: {"host": 80}}))
    (finding,) = stragglers.analyze(ctx).findings
    assert finding.kind == "straggler" and finding.ranks == [0]
    assert finding.metrics["straggler_kind"] == "host"


def test_slow_communication_path_is_a_slow_collective() -> None:
    ctx = _ctx(synthetic(slow={3: {"launch": 150}}))
    (finding,) = stragglers.analyze(ctx).findings
    assert finding.kind == "slow_collective" and finding.ranks == [3]
    assert finding.metrics["straggler_kind"] == "communication"


def test_transfer_bound_steps() -> None:
    ctx = _ctx(synthetic(compute=60, transfer=60, noise=0.1), {"link_gbps": 25.0})
    assert stragglers.analyze(ctx).findings == []
    result = comm_bound.analyze(ctx)
    (finding,) = result.findings
    assert finding.kind == "comm_bound" and finding.metrics["cause"] == "transfer" and finding.ranks == []
    assert finding.metrics["exposed_comm_pct"] > 40
    table = result.tables["comm_bound_steps"]
    assert table["comm_bound"].all() and (table["link_gbps"] == 25.0).all()
    # a higher threshold turns it off
    assert comm_bound.analyze(_ctx(synthetic(compute=60, transfer=60), {"comm_bound_threshold": 0.6})).findings == []


def test_a_rank_that_holds_nobody_up_is_not_a_straggler() -> None:
    """Seen in CI on a healthy 4-rank gloo run sharing 2 cores: one rank's compute looked 1.5x its
    peers' and the replay credited it 23 ms a step, yet it never arrived last by more than noise."""
    bd = synthetic(slow={1: {"compute": 1.5}})
    assert [f.ranks for f in stragglers.analyze(_ctx(bd)).findings] == [[1]]  # replay alone: named
    on_time = _ctx_matched(bd, _collectives(5, {}))
    assert stragglers.analyze(on_time).findings == []
    loss = stragglers.find_stragglers(on_time).scores.set_index("rank").loc[1, "compute_loss_us"]
    assert loss < 0.1 * MS


def test_a_transfer_slower_than_the_jobs_typical_bandwidth_is_judged_at_that_bandwidth() -> None:
    """A healthy 4-rank gloo run on a loaded 2-core host read 0.085 GB/s in the step whose transfer neared
    the threshold (30%), against 0.14-0.55 in its other steps: a slow outlier of the link or the host, not
    the job's bandwidth bill. At the job's typical (median, 0.15) bandwidth that step's transfer is 16%."""
    shares = {2: 31.0, 3: 32.0, 4: 36.0, 5: 20.0, 6: 20.0}  # transfer, % of a 100 ms step, every rank
    bd = pd.DataFrame(
        [
            {
                "rank": rank,
                "step": step,
                "step_us": 100 * MS,
                "exposed_comm_us": (share + 2) * MS,
                "exposed_comm_wait_us": 2 * MS,
                "exposed_comm_transfer_us": share * MS,
                "comm_launch_us": 0.0,
            }
            for step, share in shares.items()
            for rank in range(4)
        ]
    )
    bw = pd.DataFrame({"step": list(shares), "busbw_gbps": [0.3, 0.3, 0.1, 0.4, 0.4], "busbw_best_gbps": 0.4})
    judged = comm_bound.step_table(bd, 0.30, [], bandwidth=bw).set_index("step")
    # 36% at a third of the typical 0.3: the transfer takes a third of its time and the step shrinks with it
    assert judged.loc[4, "transfer_typical_pct"] == pytest.approx(100 * 0.12 / (1 - 0.36 * 2 / 3))  # 15.8%
    assert judged["transfer_typical_pct"].drop(4).tolist() == list(judged["transfer_pct"].drop(4))
    assert judged["comm_bound"].tolist() == [True, True, False, False, False]
    # without bandwidths (no large collective) the transfer share itself is judged: three steps bound
    assert comm_bound.step_table(bd, 0.30, [])["comm_bound"].tolist() == [True, True, True, False, False]
    assert comm_bound._finding(judged.reset_index(), 0.30, [0, 1, 2, 3]) is None  # 2 of 5 steps: no finding
    # a job bound in every step stays flagged: only the steps below the median bandwidth (at most half) drop
    bd["exposed_comm_transfer_us"], bd["exposed_comm_us"] = 40 * MS, 42 * MS
    everywhere = comm_bound.step_table(bd, 0.30, [], bandwidth=bw.assign(busbw_gbps=[0.1, 0.1, 0.3, 0.4, 0.4]))
    assert everywhere["comm_bound"].tolist() == [False, False, True, True, True]
    assert comm_bound._finding(everywhere.assign(link_gbps=np.nan), 0.30, [0, 1, 2, 3]) is not None


def test_a_step_judged_at_the_typical_bandwidth_never_reads_below_the_typical_step() -> None:
    """Same bytes every step, bandwidth 0.2-0.4 GB/s around a 0.3 median, 60 ms of compute: at the median
    bandwidth every step reads what the median step reads (40%), so a job bound at its typical bandwidth
    stays bound (the review's counter-example to scaling the share alone)."""
    gbps = [0.20, 0.25, 0.30, 0.35, 0.40]
    transfer_ms = [12.0 / g for g in gbps]  # 40 ms at 0.3 GB/s
    bd = pd.DataFrame(
        [
            {
                "rank": rank,
                "step": step,
                "step_us": (60 + t) * MS,
                "exposed_comm_us": t * MS,
                "exposed_comm_wait_us": 0.0,
                "exposed_comm_transfer_us": t * MS,
                "comm_launch_us": 0.0,
            }
            for step, t in enumerate(transfer_ms)
            for rank in range(4)
        ]
    )
    bw = pd.DataFrame({"step": range(5), "busbw_gbps": gbps, "busbw_best_gbps": 0.4})
    judged = comm_bound.step_table(bd, 0.38, [], bandwidth=bw).set_index("step")
    assert judged["transfer_typical_pct"].iloc[:3].tolist() == pytest.approx([40.0, 40.0, 40.0])
    assert judged["comm_bound"].sum() >= 3
    assert comm_bound._finding(judged.reset_index().assign(link_gbps=np.nan), 0.38, [0, 1, 2, 3]) is not None
