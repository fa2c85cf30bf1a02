"""Lines of the lightning-hydra-template (ashleve/lightning-hydra-template and the many projects built on it):
its task wrapper and train()/evaluate() log each launch's start-up, the training start and the task's end
through Python logging into Hydra's job log (`[2024-05-01 10:00:00,123][__main__][INFO] - [rank: 0] ...`).
Lightning's own step metrics go to the Trainer's loggers (TensorBoard, CSV, W&B) and its progress bar to the
console, never to this file: a job log of this template has launches and ends but often no step line
(steps unseen: the time inside training is accounted with its productivity unknown, timeline.py).

Each launch prints its extras lines (utils.extras, before the task: whichever are configured) and
`Instantiating datamodule <...>` once (train()'s first line): the same line again is the next launch.
`Output dir: ...` is printed in the task wrapper's `finally` block (since v2.0), on every way out: the
task is over, and only the lines before it say how (a traceback, logged by the wrapper's `except` first:
failed; a KeyboardInterrupt traceback: interrupted; none: it returned, or was stopped without a traceback).
"""

from __future__ import annotations

import re

from scope.analyzers.goodput.formats.rows import LineFormat

_REPO = "https://github.com/ashleve/lightning-hydra-template/blob/main/src"
_UTILS = f"{_REPO}/utils/utils.py"
_TRAIN = f"{_REPO}/train.py"
# Hydra's job logging (its default and the template's colorlog config: `[%(asctime)s][%(name)s][%(levelname)s] -
# %(message)s`, the colours stripped before a line is read), then RankedLogger's rank (src/utils/logging_utils.py,
# since v2.0): `[2024-05-02 08:00:03,000][__main__][INFO] - [rank: 0] Starting training!`. Only lines in that
# layout are the template's: a bare `Output dir: ...` printed by another program at its start is no exit
_HYDRA = r"\]\[[\w.]+\]\[(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\] - "
_RANK = _HYDRA + r"(?:\[rank: (?P<own_rank>\d+)\] )?"
# the task wrapper's logger: utils/utils.py (`src.utils.utils`, or `utils.utils` where src is the path's root)
_WRAPPER = r"\]\[(?:[\w.]+\.)?utils\]\[INFO\] - (?:\[rank: (?P<own_rank>\d+)\] )?"

# utils.extras(): one line per configured extra, each at most once per launch (one row each, so that a launch
# printing two of them stays one launch)
_EXTRAS = (
    ("lht_extras_missing", "Extras config not found! <cfg.extras=null>"),
    ("lht_ignore_warnings", "Disabling python warnings! <cfg.extras.ignore_warnings=True>"),
    ("lht_enforce_tags", "Enforcing tags! <cfg.extras.enforce_tags=True>"),
    ("lht_print_config", "Printing config tree with Rich! <cfg.extras.print_config=True>"),
)


def _extras_row(name: str, text: str) -> LineFormat:
    return LineFormat(
        name,
        "lightning-hydra-template",
        ("init_begin",),
        _RANK + re.escape(text),
        text.split(" <", 1)[0],
        f"{_UTILS} (extras: `log.info({text!r})` before the task starts)",
        once_per_launch=True,
    )


ROWS: tuple[LineFormat, ...] = (
    *(_extras_row(name, text) for name, text in _EXTRAS),
    # train()'s and evaluate()'s first line: the launch's own start where no extras line is printed
    LineFormat(
        "lht_datamodule",
        "lightning-hydra-template",
        ("init_begin",),
        _RANK + r"Instantiating datamodule <[\w.]+>",
        "Instantiating datamodule <",
        f'{_TRAIN} (train: `log.info(f"Instantiating datamodule <{{cfg.data._target_}}>")`)',
        once_per_launch=True,
    ),
    LineFormat(
        "lht_setup",
        "lightning-hydra-template",
        ("init_mark",),
        _RANK + r"(?:Instantiating (?:model|trainer) <[\w.]+>|Instantiating (?:callbacks|loggers)\.\.\.)",
        "Instantiating ",
        f"{_TRAIN} (train: the model, callbacks, loggers and trainer built, one line each)",
    ),
    # `trainer.fit(...)` is called right after it: the training start (a data table of such lines: the
    # train_begin rows of every format module)
    LineFormat(
        "lht_train_begin",
        "lightning-hydra-template",
        ("train_begin",),
        _RANK + r"Starting training!",
        "Starting training!",
        f'{_TRAIN} (train: `log.info("Starting training!")`, then trainer.fit)',
    ),
    LineFormat(
        "lht_test_begin",
        "lightning-hydra-template",
        ("eval_begin",),
        _RANK + r"Starting testing!",
        "Starting testing!",
        f'{_TRAIN} (train: `log.info("Starting testing!")`, then trainer.test)',
    ),
    LineFormat(
        "lht_test_end",
        "lightning-hydra-template",
        ("eval_end",),
        _RANK + r"Best ckpt path: ",
        "Best ckpt path: ",
        f'{_TRAIN} (train: `log.info(f"Best ckpt path: {{ckpt_path}}")` once trainer.test returned)',
    ),
    # the task wrapper's `finally` block: the task is over, however it ended (the lines before say how)
    LineFormat(
        "lht_output_dir",
        "lightning-hydra-template",
        ("exit",),
        _WRAPPER + r"Output dir: \S",
        "Output dir: ",
        f'{_UTILS} (task_wrapper: `log.info(f"Output dir: {{cfg.paths.output_dir}}")` in its finally block)',
    ),
)
