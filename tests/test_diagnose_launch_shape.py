"""A launch that does not fit its checkpoint or its hosts: the printed fix names the two numbers the line states
(knowledge/launch_shape.py), on real lines of public threads."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import top_failure

# meta-llama/llama#1017 (https://github.com/meta-llama/llama/issues/1017): llama-2-70b-chat's 8 shards
# launched with another world size; the maintainer: --nproc_per_node must be the checkpoint's MP
LLAMA_MP = (
    "Traceback (most recent call last):\n"
    '  File "/olddata/llama/llama/generation.py", line 103, in build\n'
    "    assert model_parallel_size == len(\n"
    "AssertionError: Loading a checkpoint for MP=2 but world size is 8\n"
)

# deepspeedai/DeepSpeed-MII#381 (https://github.com/deepspeedai/DeepSpeed-MII/issues/381): replica_num=2 on a
# 4-GPU host, tensor_parallel passed where MII did not read it
MII_PLACE = "ValueError: Only able to place 1 replicas, but 2 replicas were requested.\n"

# mpitutorial/mpitutorial#77 (https://github.com/mpitutorial/mpitutorial/issues/77): mpirun -n 16 on fewer cores
MPI_SLOTS = (
    "--------------------------------------------------------------------------\n"
    "There are not enough slots available in the system to satisfy the 16\n"
    "slots that were requested by the application:\n"
    "\n"
    "  ./mpi-broadcast-and-collective-communication/code/compare_bcast\n"
    "\n"
    "Either request fewer slots for your application, or make more slots\n"
    "available for use.\n"
)

# NVIDIA/Megatron-LM#296 (https://github.com/NVIDIA/Megatron-LM/issues/296) prints this line for TP 1 vs 2; here
# the same check (megatron/checkpointing.py check_checkpoint_args._compare) on the pipeline size
MEGATRON_ARG = (
    '  File "megatron/checkpointing.py", line 58, in _compare\n'
    "    assert checkpoint_value == args_value, error_message\n"
    "AssertionError: pipeline_model_parallel_size value from checkpoint (2) is not equal to the input argument "
    "value (4).\n"
)


def test_a_checkpoint_cut_for_other_model_parallel_shards_says_launch_with_its_count(tmp_path: Path) -> None:
    top = top_failure(tmp_path, LLAMA_MP)
    assert top.kind == "config_error"
    text = top.suggestion
    assert text.startswith("The checkpoint has 2 model-parallel shards and 8 processes were launched")
    assert "--nproc_per_node 2" in text and "Fix the exception raised" not in text


def test_a_megatron_setting_that_differs_from_the_checkpoint_names_both_values(tmp_path: Path) -> None:
    top = top_failure(tmp_path, MEGATRON_ARG)
    assert top.kind == "config_error"
    text = top.suggestion
    assert "pipeline_model_parallel_size = 2" in text and "launched with 4" in text
    assert "checkpoint's setting (2)" in text and "reshard the checkpoint to 4" in text


def test_replicas_that_could_not_be_placed_get_the_per_replica_arithmetic(tmp_path: Path) -> None:
    top = top_failure(tmp_path, MII_PLACE)
    assert top.kind == "config_error"
    text = top.suggestion
    assert text.startswith("Only 1 of the 2 replicas fit") and "tensor_parallel is per replica" in text
    assert "mii.serve" in text and "Fix the exception raised" not in text


def test_mpirun_without_enough_slots_names_the_count_it_asked_for(tmp_path: Path) -> None:
    top = top_failure(tmp_path, MPI_SLOTS)
    assert top.kind == "config_error"
    assert top.suggestion.startswith("Open MPI was asked for 16 processes, more than the hosts have slots")
    assert "slots=" in top.suggestion and "-np" in top.suggestion
