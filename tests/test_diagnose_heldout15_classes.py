"""Classes that the fifteenth held-out set of real threads exposed (issue 40): a process-group backend this torch
build lacks, a rank count the parallel layout does not fit, NCCL's 'unknown result code', a program the compute
node's environment lacks. Each on short lines written in the emitting program's format (torch's, TensorRT-LLM's,
Megatron's, slurmstepd's, Open MPI's), never a thread's own text.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_failures, top_failure

# A Windows wheel's c10d client warning (Winsock 10049 for an address it skips), then the MPI backend asked of a
# wheel (torch/distributed/distributed_c10d.py _new_process_group_helper).
WINDOWS_SOCKET_NOISE = (
    r"[W C:\actions-runner\_work\pytorch\pytorch\builder\windows\pytorch\torch\csrc\distributed\c10d\socket.cpp:601]"
    r" [c10d] The client socket has failed to connect to [node7]:29500 (system error: 10049 - The requested address"
    r" is not valid in its context.)."
)
MPI_BACKEND_MISSING = f"""\
{WINDOWS_SOCKET_NOISE}
Traceback (most recent call last):
  File "train.py", line 21, in <module>
    dist.init_process_group(backend="mpi")
RuntimeError: Distributed package doesn't have MPI built in. MPI is only included if you build PyTorch from source \
on a host that has MPI installed.
"""
# The same client's IPv6 look-up on a Windows host without an IPv6 address (Winsock WSANO_DATA).
WINDOWS_IPV6_LOOKUP = (
    r"[W C:\cb\pytorch_1000000000000\work\torch\csrc\distributed\c10d\socket.cpp:558] [c10d] The IPv6 network"
    r" addresses of (WORKSTATION-3, 29500) cannot be retrieved (gai error: 11004 - The requested name is valid, but"
    r" no data of the requested type was found.)."
)
# A torch built without the distributed package (torch/distributed/__init__.py defines no process-group functions).
NO_DISTRIBUTED_PACKAGE = """\
  File "finetune.py", line 30, in setup
    dist.init_process_group(backend="gloo")
