"""Classes that real logs never seen before exposed (the third held-out set of issue 40), each on a short real
excerpt (the thread's URL beside it) or on lines written from the emitting program's source.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from scope.analyzers.diagnose import diagnose
from scope.analyzers.diagnose.reasoning.stages import where_it_stopped

from tests.helpers import diagnose_failures as _failures

# https://github.com/NVIDIA/nccl/issues/259: an nccl-tests run quoted as its init chatter, a cut, and the test's
# own summary line (the test passed; the INFO / WARN lines are NCCL falling back to sockets).
NCCL_TESTS_CUT_THEN_SUMMARY = """\
# nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 validation: 1
#
# Using devices
#   Rank  0 Pid  12877 on h0913n-ubuntu device  0 [0x0e] GeForce GTX 1080 Ti
#   Rank  1 Pid  12877 on h0913n-ubuntu device  1 [0x0f] GeForce GTX 1080 Ti
h0913n-ubuntu:12877:12877 [0] NCCL INFO Bootstrap : Using [0]enp0s31f6:192.168.97.149<0>
h0913n-ubuntu:12877:12877 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so).
h0913n-ubuntu:12877:12877 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]
h0913n-ubuntu:12877:12877 [0] NCCL INFO NET/Socket : Using [0]enp0s31f6:192.168.97.149<0>
NCCL version 2.4.8+cuda10.1
h0913n-ubuntu:12877:12877 [1] NCCL INFO nranks 2
h0913n-ubuntu:12877:12877 [0] NCCL INFO Setting affinity for GPU 0 to 03
h0913n-ubuntu:12877:12877 [1] NCCL INFO Setting affinity for GPU 1 to 03
[... cut ...]
# Out of bounds values : 0 OK
"""


def test_a_programs_own_completion_summary_after_a_cut_is_a_clean_end(tmp_path: Path) -> None:
    stop = where_it_stopped(NCCL_TESTS_CUT_THEN_SUMMARY)
    assert stop is not None and stop.stage == "exit" and stop.clean
    assert _failures(tmp_path, NCCL_TESTS_CUT_THEN_SUMMARY) == []


def test_init_lines_before_a_cut_with_more_log_after_it_are_no_init_stall(tmp_path: Path) -> None:
    # the same init lines, then a cut and a line of the job that is no marker: lines were left out, the run
    # did not stop in init; without the cut the same log is an init stall
    body = NCCL_TESTS_CUT_THEN_SUMMARY.rsplit("[... cut ...]", 1)[0]
    assert _failures(tmp_path, body + "[... cut ...]\nall done\n") == []
    stalled = _failures(tmp_path, body)
    assert stalled and stalled[0].kind == "hang"


# https://github.com/google/nccl-fastsocket/issues/4: the FastSocket net plugin's WARNs (net_fastsocket.cc) in a
# job that runs ("The code runs despite the warning"); every connection ends 'Connected' / 'Accepted'.
FASTSOCKET_RETRIES = """\
full-debug2-test-1:4024:4048 [0] net_fastsocket.cc:765 NCCL WARN Cannot get incoming CPU.
full-debug2-test-0:4300:4325 [0] net_fastsocket.cc:785 NCCL WARN Maximum retry reached for accept 3.
full-debug2-test-1:4024:4055 [0] net_fastsocket.cc:674 NCCL WARN Maximum retry reached for connect 3.
full-debug2-test-0:4300:4325 [0] NCCL INFO accept qid: 3, rqid: 3
full-debug2-test-0:4300:4325 [0] NCCL INFO NET/FastSocket : Connected after 1000 retries.
full-debug2-test-0:4300:4325 [0] NCCL INFO NET/FastSocket : Accepted data socket 3
full-debug2-test-0:4300:4348 [0] net_fastsocket.cc:652 NCCL WARN Cannot get incoming CPU.
full-debug2-test-1:4024:4055 [0] NCCL INFO connect qid: 3, rqid: 3
full-debug2-test-1:4024:4055 [0] NCCL INFO NET/FastSocket : Connected after 1000 retries.
"""


def test_a_net_plugins_warns_followed_by_its_connections_are_no_failure(tmp_path: Path) -> None:
    assert _failures(tmp_path, FASTSOCKET_RETRIES) == []
    (tmp_path / "job.log").write_text(FASTSOCKET_RETRIES)
    kept = [f for f in diagnose(tmp_path).findings if "net_fastsocket.cc" in f.summary]
    assert all(f.severity == "info" for f in kept)


def test_a_plugin_warn_with_nothing_after_it_still_counts(tmp_path: Path) -> None:
    # the same WARNs with the connections cut away: nothing shows the run went past them
    warns = "\n".join(ln for ln in FASTSOCKET_RETRIES.splitlines() if "NCCL WARN" in ln) + "\n"
    assert _failures(tmp_path, warns)


def test_a_warn_followed_by_an_error_is_not_downgraded(tmp_path: Path) -> None:
    log = FASTSOCKET_RETRIES + (
        "full-debug2-test-1:4024:4055 [0] NCCL INFO misc/socket.cc:470 -> 2\n"
        "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1296, unhandled system error, NCCL version 2.8.3\n"
    )
    assert _failures(tmp_path, log)


# ---- frameworks' checks of their own config (knowledge/framework_config.py) --------------------------------
# https://github.com/OpenRLHF/OpenRLHF/issues/346: 7 GPUs, train_batch_size 256, micro batch 2
DS_BATCH = (
    "AssertionError: Check batch related parameters. train_batch_size is not equal to micro_batch_per_gpu * "
    "gradient_acc_step * world_size 256 != 2 * 18 * 7\n"
)


def test_deepspeeds_batch_assertion_is_a_config_error_whose_remedy_quotes_the_numbers(tmp_path: Path) -> None:
    top = _failures(tmp_path, DS_BATCH)[0]
    assert top.kind == "config_error" and top.metrics["code"] == "deepspeed_batch_size_mismatch"
    assert "256 != 2 x 18 x 7" in top.suggestion and "a multiple of 2 x 7" in top.suggestion


@pytest.mark.parametrize(
    "line",
    [
        # deepspeed/runtime/config.py (_batch_assertion, _set_batch_related_parameters, _do_error_check,
        # _initialize_params), filled in as they print
        "AssertionError: Micro batch size per gpu: 0 has to be greater than 0",
        "AssertionError: Either train_batch_size or train_micro_batch_size_per_gpu needs to be provided",
        "AssertionError: DeepSpeedConfig: gradient_accumulation_steps is not defined",
        "AssertionError: bfloat16 and fp16 modes cannot be simultaneously enabled",
        # transformers integrations/deepspeed.py (trainer_config_finalize)
        "ValueError: Please correct the following DeepSpeed config values that mismatch TrainingArguments values:",
        # Megatron-LM num_microbatches_calculator.py (ConstantNumMicroBatches)
        "AssertionError: global batch size (16) is not divisible by micro batch size (2) times data parallel size (16)",
    ],
)
def test_framework_config_checks_are_config_errors(tmp_path: Path, line: str) -> None:
    top = _failures(tmp_path, f'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n{line}\n')[
        0
    ]
    assert top.kind == "config_error", (line, top.summary)


# ---- a watchdog's stack without its message line ----------------------------------------------------------
# https://github.com/jpata/particleflow/issues/390: DDP training died at the end of the first epoch (the test /
# plots block ran on rank 0 only); the post is the watchdog thread's C++ frames.
_LIB = "/envs/mlpf/lib/python3.11/site-packages/torch/lib/"
WATCHDOG_FRAMES = (
    f"frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x1554e8b12f86 in {_LIB}libc10.so)\n"
    "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, "
    f"std::ratio<1l, 1000l> > >) + 0x1d2 (0x1554e9e0f8f2 in {_LIB}libtorch_cuda.so)\n"
    f"frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0x233 (0x1554e9e16333 in {_LIB}libtorch_cuda.so)\n"
    f"frame #3: c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x10c (0x1554e9e1871c in {_LIB}libtorch_cuda.so)\n"
    "frame #4: <unknown function> + 0x81ca (0x155554e081ca in /lib64/libpthread.so.0)\n"
    "frame #5: clone + 0x43 (0x155553e398d3 in /lib64/libc.so.6)\n"
)


def test_the_watchdogs_check_timeout_stack_alone_is_a_collective_timeout(tmp_path: Path) -> None:
    top = _failures(tmp_path, WATCHDOG_FRAMES)[0]
    assert top.kind == "timeout" and top.metrics["code"] == "c10d_watchdog_timeout_stack"
    # the class's remedy: one rank's own work at an epoch end, run on every rank or waited for
    assert "epoch end" in top.suggestion and "every rank" in top.suggestion and "timeout" in top.suggestion


def test_the_watchdog_stack_after_its_message_line_adds_no_second_cause(tmp_path: Path) -> None:
    message = (
        "[rank1]:[E1205 10:00:00.000000000 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=42, OpType=ALLREDUCE, NumelIn=1024, NumelOut=1024, Timeout(ms)=600000) ran for "
        "600012 milliseconds before timing out.\n"
    )
    found = _failures(tmp_path, message + WATCHDOG_FRAMES)
    assert found[0].metrics["code"] == "c10d_watchdog_timeout"
    assert not any(f.metrics.get("code") == "c10d_watchdog_timeout_stack" for f in found)


# ---- NVSwitch systems: the Fabric Manager service ----------------------------------------------------------
# https://github.com/pytorch/pytorch/issues/129749: collectives hung on 8x H100 until Fabric Manager (550.90.07) was
# matched to the driver (550.54.15)
FM_STATUS = """\
$ sudo systemctl status nvidia-fabricmanager
● nvidia-fabricmanager.service - NVIDIA fabric manager service
     Loaded: loaded (/lib/systemd/system/nvidia-fabricmanager.service; enabled; vendor preset: enabled)
     Active: failed (Result: exit-code) since Mon 2024-07-01 14:43:57 UTC; 5s ago
