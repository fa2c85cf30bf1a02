"""Line formats of PaddleVideo's tasks (its logger prints `[%m/%d %H:%M:%S] msg`, paddlevideo/utils/logger.py): how
a launch ends, and its validation. Its training progress line (`epoch:[  1/100] train step:0 ...`,
paddlevideo/utils/record.py log_batch) is read by the `step:N loss:` row, the epoch beside it by structural.py;
the same line in `val` mode (`--validate`: `epoch:[  1/100] val step:0 ...`) is the validation's, no step."""

from __future__ import annotations

from scope.analyzers.goodput.formats.rows import LineFormat

_PV = "https://github.com/PaddlePaddle/PaddleVideo/blob/develop/paddlevideo"

ROWS: tuple[LineFormat, ...] = (
    # a validation batch's line (train_epoch's `--validate` pass after each epoch's training, log_batch in
    # `val` mode): the evaluation runs until its epoch's summary line
    LineFormat(
        "paddlevideo_val_step",
        "PaddleVideo",
        ("eval_begin",),
        r"\bepoch:\[\s*\d+\s*/\s*\d+\s*\] val step:\d+",
        "] val step:",
        f"{_PV}/utils/record.py (log_batch: `epoch:[{{:>3d}}/{{:<3d}}]`, `{{:s}} step:{{:<4d}}` with mode `val`)",
    ),
    LineFormat(
        "paddlevideo_val_end",
        "PaddleVideo",
        ("eval_end",),
        r"\bEND epoch:\d+\s+val ",
        "END epoch:",
        f"{_PV}/utils/record.py (log_epoch: `END epoch:{{:<3d}}` `{{:s}}` with mode `val`)",
    ),
    # train_model's last line, after the last epoch's save (paddlevideo/tasks/train.py; its PyTorch ports print it
    # too): the training loop finished
    LineFormat(
        "paddlevideo_train_end",
        "PaddleVideo",
        ("train_end",),
        # (the logger's own `[MM/DD HH:MM:SS]` opens the line: other programs' `training epoch finished` is no end)
        r"^\[\d\d/\d\d \d\d:\d\d:\d\d\] training \S+ finished\s*$",
        " finished",
        f"{_PV}/tasks/train.py (train_model: `logger.info(f'training {{model_name}} finished')`)",
    ),
    # a test launch's metric, once every batch is predicted (test_model's Metric.accumulate): the launch's work
    # is done, with labels (its accuracy) or without (the predictions' file)
    LineFormat(
        "paddlevideo_test_end",
        "PaddleVideo",
        ("job_end",),
        r"\[TEST\] finished, ",
        "[TEST] finished",
        f"{_PV}/metrics/skeleton_metric.py (SkeletonMetric.accumulate: `[TEST] finished, avg_acc1= ..`)",
    ),
    LineFormat(
        "paddlevideo_results_saved",
        "PaddleVideo",
        ("job_end",),
        r"\bResults saved in \S+ !",
        "Results saved in",
        f"{_PV}/metrics/skeleton_metric.py (SkeletonMetric.accumulate: `Results saved in {{}} !`)",
    ),
)
