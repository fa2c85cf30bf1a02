"""The what-if engine's rules on hand-made timelines whose answers are worked out by hand."""

from __future__ import annotations

import pandas as pd
import pytest
from scope.analyzers.whatif.model import analyze_ops

COLUMNS = ["dp_rank", "stage", "step", "optype", "start_ts", "duration", "seq_id"]


def timeline(rows: list[tuple]) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=COLUMNS)
    df["rank"] = df["dp_rank"] * 10 + df["stage"]
    df["mc"], df["gmc"], df["mb_id"] = 0, 0, -1
    return df


def dp_pair(opt_start: float = 5.5) -> pd.DataFrame:
    """Two DP ranks, one stage; DP 1 computes its forward in 3 s instead of 1 s.

    DP 0 waits in the reduce-scatter from 3 s until DP 1 arrives at 5 s; the transfer is 0.5 s.
    """
    return timeline(
        [
            (0, 0, 1, "forward-compute", 0.0, 1.0, 0),
            (0, 0, 1, "backward-compute", 1.0, 2.0, 0),
            (0, 0, 1, "grads-reduce-scatter", 3.0, 2.5, 0),
            (0, 0, 1, "optimizer", opt_start, 0.1, 0),
            (1, 0, 1, "forward-compute", 0.0, 3.0, 0),
            (1, 0, 1, "backward-compute", 3.0, 2.0, 0),
            (1, 0, 1, "grads-reduce-scatter", 5.0, 0.5, 0),
            (1, 0, 1, "optimizer", 5.5, 0.1, 0),
        ]
    )


def test_dp_collective_waits_for_the_latest_rank_and_ideal_uses_type_means() -> None:
    r = analyze_ops(dp_pair(), pp=1)
    # Replay: DP 1 reaches the reduce-scatter at 5 s, + 0.5 s transfer, + 0.1 s optimizer.
    assert r.t_nodelay[1] == pytest.approx(5.6)
    # Ideal: forward at the mean (1 + 3) / 2 = 2 s, backward 2 s, transfer 0.5 s, optimizer 0.1 s.
    assert r.t_ideal[1] == pytest.approx(4.6)
    assert r.slowdown == pytest.approx(5.6 / 4.6)
    assert r.waste == pytest.approx(1 - 4.6 / 5.6)
    # Only DP 1 traced reproduces the whole slowdown; only DP 0 traced finishes with the ideal.
    assert r.by_dp_rank[1] == pytest.approx(5.6 / 4.6)
    assert r.by_dp_rank[0] == pytest.approx(1.0)
    assert r.by_optype["forward-compute"] == pytest.approx(5.6 / 4.6)
    assert r.by_optype["backward-compute"] == pytest.approx(1.0)
    # Fixing the worst worker (DP 1) explains all of it.
    assert r.fix_workers["workers"] == [1]
    assert r.fix_workers["explained_by_removal"] == pytest.approx(1.0)


def test_launch_delays_are_not_slowdown() -> None:
    r = analyze_ops(dp_pair(opt_start=5.9), pp=1)  # DP 0 launches its optimizer 0.4 s late
    assert r.t_base[1] == pytest.approx(6.0)
    assert r.t_nodelay[1] == pytest.approx(5.6)
    assert r.launch_slowdown == pytest.approx(6.0 / 5.6)


def two_stages(fwd1: float) -> list[tuple]:
    """One micro-batch through two stages; stage 1's forward takes `fwd1`; transfers take 0.1 s."""
    t = 1.0 + 0.1 + fwd1
    return [
        (0, 0, 1, "forward-compute", 0.0, 1.0, 0),
        (0, 0, 1, "forward-send", 1.0, 0.1, 0),
        (0, 1, 1, "forward-recv", 0.0, 1.1, 0),  # waits for stage 0 from 0 s
        (0, 1, 1, "forward-compute", 1.1, fwd1, 0),
        (0, 1, 1, "backward-compute", t, 2.0, 0),
        (0, 1, 1, "backward-send", t + 2.0, 0.1, 0),
        (0, 0, 1, "backward-recv", 1.1, t + 2.1 - 1.1, 0),
        (0, 0, 1, "backward-compute", t + 2.1, 2.0, 0),
    ]


def test_send_and_recv_are_one_transfer_between_adjacent_stages() -> None:
    r = analyze_ops(timeline(two_stages(3.0)), pp=2)
    # 1 + 0.1 + 3 + 2 + 0.1 + 2: the recv's 1.1 s of waiting is not counted again.
    assert r.t_nodelay[1] == pytest.approx(8.2)
    assert r.t_base[1] == pytest.approx(8.2)


def test_last_stage_imbalance_is_explained_by_fixing_the_last_stage() -> None:
    # Two steps: stage 1's forward is 3 s in both, stage 0's 1 s; the mean forward is 2 s.
    rows = timeline(two_stages(3.0))
    second = rows.copy()
    second["step"] = 2
    r = analyze_ops(pd.concat([rows, second]), pp=2)
    assert r.t_ideal[1] == pytest.approx(2 + 0.1 + 2 + 2 + 0.1 + 2)
    assert r.slowdown == pytest.approx(1.0)  # the serial chain sums the forwards: 1 + 3 = 2 + 2
    assert r.by_stage[1] == pytest.approx((2 + 0.1 + 3 + 2 + 0.1 + 2) / 8.2)
    assert r.by_stage[0] == pytest.approx((1 + 0.1 + 2 + 2 + 0.1 + 2) / 8.2)
