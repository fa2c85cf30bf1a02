"""What a late rank was doing while its peers waited in a collective until the timeout, as data.

The pattern of the class: one process (usually rank 0) does long work of its own - pre-processing a dataset
under `main_process_first`, an evaluation or prediction loop run on rank 0 only, a checkpoint save, data
loading - while the other ranks already wait in a barrier or the next collective; the watchdog or a short
process-group timeout fires on the waiting ranks. The timeout is the symptom; the remedy is the timeout or
the work, never "find the rank". Sources: the HF Trainer / accelerate threads in the corpus
(huggingface/accelerate#223, #314; hiyouga/LLaMA-Factory#2424; IGNF/myria3d#123; alan-turing-institute/
autocast#381: a save_checkpoint under `is_global_zero` after fit; NVIDIA/Megatron-LM#1050: a stuck fused-kernel
build; ultralytics/yolov5#4400: the label cache scan on rank 0 past a 60 s timeout), torch's default
process-group timeout of 30 min (torch/distributed/constants.py), transformers' `ddp_timeout` (1800 s).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from scope.analyzers.diagnose.knowledge.remedies import TIMEOUT_KNOBS

__all__ = ["TIMEOUT_KNOBS"]


# When c10d's error handling took the waiting ranks down: the setting that makes the timeout fatal.
TAKE_DOWN_REMEDY = (
    " The waiting ranks were ended by c10d's error handling (the log's 'taking the entire process down'): "
    "NCCL_ASYNC_ERROR_HANDLING=1 or NCCL_BLOCKING_WAIT=1 (TORCH_NCCL_ASYNC_ERROR_HANDLING / "
    "TORCH_NCCL_BLOCKING_WAIT from torch 2.2) make a collective timeout fatal; where the job script sets them "
    "for a job with long single-rank work, remove them or raise the timeout with them."
)


@dataclass(frozen=True)
class LateWork:
    name: str
    pattern: re.Pattern[str]
    what: str
    remedy: str


LATE_WORK: tuple[LateWork, ...] = (
    LateWork(
        "after_training",
        re.compile(
            r"(?i)`?Trainer\.fit`? stopped|max_(?:epochs|steps)=\S+`? reached|Training completed|"
            r"training (?:is )?(?:finished|complete|done)\b"
        ),
        "past the end of training: training finished, then one rank called a collective the others never called "
        "(a checkpoint save, a test/validate run or a barrier under `if rank == 0` / `trainer.is_global_zero`)",
        "Call the post-training step on every rank: trainer.save_checkpoint / trainer.test / accelerator."
        "save_state / a barrier are collectives (they end with strategy.barrier()); guard only the file writing "
        "with `if is_global_zero`, not the call; destroy the process group once on every rank at the end.",
    ),
    LateWork(
        "extension_build",
        re.compile(
            r"(?i)compiling and loading fused kernels|fused_kernels|Building extension module|Emitting ninja build "
            r"file|Loading extension module|torch_extensions|JIT[- ](?:compil|build)"
        ),
        "building or loading a compiled extension (a JIT kernel build) while the others waited; a stale or locked "
        "build directory makes it wait forever",
        "Build the extension once before the job so no rank waits on another's build: clear a stale or locked "
        "build directory (Megatron's megatron/fused_kernels/build, ~/.cache/torch_extensions or "
        "TORCH_EXTENSIONS_DIR with a leftover lock file) and rebuild on one process; then raise the process-group "
        "timeout only if the build is just slow (" + TIMEOUT_KNOBS + ").",
    ),
    LateWork(
        "preprocessing",
        re.compile(
            r"(?i)Running tokenizer|tokeniz(?:ing|ation)|\bMap(?: \(num_proc=\d+\))?:|Grouping texts|"
            r"pre-?process(?:ing)?\b|Preparing (?:\w+ )?(?:set|data|dataset)|Converting format of dataset|"
            r"Generating \w+ split|Filter(?: \(num_proc=\d+\))?:|"
            # ultralytics YOLOv5/v8 dataloaders: the label cache is built on rank 0 under torch_distributed_zero_first
            r"Scanning '?[^']*'? images and labels|Caching images"
        ),
        "pre-processing a dataset (tokenization / map) on one process while the others waited for it "
        "(main_process_first or a barrier after it)",
        "Pre-process once before the job (a separate single-process run that saves the processed dataset, then "
        "load it on every rank: datasets' cache / save_to_disk), or raise the process-group timeout above the "
        "pre-processing time (" + TIMEOUT_KNOBS + ").",
    ),
    LateWork(
        "evaluation",
        re.compile(
            r"(?i)\*\*\*\*\* Running (?:Evaluation|Prediction)|\bevaluat(?:e|ing|ion)\b|\bValidation\b|Validating|"
            r"\bPredict(?:ing|ion)\b"
        ),
        "an evaluation / prediction run on one rank (rank 0) while the others already waited in the next collective",
        "Run evaluation on every rank (each on its shard, gather the metrics), or have the other ranks wait in a "
        "barrier with a long timeout, or raise the process-group timeout above the evaluation time ("
        + TIMEOUT_KNOBS
        + ").",
    ),
    LateWork(
        "checkpoint",
        re.compile(
            r"(?i)saving (?:the |a )?(?:latest |last |best |final |new )?(?:model )?checkpoint|save_checkpoint|"
            r"torch\.save|Saving model|saving the checkpoint|"
            r"Saving (?:FSDP|DeepSpeed) model|save_state|Saving current state"
        ),
        "a checkpoint save on one rank that outlasted the collective timeout of the ranks waiting for it",
        "Raise the process-group timeout above the save time (" + TIMEOUT_KNOBS + ") or save asynchronously "
        "(torch.distributed.checkpoint.async_save); check the checkpoint volume's write speed and free space "
        "(df -h). If the save is itself a collective (FSDP / DeepSpeed state gathering, accelerate's save_state, "
        "Lightning's trainer.save_checkpoint), call it on every rank, not under `if is_main_process`.",
    ),
    LateWork(
        "data_loading",
        re.compile(r"(?i)Loading (?:the )?(?:data|dataset)|Downloading|Extracting|\bInit\b.*data|read(?:ing)? data"),
        "loading or downloading data on one rank while the others waited",
        "Load or download the data once before the job (or on every rank from a shared cache), or raise the "
        "process-group timeout above the loading time (" + TIMEOUT_KNOBS + ").",
    ),
)


# Callers whose name says a stack's wait is part of an evaluation (the loader that hangs is the evaluation's):
# a function-name prefix (lower case) and where frameworks name their evaluation entry points so.
EVALUATION_CALLERS: tuple[tuple[str, str], ...] = (
    ("evaluat", "Megatron training.py evaluate / evaluate_and_print_results; HF Trainer.evaluate, evaluation_loop"),
    ("eval_", "DeepSpeed runtime/pipe/engine.py PipelineEngine.eval_batch"),
    ("validat", "Lightning Trainer.validate, LightningModule.validation_step, loops/evaluation_loop.py"),
    ("predict", "HF Trainer.predict / prediction_step; Lightning Trainer.predict, predict_step"),
    ("test_step", "Lightning LightningModule.test_step"),
)


def evaluation_caller(func: str) -> bool:
    """The function is an evaluation's entry point (EVALUATION_CALLERS)."""
    low = func.lower()
    return any(low.startswith(prefix) for prefix, _ in EVALUATION_CALLERS)
