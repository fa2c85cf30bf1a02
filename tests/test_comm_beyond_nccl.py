"""Communication kernels beyond NCCL, end to end: the vLLM B200 trace's symmetric-memory all-reduces,
a DeepEP expert-parallel step (dispatch/combine on their own stream beside GEMMs), and user rules
from the command line and from scope.toml (with the store re-parsed when the rules change)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from scope.analyzers.comm_streams import analyze as comm_streams

from scope.cli import main
from scope.ingest import ingest
from scope.rankpass.intervals import total, union
from tests.conftest import shared_data
from tests.helpers import context, inventory

MULTIMEM = "multimem_all_reduce_kernel"


def _gpu_kernels(path: Path) -> list[dict]:
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    return [e for e in events if e.get("cat") == "kernel"]


def _union_us(kernels: list[dict]) -> float:
    ts = np.array([round(k["ts"] * 1000) for k in kernels], dtype=np.int64)
    dur = np.array([round(k["dur"] * 1000) for k in kernels], dtype=np.int64)
    return total(union(ts, ts + dur)) / 1e3


@pytest.mark.shared_data
@pytest.mark.parametrize("native", ["1", "0"])
def test_vllm_symmetric_memory_all_reduces_are_communication(
    native: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCOPE_NATIVE", native)
    trace = shared_data("tracelens", "b200_vllm_eager_rank0.json.gz")
    kernels = _gpu_kernels(trace)
    multimem = [k for k in kernels if MULTIMEM in k["name"]]
    nccl = [k for k in kernels if k["name"].startswith("nccl")]
    assert len(multimem) == 73 and len(nccl) == 1
    report = ingest(trace, tmp_path / "store")
    store = report.store
    assert store.run["comm_kernels"] == {"catalog:torch_symm_mem": 73, "nccl": 1}
    ctx = context(trace, store)
    bd = ctx.table("breakdown")
    assert list(bd["step"]) == [-1]  # no ProfilerStep: one window over the trace
    row = bd.iloc[0]
    want = _union_us(multimem + nccl)
    assert row["comm_us"] == pytest.approx(want, rel=0.01)
    assert row["comm_us"] > 50 * _union_us(nccl)  # was the AllGather's 22 us alone (now 2141 us)
    compute = [k for k in kernels if MULTIMEM not in k["name"] and not k["name"].startswith("nccl")]
    assert row["compute_us"] == pytest.approx(_union_us(compute), rel=0.01)
    # The collectives table: one rank traced, so per-rank instances; op from the catalog.
    coll = store.collectives()
    assert (coll["op"] == "all_reduce").sum() == 73 and (coll["op"] == "all_gather").sum() == 1
    # Not taken from an unrelated record_param_comms (the AllGather's) on the launching thread; sizes
    # from the symm_mem::multimem_all_reduce_ op that launched each kernel (Input Dims x bf16).
    ar = coll[coll["op"] == "all_reduce"]
    assert ar["pg"].ne("3").all()
    assert list(ar["bytes"]) == _launch_op_bytes(trace)
    assert (ar["dtype"] == "c10::BFloat16").all()
    streams = comm_streams(ctx).tables["comm_streams"]
    assert list(streams["stream"]) == [7] and streams.iloc[0]["kernels"] == 74


def _launch_op_bytes(path: Path) -> list[int]:
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    ops = [e for e in events if e.get("name") == "symm_mem::multimem_all_reduce_"]
    return [int(np.prod(e["args"]["Input Dims"][0])) * 2 for e in sorted(ops, key=lambda e: e["ts"])]


# ------------------------------------------------------------------ DeepEP-style synthetic trace

T0 = 1_700_000_000_000.0  # us, as Kineto writes epoch microseconds
GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off"
NOTIFY = (
    "void deep_ep::intranode::notify_dispatch<8>(int const*, int*, int const*, int*, int, int, int, bool const*, "
    "int*, int*, int, int, void**, int**, int)"
)
DISPATCH = "void deep_ep::intranode::dispatch<8, 768, 6144>(int4*, float*, int*, long*, float*, int*, int*, int)"
COMBINE = "void deep_ep::intranode::combine<__nv_bfloat16, 8, 768, 4096>(int4*, float*, int4 const*, float const*)"
# (name, stream, start us, end us) inside a 1000 us step: GEMMs on the compute stream, DeepEP on its own.
KERNELS = [
    (GEMM, 7, 100, 300),
    (GEMM, 7, 350, 550),
    (GEMM, 7, 600, 800),
    (NOTIFY, 20, 90, 110),
    (DISPATCH, 20, 120, 320),
    (COMBINE, 20, 560, 700),
]


def _deepep_trace(rank: int, world: int, kernels: list[tuple[str, int, int, int]] | None = None) -> dict:
    events: list[dict] = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#5", "pid": 1, "tid": 1, "ts": T0, "dur": 1000},
    ]
    for i, (name, stream, start, end) in enumerate(kernels or KERNELS):
        corr = 100 + i
        launch = T0 + start - 5
        events.append(
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaLaunchKernel",
                "pid": 1,
                "tid": 1,
                "ts": launch,
                "dur": 3,
                "args": {"correlation": corr, "External id": corr},
            }
        )
        events.append(
            {
                "ph": "X",
                "cat": "kernel",
                "name": name,
                "pid": 0,
                "tid": stream,
                "ts": T0 + start,
                "dur": end - start,
                "args": {
                    "device": 0,
                    "stream": stream,
                    "correlation": corr,
                    "External id": corr,
                    "grid": [132, 1, 1],
                    "block": [768, 1, 1],
                },
            }
        )
    return {
        "schemaVersion": 1,
        "distributedInfo": {
            "backend": "nccl",
            "rank": rank,
            "world_size": world,
            "pg_count": 1,
            "pg_config": [
                {
                    "pg_name": "0",
                    "pg_desc": "default_pg",
                    "backend_config": "cuda:nccl",
                    "pg_size": world,
                    "ranks": list(range(world)),
                }
            ],
        },
        "deviceProperties": [{"id": 0, "name": "NVIDIA H800"}],
        "traceEvents": events,
    }


def _write_deepep(folder: Path, world: int = 2) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for rank in range(world):
        body = json.dumps(_deepep_trace(rank, world)).encode()
        (folder / f"rank{rank}.pt.trace.json.gz").write_bytes(gzip.compress(body))
    return folder


@pytest.mark.parametrize("native", ["1", "0"])
def test_deepep_dispatch_combine_overlap_per_stream(
    native: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCOPE_NATIVE", native)
    src = _write_deepep(tmp_path / "run")
    store = ingest(src, tmp_path / "store").store
    assert store.run["comm_kernels"] == {"catalog:deepep": 6}
    ctx = context(src, store)
    bd = ctx.table("breakdown").set_index("rank")
    for rank in (0, 1):
        row = bd.loc[rank]
        assert row["step"] == 5
        assert row["compute_us"] == pytest.approx(600)  # the GEMMs alone, not the whole step
        assert row["comm_us"] == pytest.approx(20 + 200 + 140)
        assert row["overlapped_comm_us"] == pytest.approx(10 + 180 + 100)
        assert row["exposed_comm_us"] == pytest.approx(70)
    streams = comm_streams(ctx).tables["comm_streams"]
    assert list(streams["stream"]) == [20, 20] and list(streams["rank"]) == [0, 1]
    s = streams.iloc[0]
    assert s["ops"] == "barrier:1,combine:1,dispatch:1"
    assert s["overlap_pct"] == pytest.approx(100 * 290 / 360)
    # Same sequence on both ranks: the instances match across ranks by group and order.
    inst = ctx.matched.instances
    assert sorted(inst["op"]) == ["barrier", "combine", "dispatch"]
    assert (inst["n_ranks"] == 2).all()


def test_deepep_wait_for_a_late_peer_is_exposed_wait(tmp_path: Path) -> None:
    """Rank 1 enters combine 30 us late: rank 0's exposed combine time before it is waiting, not transfer."""
    folder = tmp_path / "run"
    folder.mkdir()
    late = [(n, s, 590 if n == COMBINE else a, b) for n, s, a, b in KERNELS]
    for rank in range(2):
        trace = _deepep_trace(rank, 2, late if rank == 1 else KERNELS)
        (folder / f"rank{rank}.pt.trace.json").write_text(json.dumps(trace))
    ctx = context(folder, ingest(folder, tmp_path / "store").store)
    bd = ctx.table("breakdown").set_index("rank")
    assert bd.loc[0, "exposed_comm_wait_us"] == pytest.approx(30)  # 560..590, before gemm 3 at 600
    assert bd.loc[1, "exposed_comm_wait_us"] == pytest.approx(0)
    assert bd.loc[0, "exposed_comm_transfer_us"] == pytest.approx(70 - 30)


