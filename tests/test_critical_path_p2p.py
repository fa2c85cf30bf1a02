"""Pipeline sends and recvs across more than two ranks: paired by the peer each trace names, and each
rank's stage read from who sends to whom.

- The pipeline sample (a real 4-rank gloo job, torch.distributed.pipelining 1F1B, stage 1 three times
  the layers): c10d's send/recv inputs name the peer; gloo's transfers take it.
- A live 4-rank torchrun job (tests/jobs/profiled_p2p_chain.py) with its stages on ranks 2, 0, 3, 1.
- Hand-built NCCL traces in Kineto's format (record_param_comms and its kernels with "Dst Rank" /
  "Src Rank", as Kineto writes them): a 3-stage pipeline laid out on ranks 2, 0, 1, so the stages
  cannot come from the rank numbers.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scope.analyzers.critical_path.assemble import P2P_COLUMNS, p2p_pairs
from scope.analyzers.critical_path.stages import rank_stages

from scope.analysis import run
from scope.result import Analysis
from scope.store import Store

ROOT = Path(__file__).resolve().parent.parent
LAYOUT = [2, 0, 1]  # stage -> rank
COMPUTE_US = [100.0, 300.0, 100.0]  # per stage: stage 1 (rank 0) is the slow one
MICRO_BATCHES = 3
TRANSFER_US = 10.0


@pytest.fixture(scope="module")
def pipeline_sample(tmp_path_factory: pytest.TempPathFactory) -> tuple[Analysis, Path]:
    store = tmp_path_factory.mktemp("p2p") / "pipeline"
    return run(ROOT / "sample_traces" / "pipeline", {"store": store}), store


def test_every_gloo_send_meets_its_recv_on_the_neighbouring_stage(pipeline_sample: tuple[Analysis, Path]) -> None:
    _, store = pipeline_sample
    coll = Store.open(store).collectives()
    p2p = coll[coll["op"].isin(("send", "recv"))]
    # the peer comes from c10d::send / c10d::recv_ (gloo's own annotation names none)
    assert (p2p["peer"] >= 0).all()
    assert ((p2p["peer"] - p2p["rank"]).abs() == 1).all()  # the sample's stages are its ranks: a chain
    who = p2p_pairs(coll[P2P_COLUMNS])
    assert len(who) == len(p2p)  # a group of four ranks, and nothing is left unpaired
    ends = who.groupby(["step", "pg", "seq"])["rank"].agg(list)
    assert (ends.str.len() == 2).all()
    src_dst = ends.index.get_level_values("pg").str.extract(r"(\d+)->(\d+)").astype(int)
    assert ((src_dst[0] - src_dst[1]).abs() == 1).all()


def test_the_path_crosses_ranks_and_groups_by_stage(pipeline_sample: tuple[Analysis, Path]) -> None:
    analysis, _ = pipeline_sample
    truth = json.loads((ROOT / "sample_traces" / "pipeline" / "ground_truth.json").read_text())
    steps = analysis.tables["critical_path_steps"]
    assert abs(float(steps["fidelity"].median()) - 1.0) < 0.02
    assert int(steps["conflicts"].sum()) == 0
    path = analysis.tables["critical_path"]
    real = path[path["rank"] >= 0]
    assert (real["stage"] == real["rank"]).all()  # the sample runs stage s on rank s
    for _, seg in path.groupby("step"):
        assert seg[seg["rank"] >= 0]["rank"].nunique() >= 2  # the transfers join the ranks
    shares = analysis.tables["critical_path_shares"]
    by_stage = shares[shares["by"] == "stage"].groupby("key")["us"].sum()
    assert "-1" not in by_stage.index
    assert by_stage.idxmax() == str(truth["expected"]["stage"])  # the heavy stage carries the path


CHAIN_JOB = ROOT / "tests" / "jobs" / "profiled_p2p_chain.py"
CHAIN_LAYOUT = [2, 0, 3, 1]  # stage -> rank; the job's stage 1 (rank 0) computes 24 times as long


@pytest.mark.multirank
def test_a_live_gloo_pipeline_out_of_rank_order_gets_its_stages_and_path(tmp_path: Path) -> None:
    """A real 4-rank torchrun job (gloo, plain dist.send/recv) whose stages run on ranks 2, 0, 3, 1."""
    import sys

    from tests.torch_jobs import run_profiled_job

    out = tmp_path / "traces"
    out.mkdir()
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "4", str(CHAIN_JOB),
           str(out), ",".join(map(str, CHAIN_LAYOUT))]  # fmt: skip
    proc = run_profiled_job(cmd, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    analysis = run(out, {"store": tmp_path / "store"})
    coll = Store.open(tmp_path / "store").collectives()
    p2p = coll[coll["op"].isin(("send", "recv"))]
    assert (p2p["peer"] >= 0).all() and len(p2p_pairs(coll[P2P_COLUMNS])) == len(p2p)
    assert rank_stages(coll, 4) == {rank: stage for stage, rank in enumerate(CHAIN_LAYOUT)}
    steps = analysis.tables["critical_path_steps"]
    # replay within 5% on this live CPU job (0.977 once on a 2-core CI machine, 0.997 usually); the 2% target
    # is held on the recorded runs (test_critical_path_runs), where scheduling noise is not re-drawn each run
    assert abs(float(steps["fidelity"].median()) - 1.0) < 0.05 and int(steps["conflicts"].sum()) == 0
    shares = analysis.tables["critical_path_shares"]
    per_step = shares[shares["by"] == "stage"].pivot_table(index="step", columns="key", values="us", aggfunc="sum")
    # the slow stage (on rank 0) carries the path in most steps: a sum over steps let one step in which a 2-core CI
    # machine descheduled rank 1 for a quarter of a second hand the whole run to stage 3 (seen once in CI; under
    # three busy loops here stage 1 held 62-94 ms of each step's path against at most 24 ms for any other stage)
    winners = per_step.fillna(0).idxmax(axis=1)
    assert (winners == "1").sum() > len(winners) / 2, per_step
    path = analysis.tables["critical_path"]
    real = path[path["rank"] >= 0]
    assert (real["stage"] == real["rank"].map({r: s for s, r in enumerate(CHAIN_LAYOUT)})).all()
    # the pipeline analyzer reads the same stages (its timing reading had them as 0, 2, 1, 3)
    table = analysis.tables["pipeline"][["rank", "stage"]].drop_duplicates().sort_values("stage")
    assert table["rank"].tolist() == CHAIN_LAYOUT


def _trace(rank: int, events: list[dict]) -> dict:
    return {
        "schemaVersion": 1,
        "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": len(LAYOUT)},
        "traceEvents": events,
    }


class _Rank:
    """One rank's events: a host thread that launches everything at once, and one GPU stream."""

    def __init__(self, rank: int) -> None:
        self.rank, self.events, self.cpu_at, self.corr = rank, [], 1.0, rank * 1000

    def kernel(self, name: str, start: float, dur: float, args: dict | None = None) -> None:
        self.corr += 1
        host = {"ph": "X", "pid": 1, "tid": 1, "ts": self.cpu_at}
        if args:
            self.events.append({**host, "cat": "cpu_op", "name": "record_param_comms", "dur": 4.0, "args": args})
        self.events.append({**host, "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": self.cpu_at + 1,
                            "dur": 2.0, "args": {"correlation": self.corr}})  # fmt: skip
        gpu = {"correlation": self.corr, "device": 0, "stream": 7, **(args or {})}
        self.events.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": start, "dur": dur,
                            "args": gpu})  # fmt: skip
        self.cpu_at += 5.0


