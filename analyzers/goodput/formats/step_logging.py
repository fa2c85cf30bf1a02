"""How each program whose training-start line a log shows (the train_begin rows) is told to print step lines:
the remedy of goodput's `steps_not_logged` finding, as data. One row per framework (the LineFormat's
`framework`), with the setting that prints them and the source that defines it; a framework no row names gets
the generic remedy. Adding a framework is adding a row."""

from __future__ import annotations

from typing import NamedTuple


class StepLogging(NamedTuple):
    framework: str  # LineFormat.framework of its train_begin row
    remedy: str  # what to set so that the log gets a line every N steps
    source: str  # where the setting is defined


# Any line with an increasing step counter and a timestamp or a per-step time is read (structural.py)
GENERIC = (
    "print a line every N steps (from rank 0, into this log) with the step number and a timestamp or the step's "
    "time (`step 100/5000 ... 0.52 s/it`): scope reads any such line (docs/goodput-logs.md)"
)

ROWS: tuple[StepLogging, ...] = (
    StepLogging(
        "lightning-hydra-template",
        "Lightning writes its step metrics only to the Trainer's loggers (`trainer.log_every_n_steps`, default "
        "50: TensorBoard, CSV or W&B files) and its progress bar to the console, never to the task's Hydra log "
        "(train.log): keep the console with the log (`python src/train.py ... 2>&1 | tee run.out`: the TQDM bar "
        "prints the step and its rate), or log `trainer.global_step` every N batches through the template's "
        "RankedLogger from a Callback's on_train_batch_end",
        "https://lightning.ai/docs/pytorch/stable/common/trainer.html#log-every-n-steps; "
        "https://github.com/ashleve/lightning-hydra-template/blob/main/src/train.py",
    ),
    StepLogging(
        "HF Trainer",
        "set `logging_strategy=\"steps\"` and `logging_steps=N` in TrainingArguments (a `{'loss': ..., "
        "'epoch': ...}` line every N steps; `disable_tqdm=False` adds the bar) and keep stdout in this log",
        "https://github.com/huggingface/transformers/blob/main/src/transformers/training_args.py "
        "(logging_strategy, logging_steps)",
    ),
    StepLogging(
        "Megatron-LM",
        "pass `--log-interval N` (its ` iteration N/ M | ... elapsed time per iteration (ms)` line) and keep "
        "the last rank's output in this log (Megatron prints it from the last pipeline stage)",
        "https://github.com/NVIDIA/Megatron-LM/blob/main/megatron/training/arguments.py (--log-interval)",
    ),
    StepLogging(
        "torchtitan",
        "set `--metrics.log_freq N` (its `step: N loss: ...` line) and keep rank 0's output in this log",
        "https://github.com/pytorch/torchtitan/blob/main/torchtitan/config/job_config.py (Metrics.log_freq)",
    ),
    StepLogging(
        "OLMo",
        "set `console_log_interval: N` in the train config (its `[step=N/M]` metrics lines)",
        "https://github.com/allenai/OLMo/blob/main/olmo/config.py (TrainConfig.console_log_interval)",
    ),
    StepLogging(
        "detectron2",
        "keep the PeriodicWriter hook with CommonMetricPrinter in the trainer's hooks (DefaultTrainer.build_hooks, "
        "every 20 iterations: `iter: N  total_loss: ...  time: ...`)",
        "https://github.com/facebookresearch/detectron2/blob/main/detectron2/engine/defaults.py (build_hooks)",
    ),
    StepLogging(
        "YOLOX",
        "set `self.print_interval = N` in the Exp (its `epoch: E/M, iter: I/K, ... iter_time: ...` line)",
        "https://github.com/Megvii-BaseDetection/YOLOX/blob/main/yolox/exp/yolox_base.py (print_interval)",
    ),
    StepLogging(
        "fairseq",
        "pass `--log-interval N --log-format simple` (or json; its `| epoch E | ... | num_updates N` lines)",
        "https://github.com/facebookresearch/fairseq/blob/main/fairseq/dataclass/configs.py (log_interval)",
    ),
    StepLogging(
        "maskrcnn-benchmark",
        "keep do_train's meters line (`eta: ... iter: N ... time: ...`, every 20 iterations) in this log: it is "
        "printed by the `maskrcnn_benchmark.trainer` logger, from rank 0",
        "https://github.com/facebookresearch/maskrcnn-benchmark/blob/main/maskrcnn_benchmark/engine/trainer.py",
    ),
)

BY_FRAMEWORK = {row.framework: row for row in ROWS}


def remedy_for(framework: str) -> str:
    """How to get step lines from this framework, else the generic remedy."""
    row = BY_FRAMEWORK.get(framework)
    return row.remedy if row is not None else GENERIC
