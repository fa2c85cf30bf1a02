"""The critical-path graph core on hand-built graphs whose longest paths are known."""

from __future__ import annotations

import numpy as np
import pytest
from scope.analyzers.critical_path.core import (
    COLLECTIVE,
    LAUNCH,
    P2P,
    PROGRAM,
    Builder,
    Graph,
    conflicts,
    solve,
)
from scope.analyzers.critical_path.path import segments, select, shares, what_if


def _diamond() -> tuple[Graph, list[int]]:
    """A(10) -> B(5) -> D(1) and A -> C(20) -> D: the path is A, C, D = 31 µs."""
    b = Builder()
    a = b.node(0, "thread 1", "A", "host", 0.0, 10.0)
    bb = b.node(0, "thread 1", "B", "host", 10.0, 5.0)
    c = b.node(0, "stream 7", "C", "compute", 10.0, 20.0)
    d = b.node(0, "thread 1", "D", "host", 30.0, 1.0)
    b.edge(a, bb, PROGRAM)
    b.edge(a, c, LAUNCH)
    b.edge(bb, d, PROGRAM)
    b.edge(c, d, COLLECTIVE)
    return b.build(), [a, bb, c, d]


def test_diamond_longest_path() -> None:
    g, (a, _, c, d) = _diamond()
    sol = solve(g)
    assert sol.path.tolist() == [a, c, d]
    assert sol.length == pytest.approx(31.0)
    assert sol.end[d] == pytest.approx(31.0)


def test_lags_count_on_the_path_and_in_the_segments() -> None:
    b = Builder()
    x = b.node(0, "thread 1", "x", "host", 0.0, 4.0)
    y = b.node(0, "thread 1", "y", "host", 7.0, 2.0)
    b.edge(x, y, PROGRAM, lag=3.0)  # 3 µs of untraced host time between them
    g = b.build()
    sol = solve(g)
    assert sol.length == pytest.approx(9.0)
    seg = segments(g, sol)
    assert seg["op"].tolist() == ["x", "(program gap)", "y"]
    assert seg["us"].sum() == pytest.approx(sol.length)


def _step(b: Builder, compute_us: list[float], t0: float = 0.0) -> dict[str, int]:
    """One DDP-like step of len(compute_us) ranks: compute, an all-reduce, then a 5 µs optimizer."""
    arrivals, completions, comps = [], [], []
    for r, us in enumerate(compute_us):
        comps.append(b.node(r, "thread", "forward_backward", "compute", t0, us))
    last = t0 + max(compute_us)
    for r, us in enumerate(compute_us):
        a = b.node(r, "thread", "all_reduce", "arrive", t0 + us, 0.0)
        b.edge(comps[r], a, PROGRAM)
        c = b.node(r, "thread", "all_reduce", "comm", last, 2.0)
        o = b.node(r, "thread", "optimizer", "compute", last + 2.0, 5.0)
        b.edge(c, o, PROGRAM)
        arrivals.append(a)
        completions.append(c)
    return {"barrier": b.barrier(arrivals, completions)}


@pytest.mark.parametrize("slow", [0, 2, 1])
def test_collective_last_arriver_sets_the_path(slow: int) -> None:
    b = Builder()
    compute = [10.0, 10.0, 10.0]
    compute[slow] = 30.0
    _step(b, compute)
    g = b.build()
    sol = solve(g)
    assert sol.length == pytest.approx(30.0 + 2.0 + 5.0)
    seg = segments(g, sol)
    assert seg.iloc[0]["rank"] == slow and seg.iloc[0]["op"] == "forward_backward"
    assert seg.iloc[0]["waiting_on"] == slow
    sh = shares(seg)
    waited = sh[(sh["by"] == "waiting_on_rank")]
    assert waited["key"].tolist() == [str(slow)] and waited["us"].iloc[0] == pytest.approx(30.0)


def test_last_arriver_changes_from_step_to_step() -> None:
    """Three steps in one graph (each step's optimizer feeds the next step's compute): the path moves
    from rank to rank as the last arriver does."""
    b = Builder()
    slow_by_step = [1, 0, 2]
    prev_opt: list[int] = []
    t0 = 0.0
    for slow in slow_by_step:
        compute = [10.0, 10.0, 10.0]
        compute[slow] = 25.0
        first_node = b.nodes[0].__len__()
        _step(b, compute, t0)
        comps = list(range(first_node, first_node + 3))
        for r, o in enumerate(prev_opt):
            b.edge(o, comps[r], PROGRAM)
        opts = [i for i in range(first_node, len(b.nodes[0])) if b.nodes[2][i] == "optimizer"]
        prev_opt = opts
        t0 += 25.0 + 2.0 + 5.0
    g = b.build()
    sol = solve(g)
    assert sol.length == pytest.approx(3 * 32.0)
    seg = segments(g, sol)
    fb = seg[seg["op"] == "forward_backward"]
    assert fb["rank"].tolist() == slow_by_step
    assert fb["waiting_on"].tolist() == slow_by_step


def _pipeline(stage_us: list[float], n_mb: int) -> Graph:
    """GPipe forward of len(stage_us) stages over n_mb micro-batches, sends matched to recvs."""
    b = Builder()
    prev_on_stage: list[int | None] = [None] * len(stage_us)
    for mb in range(n_mb):
        upstream: int | None = None
        for s, us in enumerate(stage_us):
            f = b.node(s, "thread", f"F{mb}", "compute", 0.0, us, stage=s)
            if prev_on_stage[s] is not None:
                b.edge(prev_on_stage[s], f, PROGRAM)
            if upstream is not None:
                b.edge(upstream, f, P2P)
            prev_on_stage[s] = f
            upstream = f
    g = b.build()
    # anchors only matter for sources; the observed starts are the replay's (consistent clocks)
    g.start[:] = solve(g).start
    return g


