"""Straggler and communication-bound verdicts on breakdown tables built by hand.

Each table models a synchronous data-parallel step: every rank's step lasts as long as the slowest
rank's non-waiting time, and the others wait for it inside their collectives.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import analyzers.comm_bound as comm_bound
import analyzers.stragglers as stragglers
from analyzers._match import match_collectives
from scope.analysis import Context

MS = 1000.0  # us


def _ctx(bd: pd.DataFrame, options: dict | None = None) -> Context:
    ctx = Context(path=Path("."), store=None, options=options or {})
    empty = match_collectives(pd.DataFrame(), sorted(bd["rank"].unique()))
    ctx.__dict__["_analyzer_cache"] = {"breakdown": bd, "matched": empty}
    ctx.store = object()  # analyzers only check that there is one; the data comes from the cache
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
    # the others spend the step waiting for it: comm-bound by waiting, rank 2 named
    (cb,) = comm_bound.analyze(ctx).findings
    assert cb.kind == "comm_bound" and cb.metrics["cause"] == "waiting" and cb.ranks == [2]


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
