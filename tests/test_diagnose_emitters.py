"""The emitter tables (analyzers/diagnose/knowledge/nccl_warns.py, c10d_messages.py) checked against the message
classes they claim: per source file, the number of message classes does not fall, every class has a cause,
and a line of every class gets that cause from scope (the line is the format filled in, as NCCL prints it).
Regenerate nccl_warns.py with scripts/nccl_warn_table.py; raise the floors when sources are added."""

from __future__ import annotations

import pytest
from scope.analyzers.diagnose.knowledge import c10d_messages, emitters

from benchmarks import emitter_agreement

# message classes per NCCL source file, releases 2.18-2.28 (2026-12-05)
NCCL_FLOORS = {
    "allocator.cc": 5,
    "bootstrap.cc": 12,
    "dev_runtime.cc": 3,
    "enqueue.cc": 21,
    "gin/gin_host.cc": 7,
    "graph/connect.cc": 3,
    "graph/paths.cc": 7,
    "graph/rings.cc": 2,
    "graph/search.cc": 10,
    "graph/topo.cc": 20,
    "graph/topo.h": 2,
    "graph/tuning.cc": 7,
    "graph/xml.cc": 23,
    "graph/xml.h": 4,
    "group.cc": 7,
    "include/alloc.h": 7,
    "include/checks.h": 3,
    "include/cudawrap.h": 2,
    "include/gdrwrap.h": 1,
    "include/ibvwrap.h": 3,
    "init.cc": 53,
    "misc/argcheck.cc": 8,
    "misc/cudawrap.cc": 11,
    "misc/gdrwrap.cc": 16,
    "misc/ibvsymbols.cc": 1,
    "misc/ibvwrap.cc": 5,
    "misc/ipcsocket.cc": 12,
    "misc/mlx5dvsymbols.cc": 1,
    "misc/mlx5dvwrap.cc": 4,
    "misc/nvmlwrap.cc": 8,
    "misc/profiler.cc": 1,
    "misc/shmutils.cc": 12,
    "misc/socket.cc": 53,
    "misc/strongstream.cc": 3,
    "misc/tuner.cc": 1,
    "misc/utils.cc": 1,
    "mnnvl.cc": 3,
    "net.cc": 4,
    "plugin/net.cc": 7,
    "plugin/profiler.cc": 1,
    "proxy.cc": 43,
    "ras/client_support.cc": 1,
    "ras/ras.cc": 4,
    "register.cc": 1,
    "register/register.cc": 7,
    "scheduler/symmetric_sched.cc": 2,
    "transport.cc": 2,
    "transport/coll_net.cc": 8,
    "transport/gdaki/gin_host_gdaki.cc": 3,
    "transport/net.cc": 4,
    "transport/net_ib.cc": 61,
    "transport/net_socket.cc": 9,
    "transport/nvls.cc": 2,
    "transport/p2p.cc": 3,
    "transport/shm.cc": 4,
}
C10D_FLOORS = {
    "c10/cuda/CUDAException.cpp": 2,
    "third_party/gloo/gloo/transport/tcp/pair.cc": 2,
    "third_party/gloo/gloo/transport/tcp/unbound_buffer.cc": 1,
    "torch/csrc/distributed/c10d/Backend.hpp": 1,
    "torch/csrc/distributed/c10d/NCCLUtils.hpp": 3,
    "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp": 5,
    "torch/csrc/distributed/c10d/ProcessGroupWrapper.cpp": 1,
    "torch/csrc/distributed/c10d/TCPStore.cpp": 2,
    "torch/csrc/distributed/c10d/socket.cpp": 3,
    "torch/distributed/elastic/multiprocessing/api.py": 3,
    "torch/distributed/elastic/rendezvous/c10d_rendezvous_backend.py": 1,
    "torch/distributed/elastic/rendezvous/dynamic_rendezvous.py": 1,
}


@pytest.mark.parametrize("source", sorted(NCCL_FLOORS))
def test_nccl_warn_classes_per_source_are_all_classified_and_agree(source: str) -> None:
    rows = [mc for mc in emitters.message_classes() if mc.source == source]
    assert len(rows) >= NCCL_FLOORS[source]
    for mc in rows:
        assert mc.subsystem in emitters.SUBSYSTEMS and mc.site.startswith("https://github.com/NVIDIA/nccl/blob/v2.")
        kinds = emitter_agreement.scan_kinds(emitters.warn_line(mc))
        assert (not kinds) if mc.kind == "info" else emitter_agreement.agrees_with_table(mc, kinds), (
            mc.format,
            mc.kind,
            kinds,
        )


@pytest.mark.parametrize("source", sorted(C10D_FLOORS))
def test_c10d_torchrun_gloo_classes_per_source_agree(source: str) -> None:
    rows = c10d_messages.sources()[source]
    assert len(rows) >= C10D_FLOORS[source]
    for mc in rows:
        kinds = emitter_agreement.c10d_finding_kinds(mc.example)
        assert emitter_agreement.c10d_agrees(mc, kinds), (mc.name, mc.kind, kinds)


def test_a_warn_naming_its_subsystem_is_classified_by_it_not_as_a_generic_nccl_error() -> None:
    ofi = "w-1:35:89 [5] NCCL WARN NET/OFI Request 0x7f completed with error. RC: 107. Error: Transport endpoint"
    assert emitters.classify_warn(ofi).subsystem == "ofi"  # type: ignore[union-attr]
    shm = "h:1:2 [0] misc/shmutils.cc:50 NCCL WARN Error: failed to extend /dev/shm/nccl-x to 9637892 bytes"
    assert emitter_agreement.scan_kinds(shm) == {"config_error"}
    # a CUDA failure is as specific as the error it quotes: a stream of another device is the program's usage
    handle = "h:1:2 [0] enqueue.cc:1556 NCCL WARN Cuda failure 400 'invalid resource handle'"
    assert emitter_agreement.scan_kinds(handle) == {"config_error"}
    assert emitter_agreement.scan_kinds(
        handle.replace("400 'invalid resource handle'", "700 'an illegal memory access was encountered'")
    ) == {"crash"}
    # errno text decides a failed socket call: the peer went away (a symptom), or no route (the network)
    gone = "h:1:2 [1] misc/socket.cc:518 NCCL WARN Net : Call to recv from 10.0.0.2<58355> failed : Broken pipe"
    assert emitters.classify_warn(gone).subsystem == "peer_lost"  # type: ignore[union-attr]


def test_nccl_result_codes_and_cuda_error_names_are_tabled() -> None:
    assert [emitters.NCCL_RESULTS[c][0] for c in range(1, 8)] == [
        "ncclUnhandledCudaError",
        "ncclSystemError",
        "ncclInternalError",
        "ncclInvalidArgument",
        "ncclInvalidUsage",
        "ncclRemoteError",
        "ncclInProgress",
    ]
    assert emitters.CUDA_ERRORS["uncorrectable ECC error encountered"][0] == "hardware_fault"
