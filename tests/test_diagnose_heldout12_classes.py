"""Classes that the twelfth held-out set of real threads exposed (issue 40), each on short lines written in the
emitting program's format (torch's, NCCL's, aws-ofi-nccl's, py-spy's), never a thread's own text.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.helpers import diagnose_failures, top_failure

# torch/distributed/rendezvous.py _env_error: init_process_group(init_method='env://') in a process that no
# launcher started.
ENV_RENDEZVOUS_WITHOUT_LAUNCHER = """\
Traceback (most recent call last):
  File "train.py", line 40, in <module>
    dist.init_process_group(backend="nccl", init_method="env://")
ValueError: Error initializing torch.distributed using env:// rendezvous: environment variable WORLD_SIZE expected, \
but not set
"""


def test_an_env_rendezvous_without_its_variables_is_a_launch_mistake(tmp_path: Path) -> None:
    top = top_failure(tmp_path, ENV_RENDEZVOUS_WITHOUT_LAUNCHER)
    assert top.kind == "config_error"
    assert top.suggestion.startswith("WORLD_SIZE is set for each worker by the launcher")
    assert "torchrun --nproc_per_node=N" in top.suggestion


# NCCL 2.13-2.18's net plugin line when libnccl-net.so is there and its libfabric is older than it was built for;
# the same line for a plugin that is absent is a healthy run's.
PLUGIN_BUILT_FOR_ANOTHER_LIBFABRIC = (
    "node1:2200:2200 [0] NCCL INFO NET/Plugin : dlerror=/opt/amazon/efa/lib/libfabric.so.1: version `FABRIC_1.8' "
    "not found (required by /opt/venv/lib/libnccl-net.so) No plugin found (libnccl-net.so), using internal "
    "implementation\n"
)
PLUGIN_ABSENT = (
    "node1:2200:2200 [0] NCCL INFO NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: No such "
    "file or directory No plugin found (libnccl-net.so), using internal implementation\n"
    "node1:2200:2200 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so.\n"
    "node1:2200:2200 [0] NCCL INFO comm 0x55d0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 - Init COMPLETE\n"
)


def test_a_net_plugin_that_does_not_load_is_a_config_error_and_an_absent_one_is_not(tmp_path: Path) -> None:
    top = top_failure(tmp_path, PLUGIN_BUILT_FOR_ANOTHER_LIBFABRIC)
    assert top.kind == "config_error"
    assert "(version `FABRIC_1.8' not found)" in top.suggestion and "aws-ofi-nccl" in top.suggestion
    (tmp_path / "absent").mkdir()
    assert not diagnose_failures(tmp_path / "absent", PLUGIN_ABSENT)


# transport/nvls.cc's WARN with its newlines kept, under c10d's DistBackendError: cuMulticastBindMem refused with
# CUDA_ERROR_OUT_OF_MEMORY (2), the switch's multicast resources, not the GPU's memory or the Fabric Manager.
NVLS_MULTICAST_EXHAUSTED = """\
torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:77, \
unhandled cuda error, NCCL version 2.29.3
ncclUnhandledCudaError: Call to CUDA function failed.
Failed to bind NVLink SHARP (NVLS) Multicast memory of size 4194304 : CUDA error 2 'out of memory'.
This is usually caused by a system or configuration error in the Fabric Manager or NVSwitches.
Disable NVLS (NCCL_NVLS_ENABLE=0) if you wish to avoid this error in the future.
"""


def test_nvls_multicast_bind_out_of_memory_is_an_nccl_error_of_too_many_communicators(tmp_path: Path) -> None:
    top = top_failure(tmp_path, NVLS_MULTICAST_EXHAUSTED)
    assert top.kind == "nccl_error"
    assert "NCCL_NVLS_ENABLE=0" in top.suggestion and "fewer communicators" in top.suggestion
    assert "fabricmanager" not in top.suggestion


# NCCL 2.27-2.28 transport/nvls.cc falls back gracefully and says so at INFO: the run goes on without NVLS.
NVLS_FALLBACK_INFO = """\
gpu-a7:3100:3161 [2] NCCL INFO NCCL version 2.28.3+cuda12.9
gpu-a7:3100:3161 [2] NCCL INFO Failed to bind NVLink SHARP (NVLS) Multicast memory of size 4194304 : CUDA error 2 \
'out of memory'. Proceeding without NVLS support.
gpu-a7:3100:3161 [2] NCCL INFO comm 0x5a3c10 rank 2 nranks 8 cudaDev 2 nvmlDev 2 busId 41000 - Init COMPLETE
step 10 loss 3.12
step 20 loss 2.87
"""


def test_nvls_fallback_info_line_of_a_run_that_goes_on_is_no_failure(tmp_path: Path) -> None:
    assert diagnose_failures(tmp_path, NVLS_FALLBACK_INFO) == []


# c10d's C10D_NCCL_CHECK around ncclCommWindowRegister in symm_mem/NCCLSymmetricMemory.cu.
SYMMETRIC_MEMORY_WINDOW = """\
torch.distributed.DistBackendError: NCCL error in: /opt/pytorch/torch/csrc/distributed/c10d/symm_mem/\
NCCLSymmetricMemory.cu:190, invalid argument (run with NCCL_DEBUG=WARN for details), NCCL version 2.28.3
Failed to window register segment with ptr 0x7f3a00000000, size 8388608 on rank 1
"""


def test_a_symmetric_memory_window_registration_failure_asks_for_a_set_up_communicator(tmp_path: Path) -> None:
    top = top_failure(tmp_path, SYMMETRIC_MEMORY_WINDOW)
    assert top.kind == "nccl_error"
    assert "dist.barrier()" in top.suggestion and "device_id=" in top.suggestion


# The same check in ProcessGroupNCCL::registerSegment(window=True): the communicator is set up (no device_id advice).
USER_BUFFER_WINDOW = """\
torch.distributed.DistBackendError: NCCL error in: /opt/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1412, \
invalid argument (run with NCCL_DEBUG=WARN for details), NCCL version 2.28.3
Failed to window register segment with ptr 0x7f3a00000000, size 8388608 on ncclComm_ 0x55d0a1c0
"""

# An ncclMemAlloc of the symmetric-memory backend out of memory: the same file, no registration.
SYMMETRIC_MEMORY_ALLOC_OOM = """\
torch.distributed.DistBackendError: NCCL error in: /opt/pytorch/torch/csrc/distributed/c10d/symm_mem/\
NCCLSymmetricMemory.cu:288, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.28.3
ncclUnhandledCudaError: Call to CUDA function failed.
Last error:
Cuda failure 'out of memory'
ncclMemAlloc failed
"""


def test_a_user_buffer_window_registration_asks_for_the_memory_not_the_communicator(tmp_path: Path) -> None:
    top = top_failure(tmp_path, USER_BUFFER_WINDOW)
    assert top.kind == "nccl_error"
    assert "NCCL_CUMEM_ENABLE" in top.suggestion and "same size on every rank" in top.suggestion
    assert "device_id=" not in top.suggestion


def test_a_symmetric_memory_allocation_out_of_memory_is_no_window_registration(tmp_path: Path) -> None:
    found = diagnose_failures(tmp_path, SYMMETRIC_MEMORY_ALLOC_OOM)
    assert found and all("window" not in f.summary and "device_id=" not in f.suggestion for f in found)


# torch 1.5's DDP init check for single-process multi-device DDP, as its traceback ends.
DDP_REPLICAS_TORCH_15 = """\
Traceback (most recent call last):
  File "train.py", line 120, in <module>
    model = torch.nn.parallel.DistributedDataParallel(model)
  File "/usr/lib/python3.7/site-packages/torch/nn/parallel/distributed.py", line 287, in __init__
    self._ddp_init_helper()
  File "/usr/lib/python3.7/site-packages/torch/nn/parallel/distributed.py", line 380, in _ddp_init_helper
    expect_sparse_gradient)
