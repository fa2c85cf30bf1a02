"""The watchdog and innermost-frame rules read as one, against look-alikes the separate reviews could not see.

1. ProcessGroupNCCL's '[PG ... Rank R]' prefix carries the rank *within that group* (knowledge/c10d_groups.py): one
   process whose default group's watchdog (Rank 3) and a tensor-parallel group's watchdog (Rank 1) both met the
   same sticky fault is one report, not two ranks faulting together; only the global rank ('[rankN]:', the default
   group's rank) or two ranks of one group tell two processes apart.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import top_failure

TORCH = "/opt/conda/lib/python3.11/site-packages/torch"


def _watchdog(group: str, rank: int, second: int, prefix: str = "") -> str:
    return (
        f"{prefix}[E0312 08:14:{second:02d}.504118203 ProcessGroupNCCL.cpp:1681] [{group} Rank {rank}] Process group "
        "watchdog thread terminated with exception: CUDA error: unspecified launch failure\n"
        f"{prefix}CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
        "below might be incorrect.\n"
        f"{prefix}For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n\n"
        f"{prefix}Exception raised from c10_cuda_check_implementation at ../c10/cuda/CUDAException.cpp:43 (most "
        "recent call first):\n"
        f"{prefix}frame #4: c10d::ProcessGroupNCCL::WorkNCCL::isCompleted() + 0x58 (0x7fa1 in "
        f"{TORCH}/lib/libtorch_cuda.so)\n"
        f"{prefix}frame #5: c10d::ProcessGroupNCCL::watchdogHandler() + 0x213 (0x7fa2 in {TORCH}/lib/libtorch_cuda.so)"
        "\n\n"
    )


_HEAD = (
    "+ torchrun --nproc_per_node=8 pretrain_gpt.py --tensor-model-parallel-size 2\n iteration  410/ 5000 | loss 3.91\n"
)
# rank 3's default group (global rank 3) and its tensor-parallel group (GUID 7, where it is rank 1): one process
ONE_PROCESS_TWO_GROUPS = (
    _HEAD
    + _watchdog("PG ID 0 PG GUID 0(default_pg)", 3, 9)
    + _watchdog("PG ID 3 PG GUID 7(TENSOR_MODEL_PARALLEL_GROUP)", 1, 9)
)


def test_two_groups_of_one_process_are_one_watchdog_report(tmp_path: Path) -> None:
    top = top_failure(tmp_path, ONE_PROCESS_TWO_GROUPS)
    assert top.kind == "crash" and top.metrics["code"] == "cuda_illegal_memory_access"
    assert "ranks 1, 3" not in top.suggestion and "does not name the kernel" in top.suggestion


def test_two_ranks_of_one_group_still_fault_together(tmp_path: Path) -> None:
    group = "PG ID 3 PG GUID 7(TENSOR_MODEL_PARALLEL_GROUP)"
    top = top_failure(tmp_path, _HEAD + _watchdog(group, 0, 9) + _watchdog(group, 1, 9))
    assert top.kind == "nccl_error" and top.metrics["code"] == "nccl_watchdog_cuda_error"


def test_two_global_ranks_fault_together_whatever_their_groups(tmp_path: Path) -> None:
    log = (
        _HEAD
        + _watchdog("PG ID 0 PG GUID 0(default_pg)", 3, 9, "[rank3]:")
        + _watchdog("PG ID 3 PG GUID 7(TENSOR_MODEL_PARALLEL_GROUP)", 0, 9, "[rank2]:")
    )
    top = top_failure(tmp_path, log)
    assert top.kind == "nccl_error" and "ranks 2, 3" in top.suggestion


# 2. torch.distributed.nn.functional's backward is the bug's place only as the innermost frame: an IndexError raised
#    in the program's own code that the collective's backward called (a hook, a custom autograd function) is not
#    torch's global-rank index, though the backward frame is within the scanner's four lines above it.
_TORCH_NN = "/opt/conda/lib/python3.11/site-packages/torch/distributed/nn/functional.py"
UNDER_THE_BACKWARD = (
    "+ torchrun --nproc_per_node=4 train.py\nstep 10 loss 2.31\n"
    "[rank2]: Traceback (most recent call last):\n"
    '[rank2]:   File "/workspace/train.py", line 88, in <module>\n'
    "[rank2]:     loss.backward()\n"
    f'[rank2]:   File "{_TORCH_NN}", line 412, in backward\n'
    "[rank2]:     output = _AlltoAll.apply(ctx.group, *out_tensor_list, *grad_outputs)\n"
    '[rank2]:   File "/workspace/hooks.py", line 12, in pick\n'
    "[rank2]:     return shards[idx]\n"
    "[rank2]: IndexError: list index out of range\n"
)


def test_an_index_error_below_the_collectives_backward_is_the_programs(tmp_path: Path) -> None:
    top = top_failure(tmp_path, UNDER_THE_BACKWARD)
    assert top.metrics.get("code") != "torch_dist_nn_subgroup_rank_index" and top.kind == "crash"


def test_the_backward_as_innermost_frame_with_carets_is_still_torchs(tmp_path: Path) -> None:
    log = (
        "[rank3]: Traceback (most recent call last):\n"
        f'[rank3]:   File "{_TORCH_NN}", line 331, in backward\n'
        "[rank3]:     gx = torch.empty_like(grad_outputs[rank])\n"
        "[rank3]:                           ~~~~~~~~~~~~^^^^^^\n"
        "[rank3]: IndexError: tuple index out of range\n"
    )
    assert top_failure(tmp_path, log).metrics["code"] == "torch_dist_nn_subgroup_rank_index"
