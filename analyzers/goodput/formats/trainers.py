"""Line formats of torchtitan, nanoGPT, OpenMMLab (mmcv, MMEngine), AI2 OLMo, scepter, wordplay."""

from __future__ import annotations

from scope.analyzers.goodput.formats.rows import NUM, LineFormat

_NANOGPT = "https://github.com/karpathy/nanoGPT/blob/master/train.py"
_TT_TRAIN = "https://github.com/pytorch/torchtitan/blob/main/torchtitan/train.py"
_TT_METRICS = "https://github.com/pytorch/torchtitan/blob/main/torchtitan/components/metrics.py (log)"
_TT_CKPT = "https://github.com/pytorch/torchtitan/blob/main/torchtitan/components/checkpoint.py"
_MMCV_TEXT = "https://github.com/open-mmlab/mmcv/blob/v1.7.0/mmcv/runner/hooks/logger/text.py (_log_info)"
# mmcv 1.x joins its fields with `, ` (`time: 0.500, data_time: 0.010`), MMEngine with two spaces
# (`time: 0.4489  data_time: 0.0072`)
_MMCV_DATA_TIME = r"(?:,?\s+data_time: (?P<data_s>" + NUM + r"))?"
_MMCV_CKPT = "https://github.com/open-mmlab/mmcv/blob/v1.7.0/mmcv/runner/hooks/checkpoint.py (after_train_epoch)"
_MMENGINE_CKPT = (
    "https://github.com/open-mmlab/mmengine/blob/main/mmengine/hooks/checkpoint_hook.py (_save_best_checkpoint)"
)
_MMCV_BAR = "https://github.com/open-mmlab/mmcv/blob/v1.7.0/mmcv/utils/progressbar.py (ProgressBar.update)"
_OLMO_TRAIN = "https://github.com/allenai/OLMo/blob/main/olmo/train.py"
_OLMO_SCRIPT = "https://github.com/allenai/OLMo/blob/main/scripts/train.py"
_SCEPTER = "https://github.com/modelscope/scepter/blob/main/scepter/modules/solver/hooks/log.py"
_WORDPLAY = "https://github.com/saforem2/wordplay/blob/main/src/wordplay/trainer.py (train_step metrics)"

_YACS = (
    "https://github.com/rbgirshick/yacs/blob/master/yacs/config.py (CfgNode.dump: `KEY: value` lines), as "
    "VinVL-Paddle's log prints its config: https://github.com/cattidea/VinVL-Paddle/blob/"
    "78c15c4bd4832203d8509bfde2390f13b86445bf/log/workerlog.0"
)

