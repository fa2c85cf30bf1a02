"""HF Trainer's bare progress bar drawn for an evaluation or a prediction in a launch that did not train: not
steps. The Trainer draws one bar with no description for every loop (ProgressCallback: the training bar in
on_train_begin, the prediction bar in on_prediction_step), and logs a banner before each loop at INFO level:
`***** Running training *****` in _inner_training_loop, `***** Running {description} *****` in evaluation_loop
and prediction_loop, description "Evaluation" (evaluate) or "Prediction" (predict). A run with only do_eval /
do_predict (run_glue.py --do_eval, a script calling trainer.evaluate()) prints the evaluation banner, `  Num
examples = N`, `  Batch size = B`, the bar (`100%|##########| 51/51 [00:21<00:00,  2.41it/s]`) and the metrics
(`***** eval metrics *****`): that bar is the evaluation's time, and with no training banner in its launch it is
never a training step. In a launch that trains, the evaluation bars stay with training_bar_only (mark_passes.py),
which tells them from the training bar by their total.

Sources: https://github.com/huggingface/transformers/blob/main/src/transformers/trainer.py (`***** Running
training *****`; evaluation_loop / prediction_loop: `***** Running {description} *****`),
https://github.com/huggingface/transformers/blob/main/src/transformers/trainer_callback.py (ProgressCallback:
training_bar, prediction_bar, both tqdm with no description)."""

from __future__ import annotations

from scope.analyzers.goodput.formats import SHARED_BARS
from scope.analyzers.goodput.mark import Mark

# the rows of the banners that open an evaluation / prediction loop whose bar is the bare shared bar
EVAL_BANNERS = frozenset({"hf_eval_begin"})
# what starts a launch again: a training banner before it in the launch is no longer this launch's
_LAUNCH_STARTS = frozenset({"init_begin", "restart"})
EVAL_ONLY_BAR = "evaluation bar"  # the row of the mark an evaluation-only launch's bar leaves (its end)


def evaluation_bars_out(marks: list[Mark]) -> list[Mark]:
    """The frames of a bare bar drawn after an evaluation / prediction banner, with no training-start line in
    that launch before it, are not steps: they are dropped, the last frame of each bar kept as the
    evaluation's end where no result line closes it (its elapsed: how long the evaluation took)."""
    out: list[Mark] = []
    run: list[Mark] = []
    trained = False
    evaluating = False
    for cur in [*marks, None]:
        if evaluating and cur is not None and cur.kind == "step" and cur.row in SHARED_BARS:
            if not run or cur.total == run[0].total:
                run.append(cur)
                continue
            # (a frame of another total is another bar: the training's going on after a mid-run evaluation
            # whose result line no row reads, in a log whose training banner was cut off: its steps stay)
            evaluating = False
        if run:
            if cur is None or cur.kind != "eval_end":
                last = run[-1]
                out.append(
                    Mark(
                        "eval_end",
                        last.line,
                        last.file,
                        EVAL_ONLY_BAR,
                        t=last.t,
                        t_src=last.t_src,
                        text=last.text,
                        dur_s=last.rel,
                    )
                )
            run = []
        if cur is None:
            break
        if cur.kind in _LAUNCH_STARTS:
            trained = evaluating = False
        elif cur.kind in ("train_begin", "step"):  # (a step of another row: this launch trains)
            trained, evaluating = True, False
        elif cur.kind == "eval_end":
            evaluating = False
        elif cur.row in EVAL_BANNERS and not trained:
            evaluating = True
        out.append(cur)
    return out
