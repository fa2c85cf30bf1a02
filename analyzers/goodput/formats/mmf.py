"""Line formats of MMF (facebookresearch/mmf): LogisticsCallback's report through summarize_report,
`progress: {num_updates}/{max_updates}, ` then the meters, prefixed by the dataset type (`train/...` after
an update's log interval, `val/...` when a validation ends, with its `val_time`)."""

from __future__ import annotations

from scope.analyzers.goodput.formats.rows import LineFormat

_MMF_LOGISTICS = (
    "https://github.com/facebookresearch/mmf/blob/0209c2312d9b0d0ac2b6b492911e5c4ffbce6eaa/mmf/trainers/callbacks/"
    "logistics.py (on_update_end, on_validation_end: summarize_report)"
)
_MMF_LOGGER = (
    "https://github.com/facebookresearch/mmf/blob/main/mmf/utils/logger.py (summarize_report: `progress: N/M`)"
)

ROWS: tuple[LineFormat, ...] = (
    # the step count and its total lead the line: a line cut after its first meter still says the step
    LineFormat(
        "mmf_train_progress",
        "MMF",
        ("step",),
        r"mmf\.trainers\.callbacks\.logistics: progress: (?P<step>\d+)/(?P<total>\d+), train/",
        "progress: ",
        _MMF_LOGISTICS + "; " + _MMF_LOGGER,
    ),
    LineFormat(
        "mmf_val_progress",
        "MMF",
        ("eval_end",),
        r"mmf\.trainers\.callbacks\.logistics: progress: (?P<step>\d+)/(?P<total>\d+), val/",
        "progress: ",
        _MMF_LOGISTICS + "; " + _MMF_LOGGER,
    ),
)
