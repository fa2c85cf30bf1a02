"""Review of dev16d (rank -1 outside one process group, backend names torch does not know, narrower evaluation
markers): the lookalikes that rule misread, each beside the real case that must still be read.

- A launch whose processes print rank -1 before init and show the group formed afterwards (a world size of 2 or
  more, Lightning's MEMBER 1/4, HF's 'distributed training: True', accelerate's 'Num processes: 4', c10d's
  '[rank0]:' prefix, NCCL's 'nranks 16'), a config dump's indented 'rank: -1', one process printing the same line
  at two epochs: no finding.
- The check reads a big log in linear time, not one regex per line that holds a '-1' (a date does).
- 'Unknown backend type X' / 'Backend X not registered' are also other libraries' ValueErrors: only torch's own
  (an AssertionError, a frame in torch/distributed) is the c10d backend row.
- Evaluation lines the narrower markers lost: mmdet's 'Evaluating bbox...', a script's 'Evaluating {name}...',
  Lightning's bar after tqdm's carriage return on the epoch bar's line.
Every log is written here in the emitting program's format; none is copied from a held-out case."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from scope.analyzers.diagnose.reasoning import no_group_rank
from scope.analyzers.diagnose.reasoning.stages import where_it_stopped

from tests.helpers import diagnose_failures

CODE = "rank_outside_process_group"


def _codes(tmp_path: Path, log: str) -> list[str]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    found = diagnose_failures(tmp_path, log)
    return [str(f.metrics.get("signature") or f.metrics.get("code") or "") for f in found]


# ---- 1. rank -1 where the group did form, or where one process printed it ---------------------------------------

_REAL = "torchrun --nnodes 1 --nproc-per-node 4 pretrain.py\n" + "setup: rank -1 world_size -1\n" * 4


@pytest.mark.parametrize(
    "after",
    [
        # the script's own report after init, from rank 0 only
        "initialized the process group: rank 0, world size 4\nstep 1 loss 2.10\n",
        "dist ready: rank 0 of 4\nstep 1 loss 2.10\n",
        # Megatron's and DeepSpeed's argument prints of the world (dots between the name and the value)
        "using world size: 4, data-parallel size: 4, tensor-model-parallel size: 1\n",
        "  world_size ...................................... 4\n",
        # Lightning's registration lines (fabric/utilities/distributed.py, 2.x and 1.x)
        "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/4\n"
        "All distributed processes registered. Starting with 4 processes\n",
        "initializing ddp: GLOBAL_RANK: 0, MEMBER: 1/4\nAll DDP processes registered. Starting ddp with 4 processes\n",
        # HF examples' process line once TrainingArguments set the group up; accelerate's state
        "Process rank: 0, device: cuda:0, n_gpu: 1, distributed training: True, 16-bits training: True\n",
        "Distributed environment: MULTI_GPU  Backend: nccl\nNum processes: 4\nProcess index: 0\n",
        # c10d's per-rank prefix, which init_process_group sets from the group's rank (_update_default_pg)
        "[rank0]:[W1105 10:11:12.131000 4242 ProcessGroupNCCL.cpp:4561] Warning: barrier() using device under "
        "current context.\n",
        # NCCL's communicator of 16 ranks (two digits)
        "node3:4242:4301 [0] NCCL INFO comm 0x5581c0a0 rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId 18000 - Init START\n",
    ],
)
def test_rank_minus_one_before_init_is_quiet_where_the_log_shows_the_group_formed(tmp_path: Path, after: str) -> None:
    assert CODE not in _codes(tmp_path / "formed", _REAL + after)
    assert CODE in _codes(tmp_path / "real", _REAL + "step 1 loss 2.10\n")


def test_an_indented_config_dump_of_rank_minus_one_is_no_process_report(tmp_path: Path) -> None:
    # a YAML / OmegaConf dump printed by rank 0 under torchrun: the defaults the launcher's variables replace
    dump = (
        "torchrun --nnodes 2 --nproc_per_node 8 pretrain.py --config configs/7b.yaml\n"
        "config:\n  model: llama-7b\n  distributed:\n    backend: nccl\n    rank: -1\n    world_size: -1\n"
        "  lr: 0.0003\nstep 100 loss 2.31\n"
    )
    assert CODE not in _codes(tmp_path / "dump", dump)
    real = "torchrun --nnodes 2 --nproc_per_node 8 pretrain.py\nprocess up: rank: -1, world_size: -1\nstep 1\n"
    assert CODE in _codes(tmp_path / "real", real)


def test_one_process_printing_the_same_line_at_two_epochs_is_not_several_processes(tmp_path: Path) -> None:
    single = (
        "python train.py --epochs 2\nnot distributed: rank -1\nepoch 0 loss 1.20\n"
        "not distributed: rank -1\nepoch 1 loss 1.10\nTraining completed.\n"
    )
    assert CODE not in _codes(tmp_path / "single", single)
    several = "not distributed: rank -1\nnot distributed: rank -1\nepoch 0 loss 1.20\nepoch 0 loss 1.21\n"
    assert CODE in _codes(tmp_path / "several", several)


def test_a_big_log_is_read_in_linear_time() -> None:
    # every line holds a '-1' (its date, a loss) and the word rank: 60,000 lines took 1.7 s of regex per line
    line = "[2024-11-05 10:11:12,131] [INFO] [engine.py:88:step] step=123, rank_of_x -1 nranks_x, loss -1.25\n"
    text = "torchrun --nproc_per_node 8 x.py\n" + line * 60_000 + "rank -1\n"
    t0 = time.process_time()
    no_group_rank.ranks_outside_group(text, "x.log")
    assert time.process_time() - t0 < 0.5


# ---- 2. other libraries' 'unknown backend' errors -------------------------------------------------------------


def _raised(frame_file: str, exception: str) -> str:
    return (
        "Traceback (most recent call last):\n"
        '  File "train.py", line 12, in <module>\n'
        "    setup(cfg)\n"
        f'  File "{frame_file}", line 301, in build\n'
        "    raise_it()\n"
        f"{exception}\n"
    )


@pytest.mark.parametrize(
    ("exception", "torch_line"),
    [
        # a visualizer / storage registry's own ValueError, and torch's assertion
        ("ValueError: Unknown backend type WandbVisBackend", "AssertionError: Unknown backend type mccl"),
        (
            "ValueError: Backend qdrant not registered",
            None,  # torch's own (torch/distributed/_dist2.py new_group) is read below with its frame
        ),
    ],
)
def test_another_librarys_unknown_backend_is_not_the_c10d_backend_row(
    tmp_path: Path, exception: str, torch_line: str | None
) -> None:
    other = _raised("/opt/conda/lib/python3.11/site-packages/mmengine/registry/build_functions.py", exception)
    codes = _codes(tmp_path / "other", other)
    assert codes and not {"c10d_backend_name_invalid", "c10d_backend_not_registered"} & set(codes)
    c10d = "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py"
    dist2 = "/usr/lib/python3/dist-packages/torch/distributed/_dist2.py"
    if torch_line:
        assert _codes(tmp_path / "torch", _raised(c10d, torch_line))[0] == "c10d_backend_name_invalid"
    else:
        real = _raised(dist2, "ValueError: Backend ncll not registered")
        assert _codes(tmp_path / "torch", real)[0] == "c10d_dist2_backend_not_registered"


# ---- 3. evaluation lines the narrower markers lost ---------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        # mmdet's CocoMetric (evaluation/metrics/coco_metric.py: logger.info(f'Evaluating {metric}...'))
        "11/05 10:11:12 - mmengine - INFO - Evaluating bbox...",
        "Evaluating segm...",
        # a script's 'Evaluating {name}...' / 'Evaluating {name} …'
        "Evaluating llama-7b-sft...",
        "INFO:eval:Evaluating hellaswag …",
        "Evaluating Qwen2.5-7B-Instruct on gsm8k (1319 samples)",
        # Lightning's validation bar after the epoch bar on one line (tqdm's carriage returns, no newline)
        "Epoch 0: 100%|##########| 20/20 [00:06<00:00, 3.1it/s, loss=0.4]\rValidation: 0it [00:00, ?it/s]"
        "\rValidation DataLoader 0:   0%|          | 0/10 [00:00<?, ?it/s]",
        "Epoch 3:  50%|#####     | 10/20 [00:03<00:03, 3.1it/s, v_num=0]\rValidating: 0it [00:00, ?it/s]",
    ],
)
def test_evaluation_lines_the_narrower_markers_lost_are_the_evaluation_stage(line: str) -> None:
    stop = where_it_stopped("torchrun --nproc_per_node 2 train.py\nstep 5 loss 1.0\n" + line + "\n")
    assert stop is not None and stop.stage == "evaluation"
    # the words for something else stay out (dev16d's negatives)
    for other in ("Evaluating options", "Evaluating expression: lr * warmup", "Testing connection..."):
        stop = where_it_stopped("torchrun --nproc_per_node 2 train.py\nstep 5 loss 1.0\n" + other + "\n")
        assert stop is not None and stop.stage != "evaluation"


@pytest.mark.parametrize(
    ("bar", "says"),
    [
        ("Validation DataLoader 0:   0%|          | 0/25 [00:00<?, ?it/s]", "run evaluation on every rank"),
        ("\rValidation: 0it [00:00, ?it/s]\rValidation DataLoader 0:   0%|          | 0/25 [00:00<?, ?it/s]", "rank 0"),
        ("Sanity Checking DataLoader 0:   0%|          | 0/2 [00:00<?, ?it/s]", "num_sanity_val_steps=0"),
        ("Evaluating:   0%|          | 0/64 [00:00<?, ?it/s]", "run evaluation on every rank"),
    ],
)
def test_a_log_ending_on_an_evaluations_bar_at_zero_is_a_hang_in_evaluation_not_in_the_first_step(
    tmp_path: Path, bar: str, says: str
) -> None:
    log = (
        "torchrun --nproc_per_node 2 train.py\nInitializing distributed: GLOBAL_RANK: 0, MEMBER: 1/2\n"
        "Epoch 0: 100%|##########| 40/40 [00:12<00:00, 3.2it/s, loss=0.41]\n" + bar + "\n"
    )
    top = diagnose_failures(tmp_path, log)[0]
    assert top.kind == "hang" and "hang in evaluation" in top.summary and "first step" not in top.summary
    assert says in top.suggestion
    # a training bar at 0 stays the first step's
    (tmp_path / "train").mkdir()
    first = "torchrun --nproc_per_node 2 train.py\nEpoch 0:   0%|          | 0/40 [00:00<?, ?it/s]\n"
    assert "first step" in diagnose_failures(tmp_path / "train", first)[0].summary