def _comm_args(op: str, peer: int) -> dict:
    return {"Collective name": op, "In msg nelems": 1024, "Out msg nelems": 1024, "Group size": len(LAYOUT),
            "dtype": "Float", "Process Group Name": "0", "Process Group Description": "default_pg",
            "Process Group Ranks": "[0, 1, 2]", "Dst Rank" if op == "send" else "Src Rank": peer}  # fmt: skip


def _nccl_pipeline(out: Path, steps: int = 2) -> Path:
    """Forward-only GPipe over LAYOUT: stage s computes micro-batch m after receiving it, then sends it
    on; a send and its recv both end TRANSFER_US after the later of the two arrives."""
    ranks = {r: _Rank(r) for r in LAYOUT}
    origin = 0.0
    for step in range(steps):
        free = [origin + 50.0] * len(LAYOUT)
        pending = [0.0] * len(LAYOUT)  # when each stage's send of the current micro-batch arrives
        for _ in range(MICRO_BATCHES):
            for s, rank in enumerate(LAYOUT):
                me = ranks[rank]
                if s > 0:
                    prev, arrive = LAYOUT[s - 1], free[s]
                    end = max(arrive, pending[s - 1]) + TRANSFER_US
                    ranks[prev].kernel("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", pending[s - 1],
                                       end - pending[s - 1], _comm_args("send", rank))  # fmt: skip
                    me.kernel("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", arrive, end - arrive,
                              _comm_args("recv", prev))  # fmt: skip
                    free[s - 1], free[s] = end, end
                me.kernel("gemm_kernel", free[s], COMPUTE_US[s])
                free[s] += COMPUTE_US[s]
                pending[s] = free[s]
        end_all = max(free) + 20.0
        for me in ranks.values():
            me.events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step + 1}", "pid": 1,
                              "tid": 1, "ts": origin, "dur": end_all - origin})  # fmt: skip
        origin = end_all + 10.0
        for me in ranks.values():
            me.cpu_at = origin + 1.0  # the next step's launches inside its own window
    out.mkdir(parents=True, exist_ok=True)
    for r, me in ranks.items():
        (out / f"rank{r}.pt.trace.json").write_text(json.dumps(_trace(r, me.events)))
    return out


@pytest.fixture(scope="module")
def nccl_pipeline(tmp_path_factory: pytest.TempPathFactory) -> tuple[Analysis, Path]:
    base = tmp_path_factory.mktemp("nccl_p2p")
    traces = _nccl_pipeline(base / "traces")
    return run(traces, {"store": base / "store"}), base / "store"