RuntimeError: Model replicas must have an equal number of parameters.
"""


def test_ddp_replicas_without_parameters_is_the_torch_15_regression(tmp_path: Path) -> None:
    top = top_failure(tmp_path, DDP_REPLICAS_TORCH_15)
    assert top.kind == "config_error"
    assert "device_ids=[local_rank]" in top.suggestion and "PyTorch 1.4, or 1.6" in top.suggestion


# py-spy dump --native of a process spinning in NCCL's proxy-op slot loop (src/proxy.cc ncclLocalOpAppend) under
# an all_gather: no frame waits for a peer.
SPINNING_IN_NCCL_PROXY_POST = """\
Process 4242: python train.py
Thread 4242 (active): "MainThread"
    sched_yield (libc.so.6)
    ncclLocalOpAppend (proxy.cc:512)
    ncclProxySaveOp (proxy.cc:681)
    hostStreamPlanTask (enqueue.cc:1180)
    ncclLaunchKernelAfter_NoCuda (enqueue.cc:1402)
    doLaunches (group.cc:230)
    ncclAllGather (collectives.cc:88)
    all_gather_into_tensor (torch/distributed/distributed_c10d.py:3040)
"""


def test_a_stack_spinning_in_nccls_own_code_is_an_nccl_release_hang_not_a_missing_peer(tmp_path: Path) -> None:
    top = top_failure(tmp_path, SPINNING_IN_NCCL_PROXY_POST)
    assert top.kind == "hang"
    assert "spins inside NCCL's own host code" in top.summary
    assert "another NCCL release" in top.suggestion and "never joined" not in top.suggestion


# py-spy dump --native of ranks in NCCL's kernel launch under an all_reduce: the launch queue full behind an earlier
# kernel (cuLaunchKernelEx), the work FIFO not drained (waitWorkFifoAvailable). Both stand here when an earlier
# collective waits for a peer that never joined: the peer comes first, the NCCL release second.
LAUNCH_QUEUE_FULL = """\
Process 6161: python train.py
Thread 6161 (active): "MainThread"
    cuLaunchKernelEx (libcuda.so.1)
    ncclLaunchKernel (enqueue.cc:1533)
    doLaunches (group.cc:247)
    groupLaunch (group.cc:339)
    ncclGroupEndInternal (group.cc:418)
    ncclAllReduce (collectives.cc:49)
    all_reduce (torch/distributed/distributed_c10d.py:2501)
    step (train.py:57)
