"""Line formats of YOLOX's Trainer (its loguru lines: `2023-05-14 22:48:24.574 | INFO     | yolox.core.trainer:
after_iter:246 - message`; forks keep the method names, the module and line numbers vary)."""

from __future__ import annotations

from scope.analyzers.goodput.formats.rows import NUM, LineFormat

_YOLOX = "https://github.com/Megvii-BaseDetection/YOLOX/blob/main/yolox/core/trainer.py"
_LOGURU = "https://github.com/Delgan/loguru/blob/master/loguru/_logger.py (Logger.catch: its default message)"

ROWS: tuple[LineFormat, ...] = (
    # each launch's first line: before_train logs the parsed arguments, on rank 0 alone (the trainer sets loguru
    # up to print for rank 0 only): a relaunch prints it again
    LineFormat(
        "yolox_args",
        "YOLOX",
        ("init_begin",),
        r":(?:before_train:)?\d+ - args: Namespace\(",
        "args: Namespace(",
        _YOLOX + " (before_train: `args: {}`; setup_logger(distributed_rank=self.rank))",
        once_per_launch=True,
    ),
    LineFormat(
        "yolox_train_begin",
        "YOLOX",
        ("train_begin",),
        r":(?:before_train:)?\d+ - Training start\.\.\.",
        "Training start...",
        _YOLOX + " (before_train)",
    ),
    # before_epoch: an epoch's training begins (after the last one's save and evaluation: their end), as
    # fairseq's `begin training epoch N`
    LineFormat(
        "yolox_epoch_begin",
        "YOLOX",
        ("train_begin",),
        r":(?:before_epoch:)?\d+ - ---> start train epoch(?P<epoch>\d+)",
        "---> start train epoch",
        _YOLOX + " (before_epoch)",
    ),
    # after_iter every print_interval iterations: the epoch (from 1, of max_epoch), the iteration in it (from 1),
    # and the meters' means since the line before (iter_time spans one iteration's data wait and its step, from
    # before_iter to after_iter: the epoch-end save and evaluation, in after_epoch, are outside it)
    LineFormat(
        "yolox_step",
        "YOLOX",
        ("step",),
        r":(?:after_iter:)?\d+ - epoch: (?P<epoch>\d+)(?P<of>/\d+), iter: (?P<step>\d+)/(?P<total>\d+), "
        r"(?:.{0,300}?\biter_time: (?P<step_s>" + NUM + r")s)?(?:, data_time: (?P<data_s>" + NUM + r")s)?",
        ", iter: ",
        _YOLOX + " (after_iter: `epoch: {}/{}, iter: {}/{}, mem: ..Mb, iter_time: ..s, data_time: ..s`)",
        timer_excludes="saves",
        epoch_from=1,
    ),
    # the same line states the run's plan: max_epoch after the epoch, the epoch's iterations after the iteration
    # (after_train, in train()'s `finally`, prints its end line on every way out: a loop stopped at epoch 16 of
    # 120 is short of this plan, not completed)
    LineFormat(
        "yolox_plan",
        "YOLOX",
        ("plan",),
        r":(?:after_iter:)?\d+ - epoch: \d+/(?P<epoch>\d+), iter: \d+/\d+, ",
        ", iter: ",
        _YOLOX + " (after_iter: `epoch: {}/{}` self.epoch + 1, self.max_epoch)",
    ),
    # save_ckpt logs before it writes the file (the epoch-end `latest`, and after each evaluation)
    LineFormat(
        "yolox_save",
        "YOLOX",
        ("save_begin",),
        r":(?:save_ckpt:)?\d+ - Save weights to \S+",
        "Save weights to",
        _YOLOX + " (save_ckpt)",
    ),
    # evaluate_and_save_model logs the evaluator's summary once the pass is done (no line as it begins: it
    # follows the epoch-end save)
    LineFormat(
        "yolox_eval_end",
        "YOLOX",
        ("eval_end",),
        r":evaluate_and_save_model:\d+ - ",
        ":evaluate_and_save_model:",
        _YOLOX + " (evaluate_and_save_model)",
    ),
    # the console sink (`{name}:{line}`, no function: what nohup and SLURM .out files hold) names no
    # evaluate_and_save_model; its message, "\n" + the evaluator's summary, puts the summary's first line
    # (the evaluators' time_info) on a line of its own, in both sinks
    LineFormat(
        "yolox_eval_summary",
        "YOLOX",
        ("eval_end",),
        r"^Average forward time: " + NUM + r" ms, Average NMS time: ",
        "Average forward time: ",
        "https://github.com/Megvii-BaseDetection/YOLOX/blob/main/yolox/evaluators/coco_evaluator.py "
        "(evaluate_prediction: time_info); " + _YOLOX + " (evaluate_and_save_model: `logger.info('\\n' + summary)`)",
    ),
    # after_train runs in train()'s `finally`: after the last epoch, and on the way out of a Ctrl-C or a crash
    # (the traceback after it then decides)
    LineFormat(
        "yolox_train_end",
        "YOLOX",
        ("train_end",),
        r":(?:after_train:)?\d+ - Training of experiment is done and the best AP is ",
        "Training of experiment is done",
        _YOLOX + " (after_train)",
    ),
    # the launcher's worker wrapped in loguru's logger.catch: an exception escaped the worker (its traceback
    # follows; KeyboardInterrupt there is a Ctrl-C)
    LineFormat(
        "yolox_worker_error",
        "YOLOX",
        ("failure",),
        r"\| ERROR\s+\| \S+ - An error has been caught in function '[\w.<>]+'",
        "An error has been caught in function",
        _LOGURU + "; https://github.com/Megvii-BaseDetection/YOLOX/blob/main/yolox/core/launch.py (@logger.catch)",
    ),
)
