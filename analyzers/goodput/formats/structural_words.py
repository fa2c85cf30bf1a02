"""The words a log read by its structure (no row of LINE_FORMATS) is read with, beyond its step counter: each a
row with the line it was written from and where that line comes from, so a new framework's wording is a row
(tests/test_goodput_relaunches_and_units.py checks every row against its own example)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_LITGPT = "https://github.com/Lightning-AI/litgpt/blob/main/litgpt/finetune/lora.py (fit())"
_PAINN = (
    "https://github.com/MrCogito/Deep_learning_2023/blob/e0fd1ea0d0e1dc50b481e9f0515cc7ef9209fd44/outputs/"
    "WorkingSetup/Markdown/WorkingSetup_0.md (a plain PyTorch loop's epoch lines)"
)
_VINVL = "VinVL-Paddle's training loop (tests/test_goodput_training_classes.py's VINVL lines)"


@dataclass(frozen=True)
class WordRow:
    # what the words say: eval (an evaluation ran), eval_result, save, epoch_end, epoch_train, optimizer_step, eval_time
    kind: str
    pattern: str  # matched case-insensitively
    example: str  # a line of the source it was written from
    source: str


STRUCTURAL_WORDS = (
    # a timestamped line saying an evaluation ran at an epoch or a step: the time since the last progress line
    # was evaluation (`Evaluating epoch 2` is printed as one begins, so the progressive forms are not ends)
    WordRow(
        "eval",
        r"\b(?:eval|evaluation|validation)\b.{0,20}?\b(?:epoch|step|iter|iteration)\b\s*[:\[#]?\s*\d+",
        "2021-05-14 23:59:38 Eval at Epoch [1]!",
        _VINVL,
    ),
    # a test or validation pass's result on no step line of its own: an evaluation ended there
    WordRow("eval_result", r"\[(?:TEST|VAL|VALID|EVAL)\]", "[TEST] Accuracy: 71%", "mlprof's test pass (issue 40)"),
    WordRow(
        "eval_result",
        r"\b(?:test|val|valid|validation|eval)[_ ](?:acc(?:uracy)?|loss|ppl|perplexity|f1|bleu)\b\s*[:=]",
        "Validation loss = 1.94",
        "hand-written loops (`val_acc: 0.71`, `test accuracy: 0.83`)",
    ),
    # an epoch's training is over: an evaluation that follows begins there, not at the last progress line
    WordRow(
        "epoch_end",
        r"\bepoch\b\s*[:\[#]?\s*\d+\s*\]?\s*(?:is\s+)?(?:done|finished|ended|completed?)\b",
        "** ** Epoch [1] done! Training loss: 0.02386 ** **",
        _VINVL,
    ),
    # two counters on one line: the iteration (a micro-batch of gradient accumulation), then the optimizer
    # step; a number with a fraction there is a step's time (`iter 101 | step 0.413s`), not a counter
    WordRow(
        "optimizer_step",
        r"\biter(?:ation)?\s+\d+\s*\|?\s*step\s+(?P<opt>\d+)(?![.\d])",
        "iter 1760 | step 220: loss 1.5947, iter time: 263.85 ms (optimizer.step)",
        _LITGPT + "; Lightning-AI/litgpt#1042",
    ),
    # a validation pass's own time on a counter's line: an evaluation that took that long, not a step
    WordRow(
        "eval_time",
        r"\b(?:val|eval|valid|validation)[_ ]time\s*[:=]\s*(?P<val>\d+(?:\.\d+)?)\s*(?P<unit>ms|s|sec|secs|seconds)\b",
        "iter 4800: val loss 1.7258, val time: 3778.02 ms",
        _LITGPT + " (printed after validate()); Lightning-AI/litgpt#1042",
    ),
    # an epoch line that reports training is that epoch's step, even when it carries the validation's result too
    # (`Epoch [3/50], Train Loss: 0.01, Val Loss: 0.02`); only a validation line of its own is no second step
    WordRow("epoch_train", r"\btrain(?:ing)?\b", "Epoch [1/650], Train Loss: 0.1746, Train L1 Loss: 1.9826", _PAINN),
    # a metric of the iteration (or epoch) it evaluated, on a line of its own: the pass ran from that
    # iteration's progress line to this one (minutes, in an interactive-segmentation trainer on Paddle)
    WordRow(
        "eval_result",
        r"\b(?:mean\s+)?(?:m?iou|map|ap|acc(?:uracy)?|f1|dice|psnr|ssim|top-?[15])\s+(?:of|at|for)\s+"
        r"(?:the\s+)?(?:iter(?:ation)?|step|epoch)\s*[:#]?\s*\d+",
        "2021-04-16 16:41:11 [INFO]\tmean iou of iter 1000 is 0.8137425740690406",
        "RITM-paddle's train script in https://github.com/linhandev/iann (`mean iou of iter {} is {}`)",
    ),
    # a save begun on a line of its own, naming where it writes: `Saving trained model to DIR/checkpoint-3`
    # (VinVL-Paddle's and Oscar-Paddle's loop after each epoch's evaluation), `saving checkpoint to PATH`
    WordRow(
        "save",
        r"\bsav(?:e|ing)\b(?:\s+[a-z]+){0,2}?\s+(?:model|checkpoint|weights)s?\s+to\s+\S",
        "** * ** Saving trained model to ./exp/finetune_retrieval/checkpoint-1. ** * **",
        _VINVL,
    ),
)


def words(kind: str) -> re.Pattern[str]:
    """The rows of one kind as one pattern (a kind whose pattern names groups has one row)."""
    rows = [r.pattern for r in STRUCTURAL_WORDS if r.kind == kind]
    return re.compile(rows[0] if len(rows) == 1 else "|".join(f"(?:{p})" for p in rows), re.IGNORECASE)