"""
WORK_FIFO_NOT_DRAINED = """\
Process 6162: python train.py
Thread 6162 (active): "MainThread"
    sched_yield (libc.so.6)
    waitWorkFifoAvailable (enqueue.cc:1231)
    uploadWork (enqueue.cc:1270)
    ncclLaunchKernelBefore_NoUncapturedCuda (enqueue.cc:1405)
    doLaunches (group.cc:233)
    ncclAllReduce (collectives.cc:49)
    all_reduce (torch/distributed/distributed_c10d.py:2501)
"""


@pytest.mark.parametrize("dump", [LAUNCH_QUEUE_FULL, WORK_FIFO_NOT_DRAINED])
def test_a_stack_in_nccls_kernel_launch_asks_for_the_missing_peer_before_an_nccl_release(
    tmp_path: Path, dump: str
) -> None:
    top = top_failure(tmp_path, dump)
    assert top.kind == "hang"
    assert "NCCL's kernel launch" in top.summary and "in all_reduce" in top.summary
    assert "no wait for a peer" not in top.summary
    peer, release = top.suggestion.find("never joined"), top.suggestion.find("another NCCL release")
    assert 0 <= peer < release, top.suggestion


# aws-ofi-nccl on libfabric's tcp provider (no EFA device in the container), then its WARN at init.
OFI_ON_TCP = """\
c0ffee:77:77 [0] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.11.0-aws
c0ffee:77:90 [0] NCCL INFO NET/OFI Selected Provider is tcp (found 1 nics)
c0ffee:77:90 [0] NCCL INFO NET/OFI Using transport protocol SENDRECV
c0ffee:77:90 [0] NCCL WARN NET/OFI Failed to set FI_OPT_CUDA_API_PERMITTED. RC: -38, ERROR: Function not implemented
"""
OFI_ON_EFA = OFI_ON_TCP.replace("Provider is tcp", "Provider is efa")


def test_an_ofi_failure_on_the_tcp_provider_asks_for_the_efa_devices(tmp_path: Path) -> None:
    top = top_failure(tmp_path, OFI_ON_TCP)
    assert top.kind == "config_error"
    assert "tcp provider" in top.suggestion and "/dev/infiniband/uverbs" in top.suggestion
    (tmp_path / "efa").mkdir()
    on_efa = top_failure(tmp_path / "efa", OFI_ON_EFA)
    assert "/dev/infiniband/uverbsN" not in on_efa.suggestion


# A smoke test's process (pid 77) on tcp, then the training process (pid 99) on efa whose send fails: the nearest
# provider line of the WARN's own process is efa.
OFI_EFA_AFTER_AN_EARLIER_TCP_PROCESS = """\
c0ffee:77:90 [0] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.11.0-aws
c0ffee:77:90 [0] NCCL INFO NET/OFI Selected Provider is tcp (found 1 nics)
c0ffee:99:120 [0] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.11.0-aws
c0ffee:99:120 [0] NCCL INFO NET/OFI Selected Provider is efa (found 4 nics)
c0ffee:99:121 [0] NCCL WARN NET/OFI Error posting send request: Resource temporarily unavailable (-11)
"""


def test_an_ofi_warn_of_a_process_on_efa_is_not_read_by_another_processs_tcp_line(tmp_path: Path) -> None:
    found = diagnose_failures(tmp_path, OFI_EFA_AFTER_AN_EARLIER_TCP_PROCESS)
    assert found and all("tcp provider" not in f.suggestion for f in found)
    assert all(f.kind != "config_error" for f in found)


# aws-ofi-nccl built outside AWS (HPE Slingshot: no '-aws' version) on tcp: the generic provider check, no EFA.
OFI_ON_TCP_OFF_AWS = OFI_ON_TCP.replace("1.11.0-aws", "1.11.0")


def test_an_ofi_failure_on_tcp_off_aws_asks_for_the_fabrics_provider_not_efa(tmp_path: Path) -> None:
    top = top_failure(tmp_path, OFI_ON_TCP_OFF_AWS)
    assert top.kind == "config_error"
    assert "FI_PROVIDER" in top.suggestion and "cxi" in top.suggestion
    assert "/dev/infiniband/uverbs" not in top.suggestion and "vpc.amazonaws.com/efa" not in top.suggestion


# The plugin's WARN on tcp, then NCCL falls back to its own sockets and the communicator is set up: the run goes on.
OFI_FAILED_THEN_SOCKETS = """\
c0ffee:77:90 [0] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.11.0-aws
c0ffee:77:90 [0] NCCL INFO NET/OFI Selected Provider is tcp;ofi_rxm (found 1 nics)
c0ffee:77:90 [0] NCCL WARN NET/OFI Failed to initialize sendrecv protocol
c0ffee:77:90 [0] NCCL INFO NET/Socket : Using [0]eth0:10.1.2.3<0>
c0ffee:77:90 [0] NCCL INFO Using network Socket
c0ffee:77:90 [0] NCCL INFO comm 0x6b10 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 - Init COMPLETE
"""


def test_an_ofi_failure_that_nccl_fell_back_from_is_a_warning(tmp_path: Path) -> None:
    found = diagnose_failures(tmp_path, OFI_FAILED_THEN_SOCKETS)
    assert found and all(f.severity == "warning" for f in found)
    (tmp_path / "stopped").mkdir()
    stopped = top_failure(tmp_path / "stopped", OFI_FAILED_THEN_SOCKETS.split("c0ffee:77:90 [0] NCCL INFO NET/S")[0])
    assert stopped.severity == "critical" and "tcp provider" in stopped.suggestion


# torch.distributed.pipelining's debug lines (TORCH_LOGS-style prefix under torchrun's '[rankN]:') of stages that
# infer their shapes at runtime; the log ends in the receive from the previous stage.
PIPELINE_SHAPE_INFERENCE_STOP = """\
[rank1]:V0305 10:00:01.100000 5001 torch/distributed/pipelining/stage.py:1326] Finished pipeline stage init, \
self.stage_index=1, self.is_first=False, self.is_last=True, self.num_stages=2,  running shape-inference at runtime
[rank0]:V0305 10:00:01.200000 5000 torch/distributed/pipelining/stage.py:1340] Shape inference: stage 0 skipping \
recv, because shape info passed in via `args`
[rank1]:V0305 10:00:01.300000 5001 torch/distributed/pipelining/stage.py:1354] Shape inference: stage 1 receiving \
from stage 0
"""


def test_a_log_ending_in_pipeline_shape_inference_names_it_and_the_explicit_shapes(tmp_path: Path) -> None:
    top = top_failure(tmp_path, PIPELINE_SHAPE_INFERENCE_STOP)
    assert top.kind == "hang"
    assert "torch.pipelining" in top.summary
    assert "input_args / output_args" in top.suggestion and "upgrade PyTorch" in top.suggestion


# The receive returned: the stage ran its forward on the received shapes and had no next stage to send to.
PIPELINE_SHAPE_INFERENCE_PASSED = (
    PIPELINE_SHAPE_INFERENCE_STOP
    + """\
