"""Classes that the twelfth held-out set of real threads exposed (issue 40), each on short lines written in the
emitting program's format (torch's, NCCL's, aws-ofi-nccl's, py-spy's), never a thread's own text.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import top_failure

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
