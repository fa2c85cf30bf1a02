"""Line formats of ColossalAI's example trainers (its rich logger: `[%x %X] INFO colossalai - ...`)."""

from __future__ import annotations

from scope.analyzers.goodput.formats.rows import NUM, LineFormat

_DREAMBOOTH = (
    "https://github.com/hpcaitech/ColossalAI/blob/main/examples/images/dreambooth/train_dreambooth_colossalai.py "
    "(`Total optimization steps = N`; `max GPU_mem cost is .. MB` once per optimizer step, no step number; "
    "`Saving model checkpoint to` + the path, wrapped by rich onto the next line)"
)

ROWS: tuple[LineFormat, ...] = (
    LineFormat(
        "colossalai_dreambooth_step",
        "ColossalAI",
        ("step",),
        r"INFO: max GPU_mem cost is " + NUM + " MB",
        "max GPU_mem cost is",
        _DREAMBOOTH,
        counted=True,
    ),
    LineFormat(
        "colossalai_plan",
        "ColossalAI",
        ("plan",),
        r"colossalai - INFO:\s+Total optimization steps = (?P<total>\d+)",
        "Total optimization steps",
        _DREAMBOOTH,
    ),
    LineFormat(
        "colossalai_save",
        "ColossalAI",
        ("save_begin",),
        r"INFO: Saving model checkpoint to\s*$",
        "Saving model checkpoint to",
        _DREAMBOOTH,
    ),
)