def test_groupless_kernels_run_unevenly_stay_per_rank(tmp_path: Path) -> None:
    """Kernels that name no group, in a job of several groups, when one rank ran an extra dispatch:
    per-rank instances for that op, no false collective_mismatch; the even ones still match."""
    from scope.analyzers.collectives import analyze as collectives

    folder = tmp_path / "run"
    folder.mkdir()
    for rank in range(2):
        trace = _deepep_trace(rank, 2, KERNELS + ([(DISPATCH, 20, 850, 900)] if rank == 1 else []))
        pgs = [{"pg_name": str(i), "pg_desc": "undefined", "pg_size": 2, "ranks": [0, 1]} for i in range(2)]
        trace["distributedInfo"]["pg_config"] = pgs
        (folder / f"rank{rank}.pt.trace.json").write_text(json.dumps(trace))
    ctx = context(folder, ingest(folder, tmp_path / "store").store)
    inst = ctx.matched.instances
    dispatch = inst[inst["op"] == "dispatch"]
    assert dispatch["p2p"].all() and len(dispatch) == 3 and (dispatch["n_ranks"] == 1).all()
    others = inst[inst["op"] != "dispatch"]
    assert (~others["p2p"]).all() and (others["n_ranks"] == 2).all()
    assert [f for f in collectives(ctx).findings if f.kind == "collective_mismatch"] == []


