"""Line formats of LeRobot's training script (lerobot_train.py / lerobot/scripts/train.py)."""

from __future__ import annotations

from scope.analyzers.goodput.formats.rows import NUM, LineFormat

_METRICS = (
    "https://github.com/huggingface/lerobot/blob/main/src/lerobot/utils/logging_utils.py (MetricsTracker.__str__: "
    "`step:{format_big_number(step)} smpl:.. ep:.. epch:..`); format_big_number in "
    "https://github.com/huggingface/lerobot/blob/main/src/lerobot/utils/utils.py (one unit per 1000, 0 decimals)"
)
_TRAIN = "https://github.com/huggingface/lerobot/blob/main/src/lerobot/scripts/lerobot_train.py"

ROWS: tuple[LineFormat, ...] = (
    LineFormat(
        "lerobot_step",
        "LeRobot",
        ("step",),
        # past 999 the step is rounded to thousands ("1K" for 1000..1499): step_unit reads the suffix
        r"\bstep:(?P<step>\d+)(?P<unit>[KMBTQ])? smpl:\S+ ep:\S+ epch:" + NUM,
        "smpl:",
        _METRICS,
    ),
    LineFormat(
        "lerobot_save",
        "LeRobot",
        ("save_begin",),
        r"Checkpoint policy after step (?P<step>\d+)",
        "Checkpoint policy",
        _TRAIN,
    ),
    LineFormat("lerobot_end", "LeRobot", ("train_end",), r"\bEnd of training\b", "End of training", _TRAIN),
)
