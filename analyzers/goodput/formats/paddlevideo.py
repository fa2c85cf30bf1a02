"""Line formats of PaddleVideo's tasks (its logger prints `[%m/%d %H:%M:%S] msg`): how a launch ends. Its progress
line (`epoch:[  1/100] train step:0 ...`, paddlevideo/utils/record.py log_batch) is read by the `step:N loss:` row,
the epoch beside it by structural.py."""

from __future__ import annotations

from scope.analyzers.goodput.formats.rows import LineFormat

_PV = "https://github.com/PaddlePaddle/PaddleVideo/blob/develop/paddlevideo"

ROWS: tuple[LineFormat, ...] = (
    # train_model's last line, after the last epoch's save (paddlevideo/tasks/train.py; its PyTorch ports print it
    # too): the training loop finished
    LineFormat(
        "paddlevideo_train_end",
        "PaddleVideo",
        ("train_end",),
        r"\btraining \S+ finished\s*$",
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