ROWS: tuple[LineFormat, ...] = (
    # --- torchtitan --------------------------------------------------------------------------------------
    LineFormat("torchtitan_start", "torchtitan", ("init_begin",), r"Starting job: ", "Starting job: ", _TT_TRAIN),
    LineFormat(
        "torchtitan_step",
        "torchtitan",
        ("step",),
        # (not a validation batch's `val step:N loss:`: PaddleVideo's, formats/paddlevideo.py)
        r"(?<!\bval )step:\s*(?P<step>\d+)(?:/(?P<total>\d+) = [\d.]+%)?\s+loss:\s*" + NUM,
        "loss:",
        _TT_METRICS,
    ),
    LineFormat(
        "torchtitan_train_begin",
        "torchtitan",
        ("train_begin",),
        r"Training starts at step (?P<start>\d+)",
        "Training starts at step",
        _TT_TRAIN,
    ),
    LineFormat(
        "torchtitan_save_begin",
        "torchtitan",
        ("save_begin",),
        r"Saving (?:the|a full|a model only) checkpoint(?:.*?at (?:last step, )?step (?P<step>\d+))?",
        "checkpoint",
        _TT_CKPT,
    ),
    LineFormat(
        "torchtitan_save_end",
        "torchtitan",
        ("save_end",),
        r"(?:Finished saving the (?:full )?checkpoint.*?in|Last step checkpoint completed in) (?P<dur_s>"
        + NUM
        + r")(?: seconds|s\b)",
        "checkpoint",
        _TT_CKPT,
    ),
    LineFormat(
        "torchtitan_load_begin",
        "torchtitan",
        ("load_begin",),
        r"Loading the checkpoint (?:at step (?P<step>\d+)|from \S+|at \S+)",
        "Loading the checkpoint",
        _TT_CKPT,
    ),
    LineFormat(
        "torchtitan_load_end",
        "torchtitan",
        ("load_end",),
        r"Finished loading the checkpoint in (?P<dur_s>" + NUM + r") seconds",
        "Finished loading the checkpoint",
        _TT_CKPT,
    ),
    LineFormat("torchtitan_done", "torchtitan", ("train_end",), r"Training completed", "Training completed", _TT_TRAIN),
    # the closing total many training scripts print once the loop is over: torchvision's references and the
    # DeiT / MAE family (`Training time 1 day, 2:03:04`), mlprof (`:: Total training time: 13.14 seconds`);
    # only where it opens the message (a per-epoch `Epoch 3 training time` or `Training time: 100.0s` is no end)
    LineFormat(
        "training_time_total",
        "torchvision references / mlprof",
        ("train_end",),
        # torchvision prints a timedelta (H:MM:SS); a per-epoch 'Training time: 100.0s' is no end of the run
        r"(?:^|\]|- |: )\s*(?:Total training time:?\s+(?:\d+ days?, )?\d"
        r"|Training time:?\s+(?:\d+ days?, )?\d+:\d\d:\d\d)",
        "raining time",
        "https://github.com/pytorch/vision/blob/main/references/classification/train.py (print Training time); "
        "mlprof's logger mlprof.trainers.pytorch.trainer as a real log shows it: https://github.com/saforem2/vault/blob/"
        "d96afcb06ae007719358935729013925a1d52c1a/imported/0007-MeetingNotes/Venkat/logs/mlprof/train-deepspeed-thetaGPU.md",
    ),
    # --- nanoGPT (and the many training scripts copied from its train.py) ---------------------------------
    # `time` is the last iteration's own time (t1 - t0 around one step), printed every log_interval steps;
    # an evaluation and its save run inside the timed iteration that follows them.
    LineFormat(
        "nanogpt_iter",
        "nanoGPT",
        ("step",),
        r"\biter (?P<step>\d+): loss (?:" + NUM + r"|nan|inf), time (?P<step_ms>" + NUM + r")ms",
        "iter ",
        _NANOGPT + " (print of iter_num, lossf, dt*1000, running_mfu)",
        last_step_time=True,
    ),
    LineFormat(
        "nanogpt_eval",
        "nanoGPT",
        ("eval_end",),
        r"\bstep (?P<step>\d+): train loss (?:" + NUM + r"|nan), val loss",
        ": train loss",
        _NANOGPT + " (estimate_loss every eval_interval)",
    ),
    LineFormat(
        "nanogpt_save", "nanoGPT", ("save_begin",), r"^saving checkpoint to \S+", "saving checkpoint to", _NANOGPT
    ),
    # --- OpenMMLab: mmcv's EpochBasedRunner / IterBasedRunner and MMEngine (mmdet, mmseg, mmocr, ...) ------------
    # The text logger prints every `interval` iterations; `time` is the mean seconds per iteration over them,
    # `data_time` the part of it spent waiting for the data loader (IterTimerHook.before_iter).
    LineFormat(
        "mmcv_epoch_iter",
        "mmcv / MMEngine",
        ("step",),
        r"\bEpoch(?:\(train\))?\s*\[(?P<epoch>\d+)\]\s*\[\s*(?P<step>\d+)/(?P<total>\d+)\]"
        r".*?\btime: (?P<step_s>" + NUM + r")" + _MMCV_DATA_TIME,
        "Epoch",
        _MMCV_TEXT,
        epoch_from=1,
        timer_excludes="epoch",
    ),
    LineFormat(
        "mmcv_iter",
        "mmcv / MMEngine",
        ("step",),
        r"\bIter(?:\(train\))?\s*\[\s*(?P<step>\d+)/(?P<total>\d+)\].*?\btime: (?P<step_s>"
        + NUM
        + r")"
        + _MMCV_DATA_TIME,
        "Iter",
        _MMCV_TEXT,
    ),
    LineFormat(
        "mmcv_plan",
        "mmcv",
        ("plan",),
        r"workflow: \[.*\], max: (?:(?P<epoch>\d+) epochs|(?P<total>\d+) iters)",
        "workflow: ",
        "https://github.com/open-mmlab/mmcv/blob/v1.7.0/mmcv/runner/epoch_based_runner.py (run: 'workflow: %s, "
        "max: %d epochs'); iter_based_runner.py ('max: %d iters')",
    ),
    # torchtitan's blendcorpus experiment (ezpz) states the run's length before its data: `Training iterations: N`
    LineFormat(
        "blendcorpus_plan",
        "torchtitan (blendcorpus)",
        ("plan",),
        r"\bTraining iterations: (?P<total>\d+)\s*$",
        "Training iterations: ",
        "https://github.com/auroraGPT-ANL/torchtitan/tree/main/torchtitan/experiments/blendcorpus (the data "
        "builder's summary: Training iterations, Evaluation iterations, samples)",
    ),
    # a config dump's epoch count on a line of its own (yacs / YAML `EPOCHS: 30`, argparse `epochs=30`,
    # `num_train_epochs: 3`): the run's planned length in epochs
    LineFormat(
        "config_epochs_plan",
        "config dump (yacs)",
        ("plan",),
        r"^\s*(?:NUM_)?EPOCHS\s*:\s*(?P<epoch>\d+)\s*$",
        "EPOCHS",
        _YACS,
    ),
    LineFormat(
        "config_epochs_plan_lower",
        "config dump (YAML / argparse)",
        ("plan",),
        r"^\s*(?:num_epochs|num_train_epochs|max_epochs|epochs)\s*[:=]\s*(?P<epoch>\d+)\s*,?\s*$",
        "epochs",
        _YACS,
    ),
    LineFormat(
        "mmcv_save_begin",
        "mmcv / MMEngine",
        ("save_begin",),
        r"Saving checkpoint at (?:(?P<epoch>\d+) epochs|(?P<step>\d+) iterations)",
        "Saving checkpoint at",
        _MMCV_CKPT,
    ),
    # MMEngine's CheckpointHook(save_best=...): after each evaluation that improves the metric, the previous
    # best file is removed, then the new one saved, and a line says so once the save is done
    LineFormat(
        "mmengine_best_removed",
        "MMEngine",
        ("save_progress",),
        r"The previous best checkpoint \S+ is removed",
        "previous best checkpoint",
        _MMENGINE_CKPT,
    ),
    LineFormat(
        "mmengine_best_saved",
        "MMEngine",
        ("save_end",),
        r"The best checkpoint with \S+ \S+ at (?:(?P<epoch>\d+) epoch|(?P<step>\d+) iter) is saved to",
        "best checkpoint with",
        _MMENGINE_CKPT,
    ),
    # mmcv's ProgressBar over the validation set (single_gpu_test / multi_gpu_test): the line is drawn at the
    # first image, redrawn with \r; what lands in a file is its last state, `elapsed` after the start
    LineFormat(
        "mmcv_eval_bar",
        "mmcv",
        ("eval_begin",),
        r"\[[>\s]*\] \d+/\d+, " + NUM + r" task/s, elapsed: (?P<dur_s>\d+)s",
        " task/s, elapsed:",
        _MMCV_BAR,
    ),
    LineFormat(
        "mmcv_eval_end",
        "mmcv / MMEngine",
        ("eval_end",),
        r"\bEpoch\(val\)\s*\[(?P<epoch>\d+)\]\s*\[\s*\d+(?:/\d+)?\]\s+(?!eta:)\S+: "
        r"|\bIter\(val\)\s*\[\s*\d+(?:/\d+)?\]\s+(?!eta:)\S+: ",
        "(val)",
        _MMCV_TEXT + "; MMEngine: mmengine/runner/log_processor.py (get_log_after_epoch: the metrics)",
    ),
    # MMEngine logs the validation loop's progress every `interval` batches (then its metrics, above)
    LineFormat(
        "mmengine_val_progress",
        "MMEngine",
        ("eval_begin",),
        r"\b(?:Epoch|Iter)\(val\)\s*(?:\[\d+\])?\s*\[\s*\d+/\d+\]\s+eta: ",
        "(val)",
        "https://github.com/open-mmlab/mmengine/blob/main/mmengine/runner/log_processor.py (get_log_after_iter)",
    ),
    # --- AI2 OLMo (olmo/train.py, scripts/train.py) -------------------------------------------------------
    LineFormat(
        "olmo_step",
        "OLMo",
        ("step",),
        r"\[step=(?P<step>\d+)/(?P<total>\d+)(?:,epoch=(?P<epoch>\d+))?\]",
        "[step=",
        _OLMO_TRAIN + " (log_metrics_to_console: the metrics follow on indented lines)",
    ),
    LineFormat(
        "olmo_train_begin", "OLMo", ("train_begin",), r"Starting training\.\.\.", "Starting training", _OLMO_SCRIPT
    ),
    LineFormat(
        "olmo_save_begin",
        "OLMo",
        ("save_begin",),
        r"Saving (?:unsharded |ephemeral |sharded )?checkpoint\.\.\.",
        "checkpoint...",
        _OLMO_TRAIN,
    ),
    LineFormat(
        "olmo_save_end",
        "OLMo",
        ("save_end",),
        r"(?:Unsharded |Ephemeral |Sharded )?[Cc]heckpoint saved to (?:\S*?step(?P<step>\d+)\S*|\S+)",
        "heckpoint saved to",
        _OLMO_TRAIN,
    ),
    LineFormat(
        "olmo_load_begin",
        "OLMo",
        ("load_begin",),
        r"Loading checkpoint from \S+",
        "Loading checkpoint from",
        _OLMO_SCRIPT,
    ),
    LineFormat(
        "olmo_load_end",
        "OLMo",
        ("load_end",),
        r"Checkpoint successfully loaded",
        "Checkpoint successfully loaded",
        _OLMO_SCRIPT,
    ),
    # --- ModelScope scepter (each data-parallel rank prints the line) ------------------------------------------
    LineFormat(
        "scepter_iter",
        "scepter",
        ("step",),
        r"Stage \[train\] iter: \[(?P<step>\d+)/(?P<total>\d+)\],(?: data_time: " + NUM + r"\(" + NUM + r"\),)?"
        r" time: (?P<step_s>" + NUM + r")\(",
        "Stage [train] iter:",
        _SCEPTER + " (_print_iter_log: the batch time, then its mean in brackets)",
    ),
    # --- saforem2's wordplay (nanoGPT on ezpz): `dt` is the last step's milliseconds -------------------------
    LineFormat(
        "wordplay_step",
        "wordplay",
        ("step",),
        r"\bstep=(?P<step>\d+) loss=(?:" + NUM + r"|nan) dt=(?P<step_ms>" + NUM + r")\b",
        " dt=",
        _WORDPLAY,
        last_step_time=True,
    ),
)
