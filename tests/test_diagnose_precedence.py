"""The written precedence among the findings of one failure (analyzers/diagnose/reasoning/rootcause.py docstring):
a subsystem-specific configuration or network cause before the generic NCCL error before the crash that
follows it, on real cascades (corpus cases, and real lines of failure_log_samples.txt put in the order the
programs print them: the NCCL WARN, then c10d's DistBackendError, then its take-down)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from scope.analyzers.diagnose import diagnose

from benchmarks.failure_corpus import strip_header
from scope.finding import FAILURE_KINDS
from tests.conftest import shared_data

pytestmark = pytest.mark.shared_data

TAKE_DOWN = (
    "[E ProcessGroupNCCL.cpp:455] Some NCCL operations have failed or timed out. Due to the asynchronous nature "
    "of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.\n"
    "[E ProcessGroupNCCL.cpp:460] To avoid data inconsistency, we are taking the entire process down.\n"
)


def _failures(tmp_path: Path, text: str) -> list:
    (tmp_path / "job.log").write_text(text)
    return [f for f in diagnose(tmp_path).findings if f.kind in FAILURE_KINDS and f.severity != "info"]


def _sample_block(group: str, index: int) -> str:
    text = shared_data("failure_log_samples.txt").read_text()
    body = re.split(r"^### GROUP: ", text, flags=re.M)
    block = next(b for b in body if b.startswith(group))
    src = re.split(r"^# source: ", block, flags=re.M)[1 + index]
    return "\n".join(ln for ln in src.split("\n")[1:] if ln.strip() and not ln.startswith("#")) + "\n"


def _distbackend_error() -> str:
    """c10d's report of the NCCL error (pytorch#131781 in failure_log_samples.txt), without its 'Last error'."""
    lines = _sample_block("nccl_system_error_socket", 1).split("\n")
    return "\n".join(ln for ln in lines if "DistBackendError" in ln or "ncclSystemError" in ln) + "\n"


def test_an_ib_completion_error_then_the_nccl_error_then_the_abort_is_a_network_fault(tmp_path: Path) -> None:
    ib = _sample_block("nccl_warn_ib_completion_error", 1)  # kp-ddp-worker-0: status=12, net.cc -> 6
    found = _failures(tmp_path, ib + _distbackend_error() + TAKE_DOWN)
    assert found[0].kind == "network_fault" and "retry counter exceeded" in found[0].summary
    assert all(f.kind != "nccl_error" for f in found)  # the generic NCCL error is its cascade


def test_a_socket_warn_before_the_generic_system_error_names_the_network(tmp_path: Path) -> None:
    warn = _sample_block("nccl_system_error_socket", 3)  # NCCL#975: socketStartConnect ... connection abort
    found = _failures(tmp_path, warn + _distbackend_error() + TAKE_DOWN)
    assert found[0].kind == "network_fault"


def test_a_topology_warn_before_a_traceback_is_the_configuration_cause(tmp_path: Path) -> None:
    _, log = strip_header(shared_data("failure_corpus", "aws-aws-ofi-nccl_785.txt").read_text())
    top = _failures(tmp_path, log)[0]
    assert top.kind == "config_error" and "graph/xml.h" in top.summary
    assert top.metrics["confidence"] in ("medium", "high")


def test_a_cuda_failure_of_the_programs_stream_use_outranks_the_crash_it_causes(tmp_path: Path) -> None:
    log = (
        "node1:10:20 [0] enqueue.cc:1556 NCCL WARN Cuda failure 400 'invalid resource handle'\n"
        "[rank0]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317,"
        " unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n" + TAKE_DOWN
    )
    top = _failures(tmp_path, log)[0]
    assert top.kind == "config_error" and "set_device" in top.suggestion