AttributeError: module 'torch.distributed' has no attribute 'init_process_group'
"""
# Lightning's progress on the same Windows build after the same warning: a healthy run.
WINDOWS_RUN_THAT_TRAINED = f"""\
{WINDOWS_SOCKET_NOISE}
Epoch 0: 100%|##########| 50/50 [00:20<00:00,  2.50it/s, loss=0.41]
`Trainer.fit` stopped: `max_epochs=1` reached.
"""


def test_a_backend_missing_from_the_build_is_a_config_error_naming_the_backends_it_has(tmp_path: Path) -> None:
    top = top_failure(tmp_path, MPI_BACKEND_MISSING)
    assert top.kind == "config_error"
    assert "gloo" in top.suggestion and "is_mpi_available()" in top.suggestion
    assert "MASTER_ADDR" not in top.suggestion
    # the Windows socket warning beside a run that stopped points at the backends a Windows build has, never at
    # MASTER_ADDR; alone (nothing else in the log) it is no failure
    stopped = top_failure(tmp_path, WINDOWS_SOCKET_NOISE + "\nInitializing distributed: GLOBAL_RANK: 0, MEMBER: 1/2\n")
    assert stopped.kind == "config_error"
    assert "gloo" in stopped.suggestion and "is_nccl_available()" in stopped.suggestion
    assert "MASTER_ADDR" not in stopped.suggestion
    assert diagnose_failures(tmp_path, WINDOWS_SOCKET_NOISE + "\n") == []
    assert diagnose_failures(tmp_path, WINDOWS_IPV6_LOOKUP + "\n") == []
    nodist = top_failure(tmp_path, NO_DISTRIBUTED_PACKAGE)
    assert nodist.kind == "config_error" and "USE_DISTRIBUTED=1" in nodist.suggestion
    assert "is_available()" in nodist.suggestion
    # ... and a Windows run that trained past it is healthy
    assert diagnose_failures(tmp_path, WINDOWS_RUN_THAT_TRAINED) == []


# TensorRT-LLM's C++ runtime (worldConfig.cpp WorldConfig::mpi) under a launch of another rank count, and
# Megatron-LM's initialize_model_parallel check of the world size against tensor x pipeline parallel.
TRTLLM_MPI_SIZE = """\
  File "/usr/local/lib/python3.10/dist-packages/tensorrt_llm/runtime/model_runner_cpp.py", line 139, in from_dir
    world_config = WorldConfig.mpi(tensor_parallelism=tp_size,
RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: MPI size 2 != TP size 4 * PP size 1 \
(/src/cpp/tensorrt_llm/runtime/worldConfig.cpp:98)
"""
MEGATRON_WORLD_SIZE = """\
  File "/workspace/Megatron-LM/megatron/core/parallel_state.py", line 512, in initialize_model_parallel
    raise RuntimeError(
RuntimeError: world_size (6) is not divisible by tensor_model_parallel_size (4) x pipeline_model_parallel_size (1) \
x context_parallel_size (1)
"""

# TensorRT-LLM's Python Mapping and torchtitan's ParallelDims._validate, each on its own check of the same sum.
TRTLLM_MAPPING = "ValueError: world_size must equal to tp_size * pp_size * cp_size, but got 2 != 8 * 1 * 1.\n"
TORCHTITAN_DIMS = (
    "AssertionError: Invalid parallel dims: dp_replicate(1) * dp_shard(2) * cp(1) * tp(4) * pp(1) != WORLD_SIZE(4)\n"
)


def test_a_rank_count_that_does_not_fit_the_parallel_layout_says_how_many_ranks_to_launch(tmp_path: Path) -> None:
    trt = top_failure(tmp_path, TRTLLM_MPI_SIZE)
    assert trt.kind == "config_error"
    assert "mpirun -n" in trt.suggestion and "4 x 1" in trt.suggestion and "had 2 MPI" in trt.suggestion
    mega = top_failure(tmp_path, MEGATRON_WORLD_SIZE)
    assert mega.kind == "config_error"
    assert "'world_size (6) is not divisible by tensor_model_parallel_size (4) x" in mega.suggestion
    assert "--nproc_per_node" in mega.suggestion and "--tensor-model-parallel-size" in mega.suggestion
    mapping = top_failure(tmp_path, TRTLLM_MAPPING)
    assert mapping.kind == "config_error" and "but got 2 != 8 * 1 * 1" in mapping.suggestion
    assert "mpirun -n" in mapping.suggestion
    titan = top_failure(tmp_path, TORCHTITAN_DIMS)
    assert titan.kind == "config_error" and "against world size 4" in titan.suggestion
    assert "data_parallel_shard_degree -1" in titan.suggestion


# A plugin's NCCL check printing ncclGetErrorString of a code the loaded libnccl does not know (NCCL src/init.cc).
NCCL_UNKNOWN_RESULT = """\
Failed, NCCL error /opt/build/plugins/ncclPlugin/allgatherPlugin.cpp:122 'unknown result code'
Failed, NCCL error /opt/build/plugins/ncclPlugin/allgatherPlugin.cpp:122 'unknown result code'
"""

# glibc's loader for torch's own library built against a newer NCCL than the libnccl.so.2 it found.
NCCL_SYMBOL_MISSING = """\
    import torch
ImportError: /venv/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so: undefined symbol: ncclCommShrink
"""


def test_nccls_unknown_result_code_is_a_version_mismatch_with_the_checks_to_make(tmp_path: Path) -> None:
    top = top_failure(tmp_path, NCCL_UNKNOWN_RESULT)
    assert top.kind == "config_error"
    assert "torch.cuda.nccl.version()" in top.suggestion and "nvidia-nccl-cu12" in top.suggestion
    assert "LD_LIBRARY_PATH" in top.suggestion
    older = top_failure(tmp_path, NCCL_SYMBOL_MISSING)
    assert older.kind == "config_error" and "ncclCommShrink" in older.suggestion
    assert "grep -i nccl" in older.suggestion and "ldd /venv/lib" in older.suggestion


# slurmstepd's execve error for the step's program (Slurm exec_wait.c), srun's report after it.
SLURM_PROGRAM_MISSING = """\
slurmstepd: error: execve(): accelerate: No such file or directory
srun: error: gpu042: task 0: Exited with exit code 2
"""
# DeepSpeed's multinode runner over pdsh: the remote bash cannot find the program.
PDSH_PROGRAM_MISSING = """\
[2024-05-02 09:12:40,118] [INFO] [multinode_runner.py:80:get_cmd] Running on the following workers: gpu1,gpu2
gpu2: bash: line 1: torchrun: command not found
pdsh@gpu1: gpu2: ssh exited with exit code 127
"""
# MPICH / Intel MPI Hydra's proxy (launch.c HYDU_create_process): a program it cannot find, then one it cannot run.
HYDRA_PROGRAM_MISSING = """\
[proxy:0:1@n5] HYDU_create_process (utils/launch/launch.c:74): execvp error on file python3 (No such file or directory)
"""
HYDRA_PROGRAM_NOT_EXECUTABLE = """\
[proxy:0:0@gpu5] HYDU_create_process (utils/launch/launch.c:74): execvp error on file ./pretrain.sh (Permission denied)
"""

# A batch script's optional srun step whose program is missing, then the training step that ran to its end.
SLURM_OPTIONAL_STEP_THEN_TRAINED = """\
slurmstepd: error: execve(): nvidia-smi: No such file or directory
srun: error: cn01: task 0: Exited with exit code 2
[2024-01-01 10:00:00] Epoch 1/2 step 100/100 loss=0.52
[2024-01-01 10:05:00] Epoch 2/2 step 100/100 loss=0.41
"""


def test_a_program_the_compute_node_cannot_find_is_its_environment_quoting_the_program(tmp_path: Path) -> None:
    slurm = top_failure(tmp_path, SLURM_PROGRAM_MISSING)
    assert slurm.kind == "config_error"
    assert "lacks accelerate" in slurm.suggestion and "conda activate" in slurm.suggestion
    assert "srun --export=ALL" in slurm.suggestion
    pdsh = top_failure(tmp_path, PDSH_PROGRAM_MISSING)
    assert pdsh.kind == "config_error"
    assert "lacks torchrun" in pdsh.suggestion and ".deepspeed_env" in pdsh.suggestion
    hydra = top_failure(tmp_path, HYDRA_PROGRAM_MISSING)
    assert hydra.kind == "config_error" and "lacks python3" in hydra.suggestion
    denied = top_failure(tmp_path, HYDRA_PROGRAM_NOT_EXECUTABLE)
    assert denied.kind == "config_error" and "'./pretrain.sh' executable" in denied.suggestion
    assert "chmod +x" in denied.suggestion
    # a missing program the job went past is no failure
    assert diagnose_failures(tmp_path, SLURM_OPTIONAL_STEP_THEN_TRAINED) == []
