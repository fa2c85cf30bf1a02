"""Where each training framework takes the process-group timeout, and the lines that show a log was written under
it, as data: a timeout's remedy names the setting of the framework the log shows (its tracebacks' file paths,
its launcher's lines), torch's own only where the log names none.

Sources: torch's init_process_group(timeout=...) (30 min by default, torch/distributed/constants.py);
transformers' TrainingArguments.ddp_timeout (seconds, 1800 by default; the Trainer passes it to accelerate and to
deepspeed.init_distributed, src/transformers/training_args.py); accelerate's InitProcessGroupKwargs(timeout=...)
(src/accelerate/utils/dataclasses.py); Lightning's DDPStrategy / FSDPStrategy / DeepSpeedStrategy(timeout=...)
(src/lightning/pytorch/strategies/ddp.py); deepspeed.init_distributed(timeout=...) (deepspeed/comm/comm.py);
Megatron-LM's --distributed-timeout-minutes (megatron/training/arguments.py, 10 min by default; Megatron-DeepSpeed
passes it to deepspeed.init_distributed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from scope.analyzers.diagnose.knowledge.remedies import TIMEOUT_KNOBS

__all__ = ["TIMEOUT_KNOBS", "TORCH_KNOB", "TRAINER_KNOB", "frameworks_in", "knobs_for", "name_framework_knobs"]


@dataclass(frozen=True)
class Framework:
    name: str
    needles: tuple[str, ...]  # one of these substrings must be in the log before the pattern is tried
    pattern: re.Pattern[str]  # a traceback path, module or launcher line only this framework prints
    knob: str
    covers: tuple[str, ...] = ()  # frameworks it runs on whose timeout it sets itself


TRAINER_KNOB = "HF Trainer --ddp_timeout (TrainingArguments(ddp_timeout=seconds))"
FRAMEWORKS: tuple[Framework, ...] = (
    # the Trainer's own files: it passes ddp_timeout to accelerate and to deepspeed.init_distributed itself
    Framework(
        "transformers",
        ("transformers",),
        re.compile(r"transformers/trainer(?:_seq2seq|_pt_utils)?\.py|transformers/training_args\.py"),
        TRAINER_KNOB,
        covers=("accelerate", "DeepSpeed"),
    ),
    # the tokenizer progress bar of the scripts built on transformers: 'Running tokenizer on dataset' is the
    # datasets.map desc of its examples (examples/pytorch/language-modeling/run_clm.py) and of LLaMA-Factory
    # (hiyouga/LLaMA-Factory#2656), '... on train dataset' of ChatGLM's P-tuning main.py. The examples'
    # *_no_trainer.py scripts print it too and run on accelerate: the bar covers no other framework's setting
    Framework(
        "transformers scripts",
        ("Running tokenizer on",),
        re.compile(r"Running tokenizer on (?:the )?(?:train |validation |eval |test )?dataset"),
        TRAINER_KNOB,
    ),
    Framework(
        "Lightning",
        ("lightning",),
        re.compile(r"(?:pytorch_)?lightning/(?:pytorch/)?(?:trainer|strategies|loops|core|fabric)/|lightning_fabric/"),
        "Lightning DDPStrategy(timeout=timedelta(...)) (the strategy's timeout=: FSDPStrategy, DeepSpeedStrategy)",
        covers=("DeepSpeed",),
    ),
    Framework(
        "Megatron-LM",
        ("megatron", "Megatron"),
        re.compile(r"megatron/(?:training|core|initialize|arguments)|\bpretrain_(?:gpt|bert|t5|llama)\w*\.py"),
        "Megatron-LM --distributed-timeout-minutes",
        covers=("DeepSpeed",),
    ),
    Framework(
        "accelerate",
        ("accelerate",),
        re.compile(r"accelerate/(?:accelerator|state|launchers|commands|utils)[/.]|\baccelerate launch\b"),
        "accelerate InitProcessGroupKwargs(timeout=timedelta(...)) in Accelerator(kwargs_handlers=[...])",
    ),
    Framework(
        "DeepSpeed",
        ("deepspeed", "DeepSpeed"),
        re.compile(r"deepspeed/(?:runtime|comm|launcher|utils)/|\[launch\.py:\d+:main\]|\bdeepspeed --"),
        "deepspeed.init_distributed(timeout=timedelta(...))",
    ),
)

TORCH_KNOB = "init_process_group(timeout=timedelta(...))"


def frameworks_in(text: str) -> tuple[str, ...]:
    """The frameworks whose lines are in this log, in the table's order."""
    return tuple(f.name for f in FRAMEWORKS if any(n in text for n in f.needles) and f.pattern.search(text))


def knobs_for(frameworks: set[str] | tuple[str, ...]) -> str:
    """The timeout setting(s) of the frameworks a log shows (less the ones another of them sets), or torch's own."""
    shown = [f for f in FRAMEWORKS if f.name in frameworks]
    covered = {c for f in shown for c in f.covers}
    knobs = list(dict.fromkeys(f.knob for f in shown if f.name not in covered))  # the Trainer's by path and by bar
    return "; ".join(knobs) if knobs else TORCH_KNOB


def name_framework_knobs(suggestion: str, frameworks: set[str] | tuple[str, ...]) -> str:
    """The suggestion with every framework's list of timeout settings narrowed to the log's own."""
    return suggestion.replace(TIMEOUT_KNOBS, knobs_for(frameworks))
