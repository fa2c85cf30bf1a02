"""What a late rank was doing while its peers waited in a collective until the timeout, as data.

The pattern of the class: one process (usually rank 0) does long work of its own - pre-processing a dataset
under `main_process_first`, an evaluation or prediction loop run on rank 0 only, a checkpoint save, data
loading - while the other ranks already wait in a barrier or the next collective; the watchdog or a short
process-group timeout fires on the waiting ranks. The timeout is the symptom; the remedy is the timeout or
the work, never "find the rank". Sources: the HF Trainer / accelerate threads in the corpus
(huggingface/accelerate#223, #314; hiyouga/LLaMA-Factory#2424; IGNF/myria3d#123), torch's default
process-group timeout of 30 min (torch/distributed/constants.py), transformers' `ddp_timeout` (1800 s).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

TIMEOUT_KNOBS = (
    "init_process_group(timeout=timedelta(...)); HF Trainer --ddp_timeout; accelerate "
    "InitProcessGroupKwargs(timeout=...); Lightning DDPStrategy(timeout=...)"
)


@dataclass(frozen=True)
class LateWork:
    name: str
    pattern: re.Pattern[str]
    what: str
    remedy: str


LATE_WORK: tuple[LateWork, ...] = (
    LateWork(
        "preprocessing",
        re.compile(
            r"(?i)Running tokenizer|tokeniz(?:ing|ation)|\bMap(?: \(num_proc=\d+\))?:|Grouping texts|"
            r"pre-?process(?:ing)?\b|Preparing (?:\w+ )?(?:set|data|dataset)|Converting format of dataset|"
            r"Generating \w+ split|Filter(?: \(num_proc=\d+\))?:"
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
            r"(?i)saving (?:model )?checkpoint|save_checkpoint|torch\.save|Saving model|saving the checkpoint|"
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
