"""Line formats of PyTorch Lightning and NeMo (Lightning's bar and callbacks, NeMo 2's printer)."""

from __future__ import annotations

from scope.analyzers.goodput.formats.rows import NUM, LineFormat

_PL_BAR = "https://github.com/Lightning-AI/pytorch-lightning/blob/master/src/lightning/pytorch/callbacks/progress/tqdm_progress.py"
# RichProgressBar: rich's Progress with Lightning's columns (description, CustomBarColumn, BatchesProcessedColumn
# `{completed}/{total}` (`--` for an unknown total), CustomTimeColumn `{elapsed} • {remaining}` (str(timedelta),
# `-:--:--` unknown), ProcessingSpeedColumn `{speed:.2f}it/s`, MetricsTextColumn `v_num: 0 train_loss: 1.23`).
# The train description is `Epoch {current_epoch}/{max_epochs - 1}` (both from 0: `Epoch 3/9` is the 4th of 10;
# `/-2` where max_epochs=-1; none where max_epochs is None), padded to the validation description's length; the
# bar is `━` with `╸`/`╺` half cells (`-` and spaces on an ascii console, rich/progress_bar.py). The bar is reset
# each epoch (progress.reset: its elapsed restarts). In a file the frames are redrawn with ANSI cursor codes
# (stripped by the parser) or printed one a line.
_PL_RICH = (
    "https://github.com/Lightning-AI/pytorch-lightning/blob/master/src/lightning/pytorch/callbacks/progress/"
    "rich_progress.py; https://github.com/Textualize/rich/blob/master/rich/progress_bar.py"
)
_RICH_BAR = r"\s+[━╸╺\- ]*?\s*"
_RICH_CLOCK = r"(?:\d+ days?, )?\d+:\d\d:\d\d"
_RICH_TIMES = r"\s+(?P<elapsed>" + _RICH_CLOCK + r") • (?:-:--:--|" + _RICH_CLOCK + r")"
_PL_CKPT = (
    "https://github.com/Lightning-AI/pytorch-lightning/blob/master/src/lightning/pytorch/callbacks/model_checkpoint.py"
)
_PL_RESTORE = (
    "https://github.com/Lightning-AI/pytorch-lightning/blob/master/src/lightning/pytorch/trainer/connectors/"
    "checkpoint_connector.py"
)
_PL_FIT = "https://github.com/Lightning-AI/pytorch-lightning/blob/master/src/lightning/pytorch/loops/fit_loop.py"
_NEMO_CKPT = "https://github.com/NVIDIA/NeMo/blob/main/nemo/utils/callbacks/nemo_model_checkpoint.py"
_NEMO_DIST = "https://github.com/NVIDIA/NeMo/blob/main/nemo/utils/callbacks/dist_ckpt_io.py"
_NEMO_EXP = "https://github.com/NVIDIA/NeMo/blob/main/nemo/utils/exp_manager.py"
_NEMO2_PRINTER = "https://github.com/NVIDIA/NeMo/blob/main/nemo/lightning/pytorch/callbacks/progress_printer.py"
_NEMO2_CKPT = "https://github.com/NVIDIA/NeMo/blob/main/nemo/lightning/pytorch/callbacks/model_checkpoint.py"

