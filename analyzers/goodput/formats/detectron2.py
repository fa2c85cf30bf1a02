"""Line formats of detectron2's DefaultTrainer (its file log: `[%m/%d %H:%M:%S] name LEVEL: message`; its terminal:
`[%m/%d %H:%M:%S name]: message`)."""

from __future__ import annotations

from scope.analyzers.goodput.formats.rows import LineFormat

_D2_SETUP = "https://github.com/facebookresearch/detectron2/blob/main/detectron2/engine/defaults.py (default_setup)"
_LIBAI_SETUP = "https://github.com/Oneflow-Inc/libai/blob/main/libai/engine/default.py (default_setup)"
_D2_LOOP = (
    "https://github.com/facebookresearch/detectron2/blob/main/detectron2/engine/train_loop.py (TrainerBase.train)"
)
_D2_EVAL = (
    "https://github.com/facebookresearch/detectron2/blob/main/detectron2/evaluation/evaluator.py (inference_on_dataset)"
)
# print_csv_format: the evaluation's results, `copypaste:` lines, after the evaluator's own work (COCOeval's
# evaluate/accumulate, tens of seconds after `Total inference time` on rank 0); the training loop resumes after
_D2_RESULTS = (
    "https://github.com/facebookresearch/detectron2/blob/main/detectron2/evaluation/testing.py (print_csv_format)"
)
_FVCORE_CKPT = (
    "https://github.com/facebookresearch/fvcore/blob/main/fvcore/common/checkpoint.py (Checkpointer.save; "
    "PeriodicCheckpointer.step names the file `{file_prefix}_{iteration:07d}`)"
)
_D2_CONFIG = (
    "https://github.com/facebookresearch/detectron2/blob/main/detectron2/config/defaults.py (_C.SOLVER.MAX_ITER), "
    "dumped by default_setup's `Running with full config:` as YAML, one key a line"
)

# Between the logger's name and the message: the file log's ` INFO: ` (`[%m/%d %H:%M:%S] name LEVEL: msg`), or
# the terminal's `]: ` of its older and colored format (`[01/29 06:25:28 d2.utils.events]: msg`, logger.py's
# _ColorfulFormatter before 2020 and on stdout)
_SAYS = r"(?: INFO: |\]: )"

ROWS: tuple[LineFormat, ...] = (
    # each launch's first line (default_setup, before the environment and the config dump): each process prints
    # its own rank once per launch, under its package's logger (`detectron2`, and LiBai's copy of default_setup
    # under `libai`), and only rank 0's reaches the console and log.txt (setup_logger: the other ranks write
    # log.txt.rankN): the same rank's line again is the next launch, though the one before died in its start-up
    LineFormat(
        "d2_setup",
        "detectron2",
        ("init_begin",),
        r"\b(?:detectron2|libai)" + _SAYS + r"Rank of current process: (?P<own_rank>\d+)\. World size: \d+",
        "Rank of current process",
        _D2_SETUP + "; " + _LIBAI_SETUP,
        once_per_launch=True,
    ),
    # the config dump's planned length (`  MAX_ITER: 10000` under SOLVER): the iterations the launch runs,
    # 0..MAX_ITER-1; a launch whose log stops short of it did not complete, whatever summary it printed
    LineFormat(
        "d2_max_iter_plan",
        "detectron2",
        ("plan",),
        r"^\s*MAX_ITER\s*:\s*(?P<total>\d+)\s*$",
        "MAX_ITER",
        _D2_CONFIG,
    ),
    LineFormat(
        "d2_train_begin",
        "detectron2",
        ("train_begin",),
        _SAYS + r"Starting training from iteration \d+",
        "Starting training from iteration",
        _D2_LOOP,
    ),
    LineFormat(
        "d2_eval_begin",
        "detectron2",
        ("eval_begin",),
        _SAYS + r"Start inference on \d+ (?:batches|images)",
        "Start inference on",
        _D2_EVAL,
    ),
    LineFormat(
        "d2_eval_end", "detectron2", ("eval_end",), _SAYS + r"Total inference time: ", "Total inference time", _D2_EVAL
    ),
    # the evaluation ends with its results, not with the inference: the metric computation after
    # `Total inference time` (COCO evaluation: 30-40 s of 175 s in the eval hooks of HaowenGuan/
    # NYU-Semi-Supervise-Object-Detection's log_supervised_*.txt) is the evaluation's too; a log cut to its
    # result lines (the `Start inference` line left out) still shows where each evaluation ended
    LineFormat(
        "d2_eval_result",
        "detectron2",
        ("eval_end",),
        r"\bd2\.evaluation\.testing" + _SAYS + r"copypaste: ",
        "copypaste: ",
        _D2_RESULTS,
    ),
    LineFormat(
        "d2_save",
        "detectron2",
        ("save_begin",),
        # the periodic save's file is named by the iteration it follows (PeriodicCheckpointer:
        # `model_{:07d}`), the step a log cut between its progress lines no longer shows
        r"fvcore\.common\.checkpoint" + _SAYS + r"Saving checkpoint to (?:\S*?\bmodel_(?P<step>\d{7})\.pth\b|\S+)",
        "Saving checkpoint to",
        _FVCORE_CKPT,
    ),
)
