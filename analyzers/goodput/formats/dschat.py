"""Line formats of DeepSpeed-Chat's training scripts (DeepSpeedExamples applications/DeepSpeed-Chat): plain
`print_rank_0` lines with no timestamp of their own, between DeepSpeed's timestamped ones."""

from __future__ import annotations

from scope.analyzers.goodput.formats.rows import LineFormat

_STEP1 = (
    "https://github.com/microsoft/DeepSpeedExamples/blob/master/applications/DeepSpeed-Chat/training/"
    "step1_supervised_finetuning/main.py (main: the evaluation before and after each epoch, the final save)"
)

ROWS: tuple[LineFormat, ...] = (
    # `***** Evaluating perplexity, Epoch 0/5 *****` before training and after each epoch (step 2's reward
    # model: `Evaluating reward`, DPO: `Evaluating rewards`)
    LineFormat(
        "dschat_eval_begin",
        "DeepSpeed-Chat",
        ("eval_begin",),
        r"^\*{5} Evaluating (?:perplexity|rewards?)\b[^*]*\*{5}",
        "***** Evaluating ",
        _STEP1,
    ),
    LineFormat(
        "dschat_final_save",
        "DeepSpeed-Chat",
        ("save_begin",),
        r"^saving the final model \.\.\.",
        "saving the final model",
        _STEP1,
    ),
)
