"""Two classes: libibverbs' warning for a provider that is not installed (benign: rdma-core goes on with the providers
it loaded), and DDP's start-up check of the ranks' parameter counts, whose reading depends on the numbers it quotes
(a count that never arrived: the network; two real counts: two models). Lines written here in the programs' formats
(rdma-core libibverbs/dynamic_driver.c, torch/csrc/distributed/c10d/reducer.cpp)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import diagnose_failures, top_failure

# ---- libibverbs: a provider listed in /etc/libibverbs.d whose library is not installed --------------------------

PROVIDER_LINES = (
    # rdma-core: lib<provider>-rdmav<ABI>.so, any provider and ABI
    "libibverbs: Warning: couldn't load driver 'libmlx4-rdmav34.so': libmlx4-rdmav34.so: cannot open shared object "
    "file: No such file or directory",
    "libibverbs: Warning: couldn't load driver 'libefa-rdmav57.so': libefa-rdmav57.so: cannot open shared object "
    "file: No such file or directory",
    "libibverbs: Warning: couldn't load driver 'libvmw_pvrdma-rdmav25.so': libvmw_pvrdma-rdmav25.so: cannot open "
    "shared object file: No such file or directory",
    "libibverbs: Warning: couldn't load driver 'libirdma-rdmav44.so': libirdma-rdmav44.so: cannot open shared "
    "object file: No such file or directory",
    # libibverbs 1.1: the provider's name in quotes, or the library's path
    "libibverbs: Warning: couldn't load driver 'cxgb4': libcxgb4-rdmav2.so: cannot open shared object file: No such "
    "file or directory",
    "libibverbs: Warning: couldn't load driver /usr/lib64/libhfi1verbs-rdmav2.so: /usr/lib64/libhfi1verbs-rdmav2.so: "
    "cannot open shared object file: No such file or directory",
)


@pytest.mark.parametrize("line", PROVIDER_LINES)
def test_an_absent_provider_alone_is_no_finding(tmp_path: Path, line: str) -> None:
    assert diagnose_failures(tmp_path, line + "\n") == []


def _nccl_tests(warnings: str, error_col: str = "0") -> str:
    rows = "".join(
        f"{size:>12} {size // 4:>13}     float     sum      -1   {t:7.2f}    0.01    0.02  {error_col:>5}   "
        f"{t:7.2f}    0.01    0.02  {error_col:>5}\n"
        for size, t in ((64, 18.3), (4096, 21.7), (1048576, 96.4), (268435456, 2301.5))
    )
    return (
        "# nThread 1 nGpus 8 minBytes 64 maxBytes 268435456 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
        "validation: 1 graph: 0\n#\n# Using devices\n"
        + "".join(
            f"#  Rank  {r} Group  0 Pid  31822 on  dgx-a17 device  {r} [0x{0x17 + r:02x}] NVIDIA H100 80GB HBM3\n"
            for r in range(8)
        )
        + warnings
        + "#\n#                                                              out-of-place                       "
        "in-place\n#       size         count      type   redop    root     time   algbw   busbw  error     time   "
        "algbw   busbw  error\n#        (B)    (elements)                               (us)  (GB/s)  (GB/s)        "
        "    (us)  (GB/s)  (GB/s)\n" + rows + "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 41.2207 \n#\n"
    )


def test_a_healthy_nccl_tests_run_with_provider_warnings_is_healthy(tmp_path: Path) -> None:
    warnings = PROVIDER_LINES[0] + "\n" + PROVIDER_LINES[2] + "\n"
    assert diagnose_failures(tmp_path, _nccl_tests(warnings, error_col="2e-07")) == []


def test_the_missing_verbs_library_itself_stays_the_cause(tmp_path: Path) -> None:
    # libibverbs.so.1 absent: no verbs at all; the absent provider above it is not what the finding quotes
    log = (
        PROVIDER_LINES[1] + "\n"
        "Traceback (most recent call last):\n"
        '  File "check_rdma.py", line 4, in <module>\n'
        '    ibv = ctypes.CDLL("libibverbs.so.1")\n'
        "OSError: libibverbs.so.1: cannot open shared object file: No such file or directory\n"
    )
    found = diagnose_failures(tmp_path, log)
    assert [f.kind for f in found] == ["config_error"]
    assert "libibverbs.so.1" in found[0].suggestion and "libefa" not in found[0].summary


def test_no_ib_device_then_a_failure_keeps_its_reading_without_the_provider(tmp_path: Path) -> None:
    log = (
        "gpu-b2:90112:90112 [0] NCCL INFO Bootstrap : Using ib0:192.168.40.12<0>\n" + PROVIDER_LINES[3] + "\n"
        "gpu-b2:90112:90112 [0] NCCL INFO NET/IB : No device found.\n"
        "gpu-b2:90112:90112 [0] NCCL INFO NET/Socket : Using [0]ib0:192.168.40.12<0>\n"
        "Traceback (most recent call last):\n"
        '  File "pretrain.py", line 51, in <module>\n'
        "    torch.distributed.barrier()\n"
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1971, "
        "remote process exited or there was a network error, NCCL version 2.20.5\n"
    )
    found = diagnose_failures(tmp_path, log)
    assert found and found[0].kind == "network_fault"
    assert not any("couldn't load driver" in f.summary for f in found)


def test_a_provider_that_is_there_and_fails_to_map_is_still_read(tmp_path: Path) -> None:
    # not an absent file: the locked-memory limit's reading stays, and the absent provider adds nothing
    log = (
        PROVIDER_LINES[4] + "\n"
        "libibverbs: Warning: couldn't load driver 'mlx5': libmlx5-rdmav2.so: failed to map segment from shared "
        "object: Cannot allocate memory\n"
    )
    found = diagnose_failures(tmp_path, log)
    assert len(found) == 1 and "locked-memory" in found[0].summary


# ---- DDP's start-up check of the parameter counts (reducer.cpp verify_params_across_processes) -----------------


def _ddp(message: str, rank: int = 1) -> str:
    return (
        f"[rank{rank}]: Traceback (most recent call last):\n"
        f'[rank{rank}]:   File "/srv/job/train.py", line 140, in <module>\n'
        f"[rank{rank}]:     model = DistributedDataParallel(model, device_ids=[local_rank])\n"
        f'[rank{rank}]:   File "/usr/local/lib/python3.11/site-packages/torch/nn/parallel/distributed.py", line 835, '
        "in __init__\n"
        f"[rank{rank}]:     _verify_param_shape_across_processes(self.process_group, parameters)\n"
        f"[rank{rank}]: RuntimeError: {message}\n"
    )


@pytest.mark.parametrize(
    ("mine", "theirs"),
    [("291", "0"), ("77", "-1082130432"), ("1204", "1065353216")],  # nothing arrived, or garbage
)
def test_a_count_that_never_arrived_is_the_network(tmp_path: Path, mine: str, theirs: str) -> None:
    message = (
        f"DDP expects same model across all ranks, but Rank 5 has {mine} params, while rank 2 has inconsistent "
        f"{theirs} params."
    )
    found = top_failure(tmp_path, _ddp(message, rank=5))
    assert found.kind == "network_fault"
    for name in ("NCCL_SOCKET_IFNAME", "NCCL_IB_GID_INDEX", "NCCL_IB_HCA", "same_network", "nccl-tests"):
        assert name in found.suggestion
    assert f"received {theirs} as rank 2's" in found.suggestion and mine in found.suggestion


def test_the_same_count_wrapped_by_a_framework_is_read_alike(tmp_path: Path) -> None:
    # fastai's callback wraps the exception's text in its own sentence, no traceback
    line = (
        "RuntimeError: Exception occured in `DistributedTrainer` when calling event `before_fit`: DDP expects same "
        "model across all ranks, but Rank 3 has 221 params, while rank 0 has inconsistent 0 params.\n"
    )
    assert top_failure(tmp_path, line).kind == "network_fault"


def test_two_real_counts_are_two_models(tmp_path: Path) -> None:
    message = (
        "DDP expects same model across all ranks, but Rank 1 has 148 params, while rank 0 has inconsistent 150 params."
    )
    found = top_failure(tmp_path, _ddp(message))
    assert found.kind == "config_error"
    assert "148" in found.suggestion and "150" in found.suggestion
    assert "same model" in found.suggestion and "requires_grad" in found.suggestion
    assert "NCCL_SOCKET_IFNAME" not in found.suggestion
