"""Line formats of fairseq (0.9 to 0.12, simple / tqdm / json log formats)."""

from __future__ import annotations

from scope.analyzers.goodput.formats.rows import NUM, LineFormat

_FS_TRAIN = "https://github.com/facebookresearch/fairseq/blob/main/fairseq_cli/train.py"
_FS_CKPT = "https://github.com/facebookresearch/fairseq/blob/main/fairseq/checkpoint_utils.py"
_FS_TRAINER = "https://github.com/facebookresearch/fairseq/blob/main/fairseq/trainer.py"
_FS_DIST = "https://github.com/facebookresearch/fairseq/blob/main/fairseq/distributed/utils.py"

ROWS: tuple[LineFormat, ...] = (
    # --- fairseq -----------------------------------------------------------------------------------------
    LineFormat(
        "fairseq_train_inner",
        "fairseq",
        ("step",),
        r"\| train_inner \| epoch (?P<epoch>\d+):\s+\d+ / \d+ .*?num_updates=(?P<step>\d+)",
        "| train_inner |",
        _FS_TRAIN,
    ),
    LineFormat(
        "fairseq_train_epoch",
        "fairseq",
        ("step",),
        r"\| train \| epoch (?P<epoch>\d+) \|.*?\| num_updates (?P<step>\d+)",
        "| train | epoch",
        _FS_TRAIN,
    ),
    LineFormat(
        "fairseq_tqdm_bar",
        "fairseq",
        ("step",),
        r"epoch (?P<epoch>\d+):\s*\d+%\|[^|\n]*\|\s*\d+/\d+\s*\[(?P<elapsed>(?:\d+:)?\d+:\d\d)<"
        r"[^\]\n]*?num_updates=(?P<step>\d+)",
        "num_updates=",
        _FS_TRAIN + " (--log-format tqdm)",
        clock=True,
    ),
    LineFormat(
        "fairseq09_progress",
        "fairseq",
        ("step",),
        r"^\| epoch (?P<epoch>\d+):\s+\d+ / \d+ .*?num_updates=(?P<step>\d+)",
        "| epoch",
        "https://github.com/facebookresearch/fairseq/blob/v0.9.0/fairseq/progress_bar.py (simple_progress_bar)",
    ),
    LineFormat(
        "fairseq09_eval_end",
        "fairseq",
        ("eval_end",),
        r"^\| epoch \d+ \| valid on '[^']+' subset \|.*?num_updates (?P<step>\d+)",
        "valid on",
        "https://github.com/facebookresearch/fairseq/blob/v0.9.0/train.py (validate)",
    ),
    # train_inner's records name the counter `num_updates`; the epoch summary (`| train |`, printed after the
    # epoch's validation and save) prefixes every key with the tag: `train_num_updates`, as the JSON valid line
    # does (`valid_num_updates`): e.g. the FSDP example output in
    # https://github.com/facebookresearch/fairseq/blob/main/examples/fully_sharded_data_parallel/README.md
    LineFormat(
        "fairseq_json_progress",
        "fairseq",
        ("step",),
        r"\| train(?:_inner)? \| \{.*?\"(?:train_)?num_updates\": \"?(?P<step>\d+)",
        "num_updates",
        _FS_TRAIN + " (--log-format json; progress_bar.JsonProgressBar.print: keys prefixed by the tag)",
    ),
    # the JSON record of a validation pass (`| valid | {...}`, `| test | {...}` for --valid-subset test),
    # printed when the pass ends
    LineFormat(
        "fairseq_json_eval_end",
        "fairseq",
        ("eval_end",),
        r"\| (?:valid|test)\w* \| \{\"epoch\": \d+, \"(?:valid|test)\w*_loss\""
        r".*?\"(?:valid|test)\w*_num_updates\": \"?(?P<step>\d+)",
        "_num_updates",
        _FS_TRAIN + " (validate_and_save -> validate: progress.print(stats, tag=subset), --log-format json)",
    ),
    # fairseq-hydra-train logs through hydra's job logging (`[%(asctime)s][%(name)s][%(levelname)s] - `): the
    # progress bar's tag is the logger's name, the epoch summary's keys are prefixed with it (`train_num_updates`)
    LineFormat(
        "fairseq_hydra_json_progress",
        "fairseq (hydra)",
        ("step",),
        r"\]\[train(?:_inner)?\]\[INFO\] - \{.*?\"(?:train_)?num_updates\": \"?(?P<step>\d+)",
        "num_updates",
        _FS_TRAIN + " (--log-format json); "
        "https://github.com/facebookresearch/hydra/blob/main/hydra/conf/hydra/job_logging/default.yaml",
    ),
    LineFormat(
        "fairseq_epoch_begin",
        "fairseq",
        ("train_begin",),
        r"begin training epoch (?P<epoch>\d+)",
        "begin training epoch",
        _FS_TRAINER,
    ),
    LineFormat(
        "fairseq_eval_begin", "fairseq", ("eval_begin",), r"begin validation on ", "begin validation on", _FS_TRAIN
    ),
    LineFormat(
        "fairseq_eval_end",
        "fairseq",
        ("eval_end",),
        r"\| valid(?:_\w+)? \| epoch \d+ \|.*?\| num_updates (?P<step>\d+)",
        "| valid",
        _FS_TRAIN,
    ),
    LineFormat(
        "fairseq_save_begin",
        "fairseq",
        ("save_begin",),
        r"begin save checkpoint|Preparing to save checkpoint",
        " checkpoint",
        _FS_TRAIN,
    ),
    LineFormat(
        "fairseq_save_end",
        "fairseq",
        ("save_end",),
        r"[Ss]aved checkpoint \S+ \(epoch (?P<epoch>\d+) @ (?P<step>\d+) updates.*?writing took (?P<dur_s>"
        + NUM
        + r") seconds",
        "aved checkpoint",
        _FS_CKPT,
    ),
    LineFormat(
        "fairseq_load_begin",
        "fairseq",
        ("load_begin",),
        r"Preparing to load checkpoint (?P<path>\S+)",
        "Preparing to load checkpoint",
        _FS_TRAINER,
    ),
    LineFormat(
        "fairseq_load_end",
        "fairseq",
        ("load_end",),
        r"[Ll]oaded checkpoint \S+ \(epoch (?P<epoch>\d+) @ (?P<step>\d+) updates\)",
        "oaded checkpoint",
        _FS_TRAINER,
    ),
    LineFormat(
        "fairseq_init",
        "fairseq",
        ("init_begin",),
        r"distributed init \(rank (?P<rank>\d+)\)",
        "distributed init (rank",
        _FS_DIST,
    ),
    LineFormat(
        "fairseq_done",
        "fairseq",
        ("job_end",),
        r"done training in (?P<dur_s>[\d.]+) seconds",
        "done training in",
        _FS_TRAIN,
    ),
)
