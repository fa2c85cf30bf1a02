"""Kernels that look like communication (scope/rankpass/comm_infer.py): by name and structure, counted as
communication with confidence 'inferred' in the step budget, reported with the rule that makes it certain."""

from __future__ import annotations

import pandas as pd
import pytest
from scope.analyzers.budget.findings import find

from scope.rankpass.budget import Host, Waits, budget_rows, gpu_claims
from scope.rankpass.budget_evidence import rank_evidence
from scope.rankpass.comm_infer import identifier, looks_like_comm, rule_for
from tests.test_comm_kernels import NOT_CATALOG

LOOK_LIKE = [
    ("void acme::moe::fused_dispatch_kernel<8, true>(int4*, float*, int)", "dispatch"),
    ("void acme::moe::fused_combine<__nv_bfloat16, 8>(void*)", "combine"),
    ("void team::allreduce_lamport_kernel<float>(float*)", "all_reduce"),
    ("ring_all_gather_kernel", "all_gather"),
    ("void x::reduceScatterKernel<float>(float*)", "reduce_scatter"),
    ("void y::a2a::alltoall_v2(int*)", "all_to_all"),
    ("void z::pipeSend<int>(int*)", "send_recv"),
    ("void z::p2p_recv_kernel(int*)", "send_recv"),
    ("void w::grid_barrier_kernel()", "barrier"),
]
NOT_COMM = [
    # (not the copy and the NCCL kernel: other rules; a bare `dispatch` kernel does look like one by name,
    # and is inferred only with the structure too)
    *(n for n in NOT_CATALOG if not n.startswith(("Memcpy", "nccl", "void dispatch"))),
    "void deep_ep::layout::get_dispatch_layout<256, 32, 8>(long const*, int*)",
    "void at::native::index_put_kernel<float>(...)",
    "triton_poi_fused_all_gather_copy_0",
    "void at::native::(anonymous namespace)::embedding_backward_feature_kernel<float, float, long>(...)",
]


@pytest.mark.parametrize("name,op", LOOK_LIKE, ids=[n[:50] for n, _ in LOOK_LIKE])
def test_names_that_look_like_communication(name: str, op: str) -> None:
    assert looks_like_comm(name) == op


@pytest.mark.parametrize("name", NOT_COMM, ids=[n[:50] for n in NOT_COMM])
def test_compute_names_do_not(name: str) -> None:
    assert looks_like_comm(name) == ""


def test_identifier_and_rule() -> None:
    name = "void acme::moe::fused_dispatch_kernel<8, std::pair<int, int>>(int4*, float*, int)"
    assert identifier(name) == "fused_dispatch_kernel"
    assert rule_for(name, "dispatch") == "fused_dispatch_kernel=dispatch"


DISPATCH = "void acme_ep::moe::fused_dispatch_kernel<8>(int4*)"
WINDOW = pd.DataFrame({"step": [1], "start_ns": [0], "end_ns": [1000]})


def _events(dispatch_stream: int) -> pd.DataFrame:
    rows = [
        ("ProfilerStep#1", "cpu_op", "step", 0, 1000, 1, -1, -1),
        ("cudaLaunchKernel", "cuda_runtime", "runtime", 5, 5, 1, 1, -1),
        ("gemm_kernel", "kernel", "compute", 10, 400, -1, 1, 7),
        ("cudaLaunchKernel", "cuda_runtime", "runtime", 20, 5, 1, 2, -1),
        (DISPATCH, "kernel", "compute", 300, 300, -1, 2, dispatch_stream),
    ]
    cols = ["name", "cat", "kind", "ts_ns", "dur_ns", "thread", "correlation", "stream"]
    df = pd.DataFrame(rows, columns=cols)
    df["coll_op"] = ""
    return df


def test_side_stream_kernel_is_inferred_communication_and_reported() -> None:
    ev = _events(dispatch_stream=20)
    host = Host.of(ev)
    table = budget_rows(0, "gpu", gpu_claims(ev, Waits(), host), WINDOW)
    by = table.groupby(["bucket", "family"])["us"].sum()
    assert by[("comm_overlapped", "inferred")] == pytest.approx(0.11)  # 300..410 under the GEMM
    assert by[("comm_transfer", "inferred")] == pytest.approx(0.19)  # 410..600 alone
    assert by[("compute", "")] == pytest.approx(0.29)  # the GEMM alone (10..300)
    evidence = rank_evidence(0, ev, WINDOW, host)
    (note,) = [f for f in find(None, table, evidence) if f.kind == "comm_inferred"]  # type: ignore[arg-type]
    assert note.severity == "info" and note.metrics["confidence"] == "inferred"
    assert "--comm-kernel 'fused_dispatch_kernel=dispatch'" in note.suggestion
    assert "on a side stream" in note.evidence[0]


def test_same_name_on_the_compute_stream_stays_compute() -> None:
    ev = _events(dispatch_stream=7)
    host = Host.of(ev)
    table = budget_rows(0, "gpu", gpu_claims(ev, Waits(), host), WINDOW)
    assert "inferred" not in set(table["family"]) and not host.inferred
