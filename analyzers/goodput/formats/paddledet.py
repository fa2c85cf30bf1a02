"""Line formats of PaddleDetection's trainer (ppdet; its logger prints `[%m/%d %H:%M:%S] name LEVEL: ..`)."""

from __future__ import annotations

from scope.analyzers.goodput.formats.rows import NUM, LineFormat

_PPDET_LOG = (
    "https://github.com/PaddlePaddle/PaddleDetection/blob/release/2.6/ppdet/engine/callbacks.py (LogPrinter: "
    "`Epoch: [{}] [{:>4d}/{}] .. batch_cost: .. data_cost: ..`)"
)
_PPDET_EVAL = (
    "https://github.com/PaddlePaddle/PaddleDetection/blob/release/2.6/ppdet/engine/trainer.py (_eval_with_loader: "
    "`Total sample number: {}, average FPS: {}` after the pass)"
)
_PPDET_CKPT = "https://github.com/PaddlePaddle/PaddleDetection/blob/release/2.6/ppdet/utils/checkpoint.py (save_model)"

ROWS: tuple[LineFormat, ...] = (
    LineFormat(
        "ppdet_step",
        "PaddleDetection",
        ("step",),
        r"ppdet\.engine INFO: Epoch: \[(?P<epoch>\d+)\] \[\s*(?P<step>\d+)/(?P<total>\d+)\].*?"
        r"batch_cost: (?P<step_s>" + NUM + ")",
        "Epoch: [",
        _PPDET_LOG,
        epoch_from=0,  # the iteration counts within the epoch, epochs from 0
    ),
    LineFormat(
        "ppdet_eval_end",
        "PaddleDetection",
        ("eval_end",),
        r"ppdet\.engine INFO: Total sample number: \d+, average FPS: ",
        "Total sample number:",
        _PPDET_EVAL,
    ),
    LineFormat(
        "ppdet_save",
        "PaddleDetection",
        ("save_begin",),
        r"ppdet\.utils\.checkpoint INFO: Save checkpoint: \S+",
        "Save checkpoint:",
        _PPDET_CKPT,
    ),
)