"""
FM_STATUS += (
    "    Process: 444114 ExecStart=/usr/bin/nv-fabricmanager -c /usr/share/nvidia/nvswitch/fabricmanager.cfg "
    "(code=exited, status=1/FAILURE)\n"
)
# Fabric Manager's own start-up check as systemd's journal shows it (nv-fabricmanager, e.g. NVIDIA/gpu-operator#544)
FM_MISMATCH = (
    "Jul 01 14:43:57 node1 nv-fabricmanager[444114]: fabric manager NVIDIA GPU driver interface version 550.90.07 "
    "don't match with driver version 550.54.15. Please update with matching NVIDIA driver package.\n"
    "Jul 01 14:43:57 node1 systemd[1]: nvidia-fabricmanager.service: Control process exited, code=exited, "
    "status=1/FAILURE\n"
)


def test_a_failed_fabric_manager_service_is_the_cause(tmp_path: Path) -> None:
    top = _failures(tmp_path, FM_STATUS)[0]
    assert top.kind == "config_error" and top.metrics["code"] == "fabric_manager_service_failed"
    assert "driver" in top.suggestion and "systemctl enable --now nvidia-fabricmanager" in top.suggestion


def test_fabric_managers_version_check_quotes_both_versions(tmp_path: Path) -> None:
    top = _failures(tmp_path, FM_MISMATCH)[0]
    assert top.kind == "config_error" and top.metrics["code"] == "fabric_manager_version_mismatch"
    assert "Fabric Manager 550.90.07 against driver 550.54.15" in top.suggestion


def test_active_failed_of_another_service_is_not_fabric_manager(tmp_path: Path) -> None:
    other = FM_STATUS.replace("nvidia-fabricmanager", "cron").replace("nv-fabricmanager", "cron")
    other = other.replace("NVIDIA fabric manager service", "cron daemon")
    assert not any(f.metrics.get("code", "").startswith("fabric_manager") for f in _failures(tmp_path, other))


# ---- a full disk --------------------------------------------------------------------------------------------
# https://github.com/ykdai/Flare7K/issues/25: the outputs filled the disk; the first ENOSPC is the logger's flush
LOG_FLUSH_ENOSPC = """\
--- Logging error ---
Traceback (most recent call last):
  File "/usr/lib/python3.10/logging/__init__.py", line 1104, in emit
    self.flush()
  File "/usr/lib/python3.10/logging/__init__.py", line 1084, in flush
    self.stream.flush()
