"""Line formats of maskrcnn-benchmark's trainer (its logger: `%(asctime)s %(name)s %(levelname)s: %(message)s`)."""

from __future__ import annotations

from scope.analyzers.goodput.formats.rows import NUM, LineFormat

_MRB = "https://github.com/facebookresearch/maskrcnn-benchmark/blob/main/"
_TRAINER = _MRB + "maskrcnn_benchmark/engine/trainer.py (do_train)"

ROWS: tuple[LineFormat, ...] = (
    # train_net.py's first line of each launch
    LineFormat(
        "mrb_gpus",
        "maskrcnn-benchmark",
        ("init_begin",),
        r"\bmaskrcnn_benchmark INFO: Using \d+ GPUs",
        "Using ",
        _MRB + "tools/train_net.py (main)",
    ),
    LineFormat(
        "mrb_train_begin",
        "maskrcnn-benchmark",
        ("train_begin",),
        r"\bmaskrcnn_benchmark\.trainer INFO: Start training",
        "Start training",
        _TRAINER,
    ),
    # every 20 iterations: the meters' window median (and the global mean in brackets); `time` is an
    # iteration's, data wait included
    LineFormat(
        "mrb_step",
        "maskrcnn-benchmark",
        ("step",),
        r"\bmaskrcnn_benchmark\.trainer INFO: eta: (?:\d+ days?, )?\S+\s+iter: (?P<step>\d+)\s"
        r"(?:.{0,300}?\btime: (?P<step_s>" + NUM + r") \(" + NUM + r"\)\s+data: (?P<data_s>" + NUM + r"))?",
        "iter: ",
        _TRAINER + " (meters: `eta: .. iter: .. time: median (global avg) data: ..`)",
    ),
    # the periodic save names the iteration it follows (`model_{:07d}`), the final one `model_final`
    LineFormat(
        "mrb_save",
        "maskrcnn-benchmark",
        ("save_begin",),
        r"\bmaskrcnn_benchmark\.utils\.checkpoint INFO: Saving checkpoint to "
        r"(?:\S*?\bmodel_(?P<step>\d{7})\.pth\b|\S+)",
        "Saving checkpoint to",
        _MRB + "maskrcnn_benchmark/utils/checkpoint.py (Checkpointer.save); " + _TRAINER,
    ),
    # printed after the loop (never on an exception): the training finished; the test after it follows
    LineFormat(
        "mrb_train_end",
        "maskrcnn-benchmark",
        ("train_end",),
        r"\bmaskrcnn_benchmark\.trainer INFO: Total training time: ",
        "Total training time:",
        _TRAINER,
    ),
    LineFormat(
        "mrb_eval_begin",
        "maskrcnn-benchmark",
        ("eval_begin",),
        r"\bmaskrcnn_benchmark\.inference INFO: Start evaluation on \S+ dataset",
        "Start evaluation on",
        _MRB + "maskrcnn_benchmark/engine/inference.py (inference)",
    ),
)