ROWS: tuple[LineFormat, ...] = (
    # --- PyTorch Lightning and NeMo (Lightning's bar and callbacks) -----------------------------------------
    LineFormat(
        "lightning_train_bar",
        "Lightning",
        ("step",),
        r"Epoch (?P<epoch>\d+):[^|\n]{0,12}?\s*\d+%\|[^|\n]*\|\s*(?P<step>\d+)/(?P<total>\d+|\?)\s*"
        r"\[(?P<elapsed>(?:\d+:)?\d+:\d\d)",
        "Epoch ",
        _PL_BAR,
        clock=True,
        epoch_from=0,  # Lightning's bar counts batches within the epoch
    ),
    LineFormat(
        "lightning_rich_train_bar",
        "Lightning (RichProgressBar)",
        ("step",),
        r"(?:^|[\r\s])Epoch (?P<epoch>\d+)(?:/-?\d+)?"
        + _RICH_BAR
        + r"(?<![\d/])(?P<step>\d+)/(?P<total>\d+|--)(?:\.0)?"
        + _RICH_TIMES
        + r"\s+(?P<bar_rate>"
        + NUM
        + r")(?P<bar_unit>it/s)",
        " • ",
        _PL_RICH,
        clock=True,
        epoch_from=0,  # the bar counts batches within the epoch, `Epoch N` from 0 whatever `/M` says
    ),
    LineFormat(
        "nemo_step_timing",
        "NeMo",
        ("step_time",),
        r"train_step_timing in s=(?P<step_s>" + NUM + ")",
        "train_step_timing in s=",
        _NEMO_EXP,
    ),
    LineFormat(
        "lightning_val_bar",
        "Lightning",
        ("eval_begin",),
        # (its elapsed field: the pass's own clock, restarted with each pass; times.py lays the passes between
        # the epochs' bars)
        r"(?:^|\r)\s*Validat(?:ion(?: DataLoader \d+)?|ing): *(?:\d+%|\|)"
        r"(?:[^\[\r\n]{0,80}\[(?P<elapsed>(?:\d+:)?\d+:\d\d)(?=[<,\]]))?",
        "Validat",
        _PL_BAR,
        clock=True,
    ),
    LineFormat(
        "lightning_rich_val_bar",
        "Lightning (RichProgressBar)",
        ("eval_begin",),
        # its elapsed: the pass's own clock (a task added for each pass), as the tqdm validation bar's
        r"(?:^|[\r\s])Validation(?: DataLoader \d+)?" + _RICH_BAR + r"(?<![\d/])\d+/(?:\d+|--)(?:\.0)?" + _RICH_TIMES,
        " • ",
        _PL_RICH,
        clock=True,
    ),
    LineFormat(
        "lightning_ckpt_best",
        "Lightning",
        ("eval_end", "save_begin"),
        r"Epoch (?P<epoch>\d+), global step (?P<step>\d+): '[^']+' reached \S+ \(best \S+\), saving model to",
        "saving model to",
        _PL_CKPT,
    ),
    LineFormat(
        "lightning_ckpt_not_top",
        "Lightning",
        ("eval_end",),
        r"Epoch (?P<epoch>\d+), global step (?P<step>\d+): '[^']+' was not in top",
        "was not in top",
        _PL_CKPT,
    ),
    LineFormat(
        "lightning_restore_begin",
        "Lightning",
        ("load_begin",),
        r"Restoring states from the checkpoint (?:path|file) at \S+",
        "Restoring states",
        _PL_RESTORE,
    ),
    LineFormat(
        "lightning_restore_end",
        "Lightning",
        ("load_end",),
        r"Restored all states from the checkpoint at \S+",
        "Restored all states",
        _PL_RESTORE,
    ),
    LineFormat(
        "lightning_fit_limit",
        "Lightning",
        ("train_end",),
        # FitLoop.done at info level: the planned length reached, the loop finished (endings.LOOP_FINISHED_ROWS)
        r"`Trainer\.fit` stopped: `max_(?:steps|epochs)=\S+` reached",
        "`Trainer.fit` stopped",
        _PL_FIT,
    ),
    LineFormat(
        "lightning_fit_end",
        "Lightning",
        ("train_end",),
        # any other reason (`trainer.should_stop` was set: an early stop), but `No training batches.`: a fit
        # that had nothing to train ran no loop, it ended nothing
        r"`Trainer\.fit` stopped: (?!No training batches|`max_(?:steps|epochs)=)",
        "`Trainer.fit` stopped",
        _PL_FIT,
    ),
    LineFormat(
        "nemo2_progress",
        "NeMo 2",
        ("step",),
        r"Training epoch (?P<epoch>\d+), iteration \d+/\d+ \|.*?global_step: (?P<step>\d+)"
        # (the timing is printed negative at times: mark_passes.negative_step_times)
        r"(?:.*?train_step_timing in s: (?P<step_s>-?" + NUM + "))?",
        "Training epoch ",
        _NEMO2_PRINTER,
        step_from_zero=True,  # global_step is Lightning's trainer.global_step, logged inside the step
    ),
    LineFormat(
        "nemo2_eval_begin",
        "NeMo 2",
        ("eval_begin",),
        r"Validation: iteration 1/\d+",
        "Validation: iteration 1/",
        _NEMO2_PRINTER,
    ),
    LineFormat(
        "nemo2_ckpt_saved",
        "NeMo 2",
        ("save_end",),
        r"Global Checkpoint Save : Rank: \d+ : Iteration: (?P<step>\d+) : Start time: [\d.]+s : "
        r"Save duration: (?P<dur_s>" + NUM + r")s",
        "Global Checkpoint Save",
        _NEMO2_CKPT,
    ),
    LineFormat(
        "nemo2_async_scheduled",
        "NeMo 2",
        # the save's blocking part ends here: the rest of it runs in the background, finalized later
        ("save_end",),
        r"Scheduled async checkpoint save for \S+",
        "Scheduled async checkpoint save",
        _NEMO2_CKPT,
    ),
    LineFormat(
        "nemo_save_begin",
        "NeMo",
        ("save_begin",),
        # the strategy's repr: a tuple in NeMo 1, a wrapper's (`FullyParallelSaveStrategyWrapper(torch_dist, 1)`)
        r"Using (?:\('\w+', \d+\)|\w+\(\w+, \d+\)) dist-ckpt save strategy",
        "dist-ckpt save strategy",
        _NEMO_DIST,
    ),
    LineFormat(
        "nemo_move_old",
        "NeMo",
        ("save_progress",),
        r"already exists, moving existing checkpoint to",
        "moving existing checkpoint",
        _NEMO_CKPT,
    ),
    LineFormat(
        "nemo_save_end", "NeMo", ("save_end",), r"New \.nemo model saved to", "New .nemo model saved", _NEMO_CKPT
    ),
    LineFormat(
        "nemo_remove_backup",
        "NeMo",
        ("save_progress",),
        r"Removing old \.nemo backup",
        "Removing old .nemo backup",
        _NEMO_CKPT,
    ),
    LineFormat(
        "nemo_resume",
        "NeMo",
        ("load_begin",),
        r"Resuming training from checkpoint: \S+",
        "Resuming training from checkpoint",
        _NEMO_EXP,
    ),
)
