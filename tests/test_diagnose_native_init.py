"""A segmentation fault right after a native library's start-up lines: the printed fix names that library's
install to check (knowledge/native_init.py), on real excerpts of public threads."""

from __future__ import annotations

from pathlib import Path

from scope.analyzers.diagnose.knowledge.native_init import starting_library

from tests.helpers import top_failure

# deepseek-ai/DeepEP#145 (https://github.com/deepseek-ai/DeepEP/issues/145): NVSHMEM's IB transport starting,
# then the fault
DEEPEP_NVSHMEM = (
    "node2:2621572:2621572 [1] NVSHMEM INFO NVSHMEM_ENABLE_NIC_PE_MAPPING = 0, device 0 setting dev_id = 0\n"
    "node2:2621572:2621572 [1] NVSHMEM INFO NVSHMEM_ENABLE_NIC_PE_MAPPING = 0, device 1 setting dev_id = 1\n"
    "/root/DeepEP/nvshmem_src/src/modules/transport/ibrc/ibrc.cpp 1455 IBRC only supports One NIC / PE. All other "
    "NICs will be ignored.\n"
    "[node2:2621572:0:2621572] Caught signal 11 (Segmentation fault: address not mapped to object at address "
    "0x8000008f)\n"
)

# openucx/ucx#6675 (https://github.com/openucx/ucx/issues/6675): linked with UCX 1.9, loaded 1.8
UCX_MISMATCH = (
    "[1618778295.702469] [jedi063:22469:0]        address.c:917  UCX  ERROR address version mismatch: expected 0, "
    "actual 12\n"
    "[jedi063:22469:0:22472] Caught signal 11 (Segmentation fault: invalid permissions for mapped object at "
    "address 0x7f625c145c98)\n"
    "==== backtrace (tid:  22472) ====\n"
)


def test_a_fault_after_nvshmem_starts_names_the_nvshmem_install(tmp_path: Path) -> None:
    top = top_failure(tmp_path, DEEPEP_NVSHMEM)
    assert top.kind == "crash"
    text = top.suggestion
    assert "It crashed while NVSHMEM was starting (line 3:" in text and "nvshmem-info -a" in text
    # the library's check comes first; the generic checklist stays after it
    assert text.index("nvshmem-info -a") < text.index("Get the native stack")


def test_a_fault_after_a_ucx_error_names_the_ucx_install(tmp_path: Path) -> None:
    text = top_failure(tmp_path, UCX_MISMATCH).suggestion
    assert "It crashed while UCX was starting (line 1:" in text and "ucx_info -v" in text
    assert "nvshmem-info" not in text


def test_a_fault_with_no_library_start_up_before_it_names_none() -> None:
    # the fault comes first: a library's line after it is a consequence, not what was starting
    assert starting_library(DEEPEP_NVSHMEM.splitlines(keepends=True)[-1] + DEEPEP_NVSHMEM) is None
    assert starting_library("NVSHMEM INFO ready\nstep 1 loss 2.3\n") is None