# ------------------------------------------------------------------ user rules: CLI and scope.toml

INHOUSE = "void acme::ring_exchange_kernel<float, 8>(float*, float*, int)"


def _inhouse_run(folder: Path) -> Path:
    trace = _deepep_trace(0, 1)
    for e in trace["traceEvents"]:
        if e.get("cat") == "kernel" and e["name"] == COMBINE:
            e["name"] = INHOUSE
    folder.mkdir(parents=True)
    (folder / "rank0.pt.trace.json").write_text(json.dumps(trace))
    return folder


def _kinds(store_dir: Path) -> dict[str, str]:
    import pyarrow.parquet as pq

    events = pq.read_table(store_dir / "events" / "rank-00000.parquet", columns=["name", "kind", "coll_op"])
    rows = zip(*(events.column(c).to_pylist() for c in ("name", "kind", "coll_op")), strict=True)
    return {n: f"{k}/{op or ''}" for n, k, op in rows}


def test_user_rule_from_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _inhouse_run(tmp_path / "run")
    store = tmp_path / "store"
    assert main(["ingest", str(run), "--store", str(store), "-q"]) == 0
    assert _kinds(store)[INHOUSE] == "compute/"
    capsys.readouterr()
    args = ["ingest", str(run), "--store", str(store), "-q", "--comm-kernel", r"acme::ring_exchange\w*=alltoall"]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert r"comm-kernel rule 'acme::ring_exchange\\w*=all_to_all': 1 kernel launch(es)" in err
    assert _kinds(store)[INHOUSE] == "comm/all_to_all"  # the rules changed: the rank was re-parsed
    assert main(args) == 0
    assert "parsed: 0  reused: 1" in capsys.readouterr().out  # same rules: the store is current
    out = tmp_path / "a.json"
    assert (
        main(
            [
                "analyze",
                str(run),
                "--store",
                str(store),
                "-q",
                "--json",
                str(out),
                "--no-tables",
                "--comm-kernel",
                r"acme::ring_exchange\w*=alltoall",
                "--comm-kernel",
                "no_such_kernel",
            ]
        )
        == 0
    )
    report = json.loads(out.read_text())
    counts = report["run"]["comm_kernels"]
    assert counts[r"user:acme::ring_exchange\w*=all_to_all"] == 1 and counts["user:no_such_kernel"] == 0
    assert counts["catalog:deepep"] == 2
    assert main(["ingest", str(run), "--store", str(store), "-q", "--comm-kernel", "bad(["]) == 2
    assert "not a valid regular expression" in capsys.readouterr().err


