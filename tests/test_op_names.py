"""One op-name table (scope/op_names.py) for ingest and diagnose: every name PyTorch prints for a collective
(c10d OpType, Flight Recorder profiling names) is known, and both sides call one collective by one name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from scope.analyzers.diagnose.readers.scan import scan_text

from scope.ingest.classify import classify
from scope.op_names import OP_NAMES, canonical_op
from scope.rankpass.match import _BUS_FACTOR

torch = pytest.importorskip("torch")
TORCH = Path(torch.__file__).parent
# Names that are not one collective: the entry closing a coalescing group, communicator split, a window.
NOT_ONE_COLLECTIVE = {"coalesced", "split", "new_window", "unknown"}


def test_every_c10d_optype_the_installed_torch_declares_has_a_canonical_name() -> None:
    header = (TORCH / "include/torch/csrc/distributed/c10d/Work.hpp").read_text()
    body = header[header.index("enum class OpType") :]
    names = re.findall(r"^\s*(\w+) = \d+,", body[: body.index("};")], re.M)
    assert "ALLREDUCE_COALESCED" in names and len(names) >= 19
    unknown = {n for n in names if canonical_op(n) not in OP_NAMES and n.lower() not in NOT_ONE_COLLECTIVE}
    assert not unknown, unknown


def test_every_flight_recorder_collective_of_the_installed_torch_has_a_canonical_name() -> None:
    from torch.distributed.flight_recorder.components.types import COLLECTIVES, P2P

    assert "allreduce_coalesced" in COLLECTIVES
    unknown = {
        n for n in COLLECTIVES | P2P if canonical_op(f"nccl:{n}") not in OP_NAMES and n not in NOT_ONE_COLLECTIVE
    }
    assert not unknown, unknown


@pytest.mark.parametrize(
    ("printed", "op"),
    [
        ("ALLREDUCE_COALESCED", "all_reduce"),  # c10d watchdog OpType
        ("nccl:allreduce_coalesced", "all_reduce"),  # Flight Recorder
        ("allreduce_coalesced", "all_reduce"),  # record_param_comms
        ("c10d::allreduce_", "all_reduce"),
        ("_ALLGATHER_BASE", "all_gather"),
        ("nccl:ALLGATHER_coalesced", "all_gather"),
        ("REDUCE_SCATTER_TENSOR_COALESCED", "reduce_scatter"),
        ("all_to_all_single", "all_to_all"),
        ("RECVANYSOURCE", "recv"),
        ("nccl:send 0->1", "send"),
        ("SendRecv", "send_recv"),
        ("nccl:coalesced", "coalesced"),
        ("start_coalescing", "start_coalescing"),
        ("MyRingExchange", "my_ring_exchange"),
    ],
)
def test_canonical_names(printed: str, op: str) -> None:
    assert canonical_op(printed) == op


def test_ingest_and_diagnose_name_a_coalesced_all_reduce_alike() -> None:
    # ingest: the CPU-side op and the GPU kernel of one coalesced all-reduce
    assert classify("cpu_op", "c10d::allreduce_coalesced_") == ("cpu_op", "all_reduce")
    assert classify("kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)") == (
        "comm",
        "all_reduce",
    )
    # diagnose: the watchdog line of the same collective
    line = (
        "[rank1]:[E105 10:00:00.000000000 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE_COALESCED, NumelIn=8, NumelOut=8, Timeout(ms)=600000) ran "
        "for 600123 milliseconds before timing out.\n"
    )
    timeouts = [a for a in scan_text(line, "rank1.log").anomalies if a.details.get("op_raw")]
    assert [a.details["op"] for a in timeouts] == ["all_reduce"]


def test_every_op_with_a_bus_bandwidth_factor_is_a_canonical_name() -> None:
    assert set(_BUS_FACTOR) <= set(OP_NAMES)
