"""Steps a validation result names before any step line does: fairseq's validation record carries the
update count it evaluated (`valid_num_updates`, `test_num_updates`, `| valid on 'valid' subset | ...
num_updates N`), and with --log-interval past an epoch's length (or an epoch summary whose line lost its
count) the first epoch's training leaves no step line of its own: the validation is the first line that
says N updates ran. Those steps ran before the validation began, so a step mark is placed there (at the
validation's begin line if it has one, else at its result, its few seconds then counted with the steps):
without it the whole first epoch reads as initialization.

Sources: https://github.com/facebookresearch/fairseq/blob/main/fairseq_cli/train.py (validate: the stats
printed with the subset's tag, num_updates among them); seen in the FSDP example output of
https://github.com/facebookresearch/fairseq/blob/main/examples/fully_sharded_data_parallel/README.md
(`valid_num_updates` before the epoch summary) and in fairseq 0.9 logs (`| epoch 001 | valid on 'valid'
subset | ... | num_updates 52`, formats/fairseq.py fairseq09_eval_end)."""

from __future__ import annotations

from scope.analyzers.goodput.mark import Mark

# Rows whose validation only ever follows training (fairseq validates at an epoch's end or every
# --validate-interval-updates; MMF's logistics callback at its evaluation interval). Others evaluate before
# the first step too: nanoGPT at the step it resumed from (`step 5000: train loss ..` then `iter 5001`),
# Megatron's --eval at iteration 0 or its resumed iteration, Lightning's checkpoint lines after a sanity
# check: the step such a line names ran in an earlier launch, not in this one.
_AFTER_TRAINING_ONLY = frozenset(
    {"fairseq_eval_end", "fairseq09_eval_end", "fairseq_json_eval_end", "mmf_val_progress"}
)


def first_steps_from_evaluation(marks: list[Mark]) -> list[Mark]:
    """A step mark for the first validation result that names a step count when no step line came before
    it (only the first: later validations follow step lines, which place their steps)."""
    for i, m in enumerate(marks):
        if m.kind == "step":
            return marks
        if m.kind == "eval_end" and m.row in _AFTER_TRAINING_ONLY and m.step and m.t is not None:
            begin = next((b for b in reversed(marks[:i]) if b.kind == "eval_begin" and b.t is not None), m)
            step = Mark("step", begin.line, m.file, "evaluated steps", step=m.step, epoch=m.epoch, text=m.text)
            step.t, step.t_src = begin.t, begin.t_src
            at = marks.index(begin)
            return [*marks[:at], step, *marks[at:]]
    return marks