def test_user_rule_from_scope_toml_and_pyproject(tmp_path: Path) -> None:
    run = _inhouse_run(tmp_path / "run")
    (run / "scope.toml").write_text('comm_kernels = ["ring_exchange_kernel=all_to_all"]\n')
    report = ingest(run, tmp_path / "s1", rules=_rules(run))
    assert _kinds(tmp_path / "s1")[INHOUSE] == "comm/all_to_all"
    assert report.store.run["comm_kernels"]["user:ring_exchange_kernel=all_to_all"] == 1
    (run / "scope.toml").unlink()
    (run / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.scope]\ncomm_kernels = [{pattern = "acme::ring", op = "broadcast"}]\n'
    )
    ingest(run, tmp_path / "s2", rules=_rules(run))
    assert _kinds(tmp_path / "s2")[INHOUSE] == "comm/broadcast"


def _rules(run: Path):
    from scope.ingest.comm_rules import load_rules

    return load_rules(inventory(run))


def test_both_ingest_paths_write_the_same_store_with_catalog_and_user_rules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scope.ingest.classify import Rules
    from scope.ingest.comm_rules import parse_rule
    from tests.test_native_ingest import _differences

    src = _write_deepep(tmp_path / "run", world=2)
    trace = json.loads(gzip.decompress((src / "rank1.pt.trace.json.gz").read_bytes()))
    for e in trace["traceEvents"]:
        if e["name"] == COMBINE:
            e["name"] = INHOUSE
    (src / "rank1.pt.trace.json.gz").write_bytes(gzip.compress(json.dumps(trace).encode()))
    rules = Rules((parse_rule("ring_exchange=all_to_all"),))
    stores = {}
    for native in ("0", "1"):
        monkeypatch.setenv("SCOPE_NATIVE", native)
        stores[native] = ingest(src, tmp_path / f"store{native}", rules=rules).store
    assert stores["0"].run["comm_kernels"] == stores["1"].run["comm_kernels"]
    assert stores["1"].run["comm_kernels"] == {"catalog:deepep": 5, "user:ring_exchange=all_to_all": 1}
    assert _differences(tmp_path / "store0", tmp_path / "store1", [0, 1]) == []


@pytest.mark.parametrize("native", ["1", "0"])
def test_custom_all_reduce_takes_its_size_from_the_launching_op(
    native: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vLLM's _C_custom_ar::all_reduce(fa, inp, out, reg_buffer, reg_buffer_sz): the input's bytes, not inp + out."""
    monkeypatch.setenv("SCOPE_NATIVE", native)
    kernel = "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, ...)"
    trace = _deepep_trace(0, 1, [(GEMM, 7, 100, 300), (kernel, 7, 320, 340)])
    dims = [[], [8, 1024], [8, 1024], [], []]
    types = ["long", "c10::BFloat16", "c10::BFloat16", "long", "long"]
    trace["traceEvents"].append(
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "_C_custom_ar::all_reduce",
            "pid": 1,
            "tid": 1,
            "ts": T0 + 310,
            "dur": 8,
            "args": {"Input Dims": dims, "Input type": types},
        }
    )
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "rank0.pt.trace.json").write_text(json.dumps(trace))
    coll = ingest(folder, tmp_path / "store").store.collectives()
    assert list(coll["op"]) == ["all_reduce"] and list(coll["bytes"]) == [8 * 1024 * 2]


@pytest.mark.parametrize("native", ["1", "0"])
def test_expert_parallel_kernels_under_another_namespace_count_in_full(
    native: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build that vendors DeepEP under its own namespace: the kernels are recognised by their structure
    and the step budget counts their whole union as communication (the held-out target: 80-110%)."""
    monkeypatch.setenv("SCOPE_NATIVE", native)
    renamed = [(n.replace("deep_ep::", "acme_moe::ep::"), s, a, b) for n, s, a, b in KERNELS]
    folder = tmp_path / "run"
    folder.mkdir()
    for rank in range(2):
        body = json.dumps(_deepep_trace(rank, 2, renamed)).encode()
        (folder / f"rank{rank}.pt.trace.json.gz").write_bytes(gzip.compress(body))
    store = ingest(folder, tmp_path / "store").store
    assert store.run["comm_kernels"] == {"catalog:deepep": 6}
    table = context(folder, store).table("budget")
    comm = table[table["bucket"].str.startswith("comm_")]
    assert set(comm["family"]) == {"deepep"}
    per_rank = comm.groupby("rank")["us"].sum()
    assert per_rank.tolist() == pytest.approx([20 + 200 + 140] * 2)  # the union of the six kernels, in full