[rank1]:V0305 10:00:01.400000 5001 torch/distributed/pipelining/stage.py:1372] Shape inference: stage 1 inputs \
(TensorMeta(shape=torch.Size([4, 128, 512]), dtype=torch.bfloat16),), outputs (TensorMeta(shape=torch.Size([4, 128, \
32000]), dtype=torch.bfloat16),)
[rank1]:V0305 10:00:01.500000 5001 torch/distributed/pipelining/stage.py:1386] Shape inference: stage 1 skipping \
send to next stage
"""
)
# The stage's constructor line alone: printed when the stage is built, before any exchange.
PIPELINE_STAGE_BUILT = PIPELINE_SHAPE_INFERENCE_STOP.split("[rank0]")[0]


@pytest.mark.parametrize("log", [PIPELINE_SHAPE_INFERENCE_PASSED, PIPELINE_STAGE_BUILT])
def test_pipeline_lines_past_the_shape_exchange_or_before_it_are_no_stop_in_it(tmp_path: Path, log: str) -> None:
    assert all("torch.pipelining" not in f.summary for f in diagnose_failures(tmp_path, log))


# One long line of repeated '/Plugin ' words (a log that dumps a list): the row's gap is bounded, not quadratic.
LONG_PLUGIN_LINE = "c0ffee:77:77 [0] NCCL INFO " + "NET/Plugin " * 6000 + "\n"


def test_a_long_line_of_plugin_words_is_read_in_bounded_time(tmp_path: Path) -> None:
    start = time.perf_counter()
    diagnose_failures(tmp_path, LONG_PLUGIN_LINE)
    assert time.perf_counter() - start < 3.0  # 9-11 s before the bound


# NCCL 2.19-2.20 net.cc: the net plugin is there and its libfabric lacks a symbol version; a tuner plugin's load
# error is no net plugin's; the net plugin not installed at all is benign.
NET_PLUGIN_VERSION = (
    "c0ffee:77:77 [0] NCCL INFO NET/Plugin : dlerror=/opt/amazon/efa/lib/libfabric.so.1: version `FABRIC_1.8' "
    "not found (required by /usr/lib/libnccl-net.so) No plugin found (libnccl-net.so), using internal "
    "implementation\n"
)
TUNER_PLUGIN_SYMBOL = "c0ffee:77:77 [0] NCCL INFO TUNER/Plugin: Could not find: libnccl-tuner.so: undefined symbol: x\n"
NO_NET_PLUGIN = (
    "c0ffee:77:77 [0] NCCL INFO NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: No such file "
    "or directory No plugin found (libnccl-net.so), using internal implementation\n"
)


def test_only_the_net_plugins_load_error_is_read_and_the_benign_lines_are_the_missing_plugins() -> None:
    from scope.analyzers.diagnose.readers.signature_scan import is_benign, match_text

    row = match_text(NET_PLUGIN_VERSION.strip())
    assert row is not None and row.sig.id == "net_plugin_load_failed"
    assert not is_benign(NET_PLUGIN_VERSION)
    tuner = match_text(TUNER_PLUGIN_SYMBOL.strip())
    assert tuner is None or tuner.sig.id != "net_plugin_load_failed"
    assert is_benign(NO_NET_PLUGIN) and match_text(NO_NET_PLUGIN.strip()) is None
