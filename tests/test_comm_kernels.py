"""The communication-kernel catalog (scope/ingest/comm_kernels.py) on real kernel names, and the
guarantee that it reclassifies nothing in the shared traces except the kernels it names."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import msgspec
import pytest

from scope.ingest.classify import GPU_CATS, Rules, _classify_base, classifier_for, classify, guess_op
from scope.ingest.comm_kernels import CATALOG, KEYWORDS, catalog_match
from scope.ingest.comm_rules import parse_rule
from tests.conftest import SHARED_DATA, shared_data

# Kernel names as Kineto/nsys print them, found in public traces, reports and source (the family's
# source file is in the catalog row). (name, family, op)
CATALOG_CASES = [
    (
        "void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(c10::BFloat16*, unsigned long, "
        "unsigned int**, unsigned long, unsigned long)",
        "torch_symm_mem",
        "all_reduce",
    ),
    ("void <unnamed>::multimem_all_reduce_kernel<c10::BFloat16, (int)16>(...)", "torch_symm_mem", "all_reduce"),
    (
        "void (anonymous namespace)::multimem_one_shot_all_reduce_kernel<float, 16>(float*, float*, unsigned long, "
        "unsigned int**, unsigned long, unsigned long)",
        "torch_symm_mem",
        "all_reduce",
    ),
    (
        "void (anonymous namespace)::multimem_all_gather_kernel<16>(char*, char*, unsigned long, unsigned int**, "
        "unsigned long, unsigned long)",
        "torch_symm_mem",
        "all_gather",
    ),
    (
        "void (anonymous namespace)::one_shot_all_reduce_kernel<c10::BFloat16, 16, 8>(c10::BFloat16**, ...)",
        "torch_symm_mem",
        "all_reduce",
    ),
    ("two_shot_all_reduce_kernel_inplace", "torch_symm_mem", "all_reduce"),
    ("allToAllV(void*, void*, long*, unsigned long, int, int)", "torch_nvshmem", "all_to_all"),
    ("allToAllV_2d(void*, void*, long*, long*, unsigned long, int, int, int, long)", "torch_nvshmem", "all_to_all"),
    (
        "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, "
        "__nv_bfloat16*, int, int)",
        "custom_all_reduce",
        "all_reduce",
    ),
    (
        "void vllm::cross_device_reduce_2stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, "
        "__nv_bfloat16*, int, int)",
        "custom_all_reduce",
        "all_reduce",
    ),
    ("_ZN5aiter26cross_device_reduce_2stageIDF16bLi8ELb0EEEv", "custom_all_reduce", "all_reduce"),
    ("aiter::cross_device_reduce_2stage_write_mode", "custom_all_reduce", "all_reduce"),
    (
        "void tensorrt_llm::kernels::oneShotAllReduceKernel<__nv_bfloat16, 8, true, false>("
        "tensorrt_llm::kernels::AllReduceParams)",
        "trtllm_all_reduce",
        "all_reduce",
    ),
    (
        "void tensorrt_llm::kernels::twoShotAllReduceKernel<__nv_bfloat16, 8, true>("
        "tensorrt_llm::kernels::AllReduceParams)",
        "trtllm_all_reduce",
        "all_reduce",
    ),
    (
        "void flashinfer::trtllm_allreduce_fusion::allreduce_fusion_kernel_oneshot_lamport<(flashinfer::"
        "trtllm_allreduce_fusion::AllReduceFusionPattern)1, __nv_bfloat16, 8, false, false>(flashinfer::...)",
        "trtllm_all_reduce",
        "all_reduce",
    ),
    ("allreduce_fusion_kernel_twoshot_sync", "trtllm_all_reduce", "all_reduce"),
    (
        "void userbuffers_fp16_sum_inplace_gpu_rr_rs_oop<8>(int, int, int, int, int, int, int, void**, int, void*, "
        "int, int, int, int, int, int, unsigned long)",
        "te_userbuffers",
        "reduce_scatter",
    ),
    ("userbuffers_fp16_sum_inplace_gpu_rr_rs_oop_fp8", "te_userbuffers", "reduce_scatter"),
    ("userbuffers_fp16_sum_inplace_gpu_rw_ag", "te_userbuffers", "all_gather"),
    (
        "void userbuffers_fp16_sum_inplace_gpu_rw<8>(int, int, int, int, int, int, void**, int, int, int, unsigned long)",  # noqa: E501
        "te_userbuffers",
        "all_reduce",
    ),
    ("kuserbuffers_pushsend(int*, int*, int4*, int4*, int)", "te_userbuffers", "send_recv"),
    ("kuserbuffers_pushsendrecv_atomic", "te_userbuffers", "send_recv"),
    (
        "void deep_ep::intranode::notify_dispatch<8>(int const*, int*, int const*, int*, int, int, int, bool const*, "
        "int*, int*, int, int, void**, int**, int)",
        "deepep",
        "barrier",
    ),
    (
        "void deep_ep::intranode::cached_notify_dispatch<(int)8>(const int *, int, void **, int **, int)",
        "deepep",
        "barrier",
    ),
    ("void deep_ep::intranode::cached_notify_combine<8>(void**, int*, int, int, int, int**, int)", "deepep", "barrier"),
    (
        "void deep_ep::intranode::dispatch<(int)2, (int)768, (int)8192>(int4 *, float *, float *, int *, ...)",
        "deepep",
        "dispatch",
    ),
    ("void deep_ep::intranode::combine<__nv_bfloat16, 8, 768, 4096>(...)", "deepep", "combine"),
    (
        "void deep_ep::internode::notify_dispatch<false, 4>(int const*, int*, int, int const*, int*, int const*, int*, "
        "int, bool const*, int, int, int, ...)",
        "deepep",
        "barrier",
    ),
    ("void deep_ep::internode::cached_notify(int, int, int, int, int, int, int*, ...)", "deepep", "barrier"),
    ("void deep_ep::internode::dispatch<false, 4, false, 16384, 7, 8>(int4*, ...)", "deepep", "dispatch"),
    ("void deep_ep::internode::combine<__nv_bfloat16, 4, false, 16384, 8>(int4*, ...)", "deepep", "combine"),
    (
        "void deep_ep::internode_ll::dispatch<(bool)1, (bool)1, (int)6144>(void *, void *, int *, long *, int *, int...",  # noqa: E501
        "deepep",
        "dispatch",
    ),
    (
        "void deep_ep::internode_ll::dispatch_opt1_hidden6144<1, false, 1, false, false, 6144, false, false>(void*, ...)",  # noqa: E501
        "deepep",
        "dispatch",
    ),
    ("void deep_ep::internode_ll::combine<7168, 9, 4, false>(void*, void*, int*, ...)", "deepep", "combine"),
    (
        "void deep_ep::elastic::dispatch_impl<true, 3, false, false, 24, 4, 14, 8, 14336, 0, 4096, 256, 8, 128, 1, "
        "200000000000l>(void*, ...)",
        "deepep",
        "dispatch",
    ),
    (
        "void deep_ep::elastic::hybrid_combine_impl<false, 24, 4, 8, 8, 2, 14336, 4096, 256, 8>(void*, ...)",
        "deepep",
        "combine",
    ),
    (
        "void mscclpp::ep::intranode::notify_dispatch<8>(int const*, int*, int const*, int*, int, int, int, ...)",
        "deepep",
        "barrier",
    ),
    ("void magi_attn_comm::grpcoll::intranode::dispatch<8, 768, 8192>(int4*, ...)", "deepep", "dispatch"),
    # the same kernels vendored under another namespace: recognised by their structure
    ("void acme_moe::ep::intranode::dispatch<8, 768, 6144>(int4*, float*, ...)", "deepep", "dispatch"),
    ("void fastep::internode_ll::combine<7168, 9, 4, false>(void*, void*, int*, ...)", "deepep", "combine"),
    ("void moe_comm::internode_ll::dispatch<true, true, 7168>(void*, ...)", "deepep", "dispatch"),
    ("void x::y::internode::cached_notify(int, int, int, int, int, int, int*, ...)", "deepep", "barrier"),
    ("void my_ep::intranode::notify_combine<8>(void**, int*, int, int, int, int**, int)", "deepep", "barrier"),
    ("void team::ep_v2::internode::notify_dispatch<false, 4>(int const*, int*, ...)", "deepep", "barrier"),
    ("void nvshmemi_barrier_all_on_stream_kernel()", "nvshmem", "barrier"),
    ("void nvshmemi_alltoall_on_stream_kernel<int>(...)", "nvshmem", "all_to_all"),
    ("void mscclpp::executionKernel<__nv_bfloat16, false>(int, __nv_bfloat16*, ...)", "mscclpp", ""),
    ("void mscclpp::allreduce8<__nv_bfloat16>(...)", "mscclpp", "all_reduce"),
]

# Look like communication, are compute (or belong to other rules): the catalog must not take them.
NOT_CATALOG = [
    "void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, int, long, long, long, long, bool)",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
    "at::native::sum_functor<float, float, float>::operator()>, unsigned int, float, 4, 4>>(...)",
    "void at::native::(anonymous namespace)::indexSelectLargeIndex<float, long, unsigned int, 2, 2, -2, true>(...)",
    "void at::native::_scatter_gather_elementwise_kernel<128, 4, ...scatter_add...>(int, ...)",
    "void deep_ep::layout::get_dispatch_layout<256, 32, 8>(long const*, int*, int*, int*, bool*, int, int, int, int)",
    "void deep_ep::internode_ll::clean_low_latency_buffer<32>(int*, int, int*, int)",
    "void acme::internode_ll::clean_low_latency_buffer<32>(int*, int, int*, int)",
    "void acme::layout::get_dispatch_layout<256, 32, 8>(long const*, int*, int*, int*, bool*, int, int, int, int)",
    "void acme::intranode::dispatch_prepare_indices<8>(int*, int)",  # not the dispatch kernel itself
    "void dispatch<8>(int4*)",  # no expert-parallel module around it
    "void deep_ep::elastic::dispatch_copy_epilogue_impl<true, false, false, 24, 8, 16, 1, 8, 14336, 0, 4096>(...)",
    "void cutlass::device_kernel<at::cuda::detail::enable_3x_kernel_for_sm9x<cutlass::gemm::kernel::GemmUniversal>>",
    "nvjet_tst_192x192_64x3_1x2_h_bz_coopB_NNN",
    "void vllm::moe::moe_align_block_size_kernel<int>(int const*, int*, int*, int*, int, int, int, int, unsigned long)",
    "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>(...)",
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous "
    "namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)",
    "triton_red_fused_all_reduce_add_0",  # inductor's name for a fused local reduction
    "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<float, "
    "float, float, at::native::binary_internal::DivFunctor<float>>>(at::TensorIteratorBase&, ...)",
    "Memcpy DtoD (Device -> Device)",
    "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",  # NCCL's own rule, before the catalog
]


@pytest.mark.parametrize("name,family,op", CATALOG_CASES, ids=[c[0][:60] for c in CATALOG_CASES])
def test_catalog_names_its_kernels(name: str, family: str, op: str) -> None:
    row = catalog_match(name)
    assert row is not None, f"{name} is not in the catalog"
    assert (row.family, row.op) == (family, op)
    assert classify("kernel", name) == ("comm", op)
    assert re.match(r"^[\w.-]+/[\w.-]+: \S", row.source), f"row {row.pattern} has no repository: path source"


@pytest.mark.parametrize("name", NOT_CATALOG, ids=[n[:60] for n in NOT_CATALOG])
def test_catalog_leaves_lookalikes_alone(name: str) -> None:
    assert catalog_match(name) is None
    assert classify("kernel", name) == _classify_base("kernel", name)


def test_every_catalog_family_is_exercised_and_every_row_has_its_fields() -> None:
    assert {f for _, f, _ in CATALOG_CASES} == {row.family for row in CATALOG}
    for row in CATALOG:
        assert row.transport and row.meta and row.source, row
        re.compile(row.pattern)
        assert any(k in row.pattern for k in KEYWORDS), f"{row.pattern}: no keyword of the prefilter"


def test_catalog_applies_to_kernels_only() -> None:
    name = "void deep_ep::intranode::dispatch<8, 768, 6144>(int4*, ...)"
    assert classify("cpu_op", name) == ("cpu_op", "")
    assert classify("kernel", name) == ("comm", "dispatch")


def test_user_rules_op_given_guessed_and_first_match_wins() -> None:
    rules = Rules((parse_rule("my_ring_kernel=allreduce"), parse_rule(r"fused_a2a_v\d"), parse_rule("ring")))
    classify_ = classifier_for(rules)
    assert classify_("kernel", "void acme::my_ring_kernel<float>(float*)") == ("comm", "all_reduce")
    assert classify_("kernel", "fused_a2a_v2_dispatch") == ("comm", "dispatch")  # op read from the name
    assert classify_("kernel", "ring_thing") == ("comm", "")
    assert classify_("kernel", "gemm_kernel") == ("compute", "")
    assert classify_.source["void acme::my_ring_kernel<float>(float*)"] == "user:my_ring_kernel=all_reduce"
    assert classify("kernel", "void acme::my_ring_kernel<float>(float*)") == ("compute", "")  # no rules: compute
    assert guess_op("x_reduce_scatter_y") == "reduce_scatter"


def test_bad_user_rule_is_a_clear_error() -> None:
    from scope.errors import ScopeError

    with pytest.raises(ScopeError, match=r"--comm-kernel: .*'foo\(=all_reduce'.* not a valid regular expression"):
        parse_rule("foo(=all_reduce")
    with pytest.raises(ScopeError, match="empty"):
        parse_rule("=all_reduce")


# ------------------------------------------------------------------ no false reclassification


def _trace_files() -> list[Path]:
    if not SHARED_DATA.exists():
        return []
    return sorted(p for p in SHARED_DATA.rglob("*") if p.name.endswith((".json", ".json.gz")) and p.is_file())


class _Event(msgspec.Struct):
    name: str = ""
    cat: str = ""


class _Trace(msgspec.Struct):
    traceEvents: list[_Event | None] = []


def _pairs(path: Path) -> set[tuple[str, str]] | None:
    """Distinct (cat, name) of a trace file's events; None when the file is not a Kineto-style trace."""
    raw = path.read_bytes()
    if path.name.endswith(".gz"):
        raw = gzip.decompress(raw)
    try:
        trace = msgspec.json.decode(raw, type=_Trace)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return {(e.cat, e.name) for e in trace.traceEvents if e is not None} or None


# Every kernel of the shared traces that the catalog makes communication (and nothing else may change).
EXPECTED_RECLASSIFIED = {
    "tracelens/b200_vllm_eager_rank0.json.gz": {
        "void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(c10::BFloat16*, unsigned long, "
        "unsigned int**, unsigned long, unsigned long)"
    },
}


@pytest.mark.shared_data
def test_only_catalog_kernels_change_class_in_every_shared_trace() -> None:
    files = _trace_files() or [shared_data("tracelens")]
    changed: dict[str, set[str]] = {}
    n_traces = 0
    for path in files:
        pairs = _pairs(path)
        if pairs is None:
            continue
        n_traces += 1
        moved = {name for cat, name in pairs if classify(cat, name) != _classify_base(cat, name)}
        assert all(cat in GPU_CATS for cat, name in pairs if name in moved)
        if moved:
            changed[str(path.relative_to(SHARED_DATA))] = moved
    assert n_traces >= 20, f"only {n_traces} traces found under {SHARED_DATA}"
    assert changed == EXPECTED_RECLASSIFIED