def test_kineto_src_and_dst_rank_pair_a_pipeline_laid_out_out_of_rank_order(
    nccl_pipeline: tuple[Analysis, Path],
) -> None:
    analysis, store = nccl_pipeline
    coll = Store.open(store).collectives()
    sends = coll[coll["op"] == "send"]
    assert len(sends) == 2 * MICRO_BATCHES * (len(LAYOUT) - 1)
    next_of = {LAYOUT[s]: LAYOUT[s + 1] for s in range(len(LAYOUT) - 1)}
    assert [next_of[r] for r in sends["rank"]] == sends["peer"].tolist()
    assert len(p2p_pairs(coll[P2P_COLUMNS])) == 2 * len(sends)
    assert rank_stages(coll, len(LAYOUT)) == {rank: stage for stage, rank in enumerate(LAYOUT)}
    path = analysis.tables["critical_path"]
    real = path[(path["rank"] >= 0) & ~path["cls"].isin(("gap", "offset"))]
    for _, seg in real.groupby("step"):
        # micro-batch 0 enters at stage 0 and the last leaves at the last stage: the path runs the chain
        assert seg["stage"].iloc[0] == 0 and seg["stage"].iloc[-1] == len(LAYOUT) - 1
        assert (np.diff(seg["stage"].to_numpy()) >= 0).all()
        assert set(seg["rank"]) == set(LAYOUT)
    shares = analysis.tables["critical_path_shares"]
    by_rank = shares[shares["by"] == "rank"].groupby("key")["us"].sum()
    assert by_rank.idxmax() == str(LAYOUT[1])  # the slow stage's rank
    assert int(analysis.tables["critical_path_steps"]["conflicts"].sum()) == 0


def test_the_pure_python_reader_reads_the_same_peers(
    nccl_pipeline: tuple[Analysis, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scope.ingest import ingest

    _, store = nccl_pipeline
    monkeypatch.setenv("SCOPE_NATIVE", "0")
    ingest(store.parent / "traces", tmp_path / "py")
    native, python = Store.open(store), Store.open(tmp_path / "py")
    for r in LAYOUT:
        a = native.read_events(r, columns=["event_id", "peer"]).to_pandas()
        b = python.read_events(r, columns=["event_id", "peer"]).to_pandas()
        assert a.equals(b) and (a["peer"] >= 0).any()
    pd.testing.assert_frame_equal(native.collectives(), python.collectives())


def _p2p(rows: list[tuple[int, str, int, int]], ranks: str = "[0,1,2,3,4,5,6,7]") -> pd.DataFrame:
    """(rank, op, peer, ts) rows of step 0."""
    frame = pd.DataFrame(rows, columns=["rank", "op", "peer", "ts_ns"])
    return frame.assign(step=0, group_ranks=ranks)


def test_stages_of_two_data_parallel_chains_and_of_an_interleaved_ring() -> None:
    # DP 2 x PP 2: chains 4 -> 1 and 0 -> 5 (forward sends first, then the backward's reverse)
    chains = _p2p([(4, "send", 1, 0), (1, "recv", 4, 1), (1, "send", 4, 5), (4, "recv", 1, 6),
                   (0, "send", 5, 0), (5, "recv", 0, 1), (5, "send", 0, 5), (0, "recv", 5, 6)])  # fmt: skip
    assert rank_stages(chains, 8) == {4: 0, 1: 1, 0: 0, 5: 1}
    # interleaved stages on 3 ranks, 3 -> 6 -> 2 -> 3 (the last rank sends back to the first)
    ring = _p2p([(3, "send", 6, 0), (6, "recv", 3, 1), (6, "send", 2, 2), (2, "recv", 6, 3),
                 (2, "send", 3, 4), (3, "recv", 2, 5)])  # fmt: skip
    assert rank_stages(ring, 8) == {3: 0, 6: 1, 2: 2}


def test_without_peers_a_pipeline_group_smaller_than_the_world_gives_the_order() -> None:
    rows = _p2p([(6, "send", -1, 0), (2, "recv", -1, 1)], ranks="[6,2]")
    assert rank_stages(rows, 8) == {6: 0, 2: 1}
    # the world's group says nothing about stages, nor does a star (one rank sending to three)
    assert rank_stages(rows.assign(group_ranks="[0,1,2,3,4,5,6,7]"), 8) == {}
    star = _p2p([(0, "send", 1, 0), (0, "send", 2, 1), (0, "send", 3, 2), (1, "recv", 0, 3),
                 (2, "recv", 0, 4), (3, "recv", 0, 5)])  # fmt: skip
    assert rank_stages(star, 8) == {}
    # peers that are a subgroup's own numbers (gloo's c10d ops name no group): 4 "sends to 1", 5 "receives
    # from 0"; the two ends disagree, so no link (and no stage) is read from them
    local = _p2p([(4, "send", 1, 0), (5, "recv", 0, 1), (5, "send", 0, 2), (4, "recv", 1, 3)])
    assert rank_stages(local, 8) == {}