def test_pipeline_path_crosses_the_bubble() -> None:
    """Stage 1 is 3x slower: the path runs stage 0's first forward, crosses to stage 1 and stays there."""
    g = _pipeline([1.0, 3.0, 1.0], 4)
    sol = solve(g)
    assert sol.length == pytest.approx(1.0 + 4 * 3.0 + 1.0)
    stages = g.stage[sol.path].tolist()
    assert stages == [0, 1, 1, 1, 1, 2]
    gain = what_if(g, select(g, stage=1), scale=1 / 3)
    assert gain.new_us == pytest.approx(3.0 + 3.0)  # balanced: 4 micro-batches + fill/drain of 2
    assert gain.naive_us == pytest.approx(4 * 2.0)  # the path's stage-1 time saved, 8 µs
    assert gain.gain_us == pytest.approx(8.0)


def test_what_if_gain_is_capped_by_the_next_path() -> None:
    """Halving the longest branch gains less than the naive sum: the other branch becomes critical."""
    g, (_, _, c, _) = _diamond()
    mask = np.zeros(g.n_nodes, dtype=bool)
    mask[c] = True
    gain = what_if(g, mask, scale=0.5)
    assert gain.naive_us == pytest.approx(10.0)
    assert gain.new_us == pytest.approx(21.0)  # A, C(10), D: C still critical over B (5)
    gain = what_if(g, mask, scale=0.1)
    assert gain.naive_us == pytest.approx(18.0)
    assert gain.gain_us == pytest.approx(15.0)  # B (5 µs) now sets the step: 10 + 5 + 1


def test_clock_conflicts_are_counted_not_bent() -> None:
    """A recv that (by its host's clock) ended before its send began: the edge is counted, and the replay
    honours it (the step grows) rather than moving the observed times."""
    b = Builder()
    send = b.node(0, "thread", "send", "comm", 100.0, 10.0)
    recv = b.node(1, "thread", "recv", "comm", 50.0, 10.0)
    b.edge(send, recv, P2P)
    g = b.build()
    found = conflicts(g)
    assert found.count == 1 and found.by_kind == {"p2p": 1}
    assert found.worst_us == pytest.approx(60.0)
    assert solve(g).start[recv] == pytest.approx(110.0)


def test_cycle_is_cut_and_counted() -> None:
    b = Builder()
    x = b.node(0, "t", "x", "host", 0.0, 5.0)
    y = b.node(1, "t", "y", "host", 1.0, 5.0)
    b.edge(x, y, P2P)
    b.edge(y, x, P2P)
    g = b.build()
    assert conflicts(g).cut == 1
    sol = solve(g)
    assert sol.length == pytest.approx(10.0)


def test_re_solve_reuses_the_plan() -> None:
    g = _pipeline([1.0] * 8, 16)
    plan = g.plan()
    solve(g)
    solve(g, g.dur * 2)
    assert g.plan() is plan
    assert solve(g, g.dur * 2).length == pytest.approx(2 * solve(g).length)


def test_send_recv_of_a_two_rank_group_join_the_ranks() -> None:
    """Stage 0 computes 100 µs then sends; stage 1 posts its recv at 10 µs and waits: paired through their
    two-rank group, the path runs stage 0's compute, crosses at the transfer and ends on stage 1."""
    import pandas as pd
    from scope.analyzers.critical_path.assemble import StepGraphs, p2p_pairs
    from scope.analyzers.critical_path.kineto import NODE_COLUMNS, RankPart

    def part(rank: int, rows: list[tuple], edges: list[tuple[int, int]]) -> RankPart:
        nodes = pd.DataFrame(rows, columns=NODE_COLUMNS)
        e = pd.DataFrame([(s, d, PROGRAM, 0.0) for s, d in edges], columns=["src", "dst", "kind", "lag"])
        return RankPart(rank, nodes, e)

    stage0 = part(
        0,
        [
            (0, "thread 1", "forward", "cpu", 0.0, 100.0, 1, "op"),
            (0, "thread 1", "send", "arrive", 100.0, 0.0, 2, "arrive"),
            (0, "thread 1", "send", "comm", 100.0, 5.0, 2, "complete"),
        ],
        [(0, 1), (1, 2)],
    )
    stage1 = part(
        1,
        [
            (0, "thread 9", "recv", "arrive", 10.0, 0.0, 7, "arrive"),
            (0, "thread 9", "recv", "comm", 10.0, 95.0, 7, "complete"),
            (0, "thread 9", "forward", "cpu", 105.0, 100.0, 8, "op"),
        ],
        [(0, 1), (1, 2)],
    )
    coll = pd.DataFrame(
        {"rank": [0, 1], "pg": ["pp01", "pp01"], "op": ["send", "recv"], "ts_ns": [100_000, 10_000],
         "event_id": [2, 7], "step": [0, 0], "group_size": [2, 2], "group_ranks": ["[0,1]", "[0,1]"]}
    )  # fmt: skip
    who = p2p_pairs(coll)
    assert len(who) == 2
    g = StepGraphs([stage0, stage1], who).graph(0)
    sol = solve(g)
    assert sol.length == pytest.approx(205.0)
    seg = segments(g, sol)
    real = seg[seg["cls"] != "gap"]
    assert real["rank"].tolist() == [0, 1, 1] and real["op"].tolist() == ["forward", "recv", "forward"]
    assert real["us"].tolist() == pytest.approx([100.0, 5.0, 100.0])  # the recv's wait is not its own time
    assert seg.iloc[0]["waiting_on"] == 0
    # a group of three names no peer: nothing is paired
    assert p2p_pairs(coll.assign(group_size=3)).empty