OSError: [Errno 28] No space left on device
"""


def test_an_enospc_outside_shm_and_checkpoints_is_a_full_disk(tmp_path: Path) -> None:
    top = _failures(tmp_path, LOG_FLUSH_ENOSPC)[0]
    assert top.kind == "config_error" and top.metrics["code"] == "disk_full"
    assert "Free space" in top.suggestion and "df -h" in top.suggestion


def test_nccls_shm_fallocate_enospc_stays_dev_shm(tmp_path: Path) -> None:
    # NCCL 2.7 include/shm.h wording (no space before the colon), as in NVIDIA/nccl#342
    log = "include/shm.h:28 NCCL WARN Call to posix_fallocate failed: No space left on device\n"
    assert _failures(tmp_path, log)[0].metrics["code"] == "shm_too_small"


def test_the_watchdogs_distbackenderror_abort_is_the_timeouts_end_not_a_crash(tmp_path: Path) -> None:
    # https://github.com/pytorch/pytorch/issues/141069: uneven batches per rank; two ranks' 'terminate called'
    # lines interleaved on one console line after the watchdog's frames
    log = WATCHDOG_FRAMES + (
        "terminate called after throwing an instance of 'terminate called after throwing an instance of "
        "'c10d::DistBackendError'\nc10::DistBackendError'\n"
    )
    found = _failures(tmp_path, log)
    assert found[0].kind == "timeout" and found[0].metrics["code"] == "c10d_watchdog_timeout_stack"
    assert "drop_last" in found[0].suggestion and "Join" in found[0].suggestion  # uneven batches per rank
    assert not any(f.kind == "crash" for f in found)


def test_a_distbackenderror_with_no_timeout_before_it_is_still_read(tmp_path: Path) -> None:
    log = "terminate called after throwing an instance of 'c10::DistBackendError'\n"
    assert _failures(tmp_path, log)


# ---- the CUDA runtime newer than the driver -----------------------------------------------------------------
# https://github.com/InternLM/lmdeploy/issues/1267 (a pip nvidia-cuda-runtime wheel newer than driver 515) and
# https://github.com/PaddlePaddle/Paddle/issues/8195 (NCCL 2.1.4+cuda9.1 on a CUDA 8 driver)
@pytest.mark.parametrize(
    "line",
    [
        "CUDA driver version is insufficient for CUDA runtime version",
        "idgsim-gpu-001:47744:47744 [0] init.cu:674 WARN Cuda failure 'CUDA driver version is insufficient for "
        "CUDA runtime version'",
    ],
)
def test_a_runtime_newer_than_the_driver_names_both_ways_out(tmp_path: Path, line: str) -> None:
    top = _failures(tmp_path, line + "\n")[0]
    assert top.kind == "config_error" and top.metrics["code"] == "cuda_driver_insufficient"
    assert "upgrade the driver" in top.suggestion and "nvidia-cuda-runtime" in top.suggestion


def test_a_sigkill_remedy_names_checkpoint_loading_in_host_ram(tmp_path: Path) -> None:
    # https://github.com/CASIA-LMC-Lab/AnomalyGPT/issues/43: ranks SIGKILLed while loading the model (host RAM)
    log = (
        "Initializing language decoder from ../pretrained_ckpt/vicuna_ckpt/7b_v0/ ...\n"
        "[2023-11-13 16:59:54,760] [INFO] [launch.py:314:sigkill_handler] Killing subprocess 9439\n"
        "[2023-11-13 16:59:55,650] [ERROR] [launch.py:320:sigkill_handler] ['/opt/conda/bin/python', '-u', "
        "'train_mvtec.py', '--local_rank=1'] exits with return code = -9\n"
    )
    top = _failures(tmp_path, log)[0]
    assert "SIGKILL" in top.suggestion and "mmap=True" in top.suggestion and "more RAM" in top.suggestion


def test_a_log_that_stops_after_the_warns_it_went_past_is_a_stall_naming_them(tmp_path: Path) -> None:
    # the FastSocket WARNs and one connection, then one channel set up and nothing more, with both processes'
    # bootstrap lines above (NCCL bootstrap.cc's format): the run never got past init, so the WARNs are the
    # stop's clue, not information
    log = (
        "full-debug2-test-0:4300:4300 [0] NCCL INFO Bootstrap : Using eth0:10.128.0.52<0>\n"
        "full-debug2-test-1:4024:4024 [0] NCCL INFO Bootstrap : Using eth0:10.128.0.53<0>\n"
        + "\n".join(FASTSOCKET_RETRIES.splitlines()[:5])
        + "\nfull-debug2-test-0:4300:4325 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/FastSocket/0\n"
    )
    top = _failures(tmp_path, log)[0]
    assert top.kind == "hang" and top.metrics["code"] == "stopped_in_comm_init"
    assert "NCCL warned before the stop" in top.summary and "Maximum retry reached for connect 3" in top.summary
