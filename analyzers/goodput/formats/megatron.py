"""Line formats of Megatron-LM, Megatron-DeepSpeed and DeepSpeed."""

from __future__ import annotations

from scope.analyzers.goodput.formats.rows import NUM, LineFormat

_MEG = "https://github.com/NVIDIA/Megatron-LM/blob/main/megatron/training/training.py (training_log, pretrain)"
_MEG_CKPT = "https://github.com/NVIDIA/Megatron-LM/blob/main/megatron/training/checkpointing.py"
_MEG_ASYNC = (
    "https://github.com/NVIDIA/Megatron-LM/blob/main/megatron/training/async_utils.py; "
    "https://github.com/NVIDIA/NeMo/blob/main/nemo/utils/callbacks/dist_ckpt_io.py (AsyncFinalizerCallback)"
)
_MEG_TIMERS = "https://github.com/NVIDIA/Megatron-LM/blob/main/megatron/core/timers.py ((min, max) time across ranks)"
_DS_ENGINE = "https://github.com/microsoft/DeepSpeed/blob/master/deepspeed/runtime/engine.py"
_DS_CKPT = (
    "https://github.com/microsoft/DeepSpeed/blob/master/deepspeed/runtime/checkpoint_engine/torch_checkpoint_engine.py"
)
_DS_TPUT = "https://github.com/microsoft/DeepSpeed/blob/master/deepspeed/utils/timer.py (ThroughputTimer)"

ROWS: tuple[LineFormat, ...] = (
    # --- Megatron-LM and Megatron-DeepSpeed -----------------------------------------------------------
    LineFormat(
        "megatron_iteration",
        "Megatron-LM",
        ("step",),
        # the `key=value` spelling (iteration=  22/ 105963 | elapsed_time_per_iteration_ms=20723.0) is
        # argonne-lcf's Megatron-DeepSpeed (megatron/training_log.py)
        # BigScience's Megatron-DeepSpeed prints seconds: "elapsed time per iteration (s): 105.22"
        r"iteration[=\s]\s*(?P<step>\d+)\s*/\s*(?P<total>\d+)\s*\|"
        r".*?elapsed[ _]time[ _]per[ _]iteration[ _](?:\(?ms\)?[:=]\s*(?P<step_ms>"
        + NUM
        + r")|\(s\):\s*(?P<step_s>"
        + NUM
        + "))"
        # the batch a step consumed, two fields on (a batch-size rampup changes it line by line: no drift)
        + r"(?:\s*\|[^|\n]{0,80}\|\s*global[ _]batch[ _]size[:=]\s*(?P<batch>\d+))?",
        "per",
        _MEG,
        timer_excludes="saves",
    ),
    LineFormat(
        "megatron_init_time",
        "Megatron-LM",
        ("init_dur",),
        r"time to initialize megatron \(seconds\):\s*(?P<dur_s>[\d.]+)",
        "time to initialize megatron",
        _MEG,
    ),
    LineFormat(
        "megatron_after_init",
        "Megatron-LM",
        ("init_mark",),
        r"\[after megatron is initialized\]",
        "[after megatron",
        _MEG,
    ),
    LineFormat(
        "megatron_setup_mark",
        "Megatron-LM",
        ("init_mark",),
        r"\[after (?:model, optimizer, and learning rate scheduler are built|dataloaders are built)\]",
        "[after ",
        _MEG,
    ),
    LineFormat(
        "megatron_train_begin",
        "Megatron-LM",
        ("train_begin",),
        r"\[before the start of training step\]",
        "[before the start of training",
        _MEG,
    ),
    LineFormat(
        "megatron_train_end",
        "Megatron-LM",
        ("train_end",),
        r"\[after training is done\]",
        "[after training is done]",
        _MEG,
    ),
    LineFormat(
        "megatron_exit",
        "Megatron-LM",
        ("train_end",),
        # --exit-interval, --exit-duration-in-mins, --exit-signal-handler: a planned exit (after a save)
        r"exiting program (?:at iteration (?P<step>\d+)|after \S+ minutes|after receiving SIGTERM)",
        "exiting program ",
        _MEG,
    ),
    LineFormat(
        "megatron_save_begin",
        "Megatron-LM",
        ("save_begin",),
        r"saving checkpoint at iteration\s+(?P<step>\d+)",
        "saving checkpoint at iteration",
        _MEG_CKPT,
    ),
    LineFormat(
        "megatron_save_end",
        "Megatron-LM",
        ("save_end",),
        # (NeMo 2's AsyncFinalizerCallback, nemo/lightning/io/pl.py, writes it with a capital S)
        r"[Ss]uccessfully saved checkpoint (?:from |at )?iteration\s+(?P<step>\d+)",
        "uccessfully saved checkpoint",
        _MEG_CKPT,
    ),
    LineFormat(
        "async_save_final_flush",
        "Megatron-LM / NeMo",
        # the async saves still being written when training ends are waited for: training is over, the job
        # blocks until they finish (megatron/training/async_utils.py maybe_finalize_async_save(blocking=True);
        # NeMo's AsyncFinalizerCallback.on_train_end says `Pending` for the same wait)
        ("save_begin",),
        r"(?:Pending|Unfinalized) async checkpoint saves\. Finalizing them synchronously now",
        "async checkpoint saves. Finalizing",
        _MEG_ASYNC,
    ),
    LineFormat(
        "megatron_load_begin",
        "Megatron-LM",
        ("load_begin",),
        r"loading (?:\w+ )?checkpoint from \S+ at iteration (?P<step>\d+)",
        "checkpoint from",
        _MEG_CKPT,
    ),
    LineFormat(
        "megatron_load_end",
        "Megatron-LM",
        ("load_end",),
        r"successfully loaded checkpoint from \S+(?: \[[^\]]*\])? at iteration (?P<step>\d+)",
        "successfully loaded checkpoint",
        _MEG_CKPT,
    ),
    LineFormat(
        "megatron_save_timer",
        "Megatron-LM",
        ("save_dur",),
        r"save-checkpoint \.*:\s*\((?:" + NUM + r"),\s*(?P<dur_ms>" + NUM + r")\)",
        "save-checkpoint ",
        _MEG_TIMERS,
    ),
    LineFormat(
        "megatron_old_save_timer",
        "Megatron-LM",
        ("save_dur",),
        r"time \(ms\).*?\| save-checkpoint: (?P<dur_ms>" + NUM + ")",
        "| save-checkpoint:",
        "https://github.com/NVIDIA/Megatron-LM/blob/v2.5/megatron/timers.py (Timers.log: time (ms) | name: value)",
    ),
    LineFormat(
        "megatron_data_timer",
        "Megatron-LM",
        ("data_dur",),
        # normalized by the log interval (timers.log(..., normalizer=log_interval)): per iteration
        r"batch-generator(?: \.*:\s*\((?:" + NUM + r"),\s*|: )(?P<dur_ms>" + NUM + ")",
        "batch-generator",
        _MEG_TIMERS + "; megatron/training/training.py (training_log: timers_to_log)",
    ),
    LineFormat(
        "megatron_load_timer",
        "Megatron-LM",
        ("load_dur",),
        r"load-checkpoint \.*:\s*\((?:" + NUM + r"),\s*(?P<dur_ms>" + NUM + r")\)",
        "load-checkpoint ",
        _MEG_TIMERS,
    ),
    LineFormat(
        "megatron_eval_begin", "Megatron-LM", ("eval_begin",), r"Evaluating iter 1/\d+", "Evaluating iter 1/", _MEG
    ),
    LineFormat(
        "megatron_eval_end",
        "Megatron-LM",
        ("eval_end",),
        r"validation loss at iteration (?P<step>\d+)",
        "validation loss at iteration",
        _MEG,
    ),
    # --- DeepSpeed ---------------------------------------------------------------------------------------
    # the engine reports step 0 once, as it is built (DeepSpeedEngine.__init__: `_report_progress(0)` after the
    # optimizer and the LR scheduler are configured): no step has run, the job is still initializing
    LineFormat(
        "deepspeed_engine_ready",
        "DeepSpeed",
        ("init_mark",),
        r"\[Rank \d+\] step=0, skipped=\d+",
        "step=0,",
        _DS_ENGINE + " (__init__: _report_progress(0))",
    ),
    LineFormat(
        "deepspeed_step",
        "DeepSpeed",
        ("step",),
        r"\[Rank \d+\] step=(?P<step>[1-9]\d*), skipped=\d+",
        "step=",
        _DS_ENGINE + " (_take_model_step: _report_progress every steps_per_print)",
    ),
    LineFormat(
        "deepspeed_throughput",
        "DeepSpeed",
        ("step",),
        r"steps: (?P<step>\d+) loss: \S+ iter time \(s\): (?P<step_s>" + NUM + ")",
        "iter time (s):",
        _DS_TPUT,
    ),
    # ThroughputTimer.stop: since 0.8 `epoch=0/micro_step=4500/global_step=4500, RunningAvgSamplesPerSec=16.1,
    # CurrSamplesPerSec=16.8, ...`; before it `0/40, SamplesPerSec=83.5` (0.3-0.6) or `0/17,
    # RunningAvgSamplesPerSec=158.3, CurrSamplesPerSec=159.6` (0.7). A rate in samples: the step's time is the
    # config's train_batch_size over it (ThroughputTimer(batch_size=train_batch_size())), else the timestamps'.
    LineFormat(
        "deepspeed_tput_global_step",
        "DeepSpeed",
        ("step",),
        r"epoch=(?P<epoch>\d+)/micro_step=\d+/global_step=(?P<step>\d+), RunningAvgSamplesPerSec="
        + NUM
        + r", CurrSamplesPerSec=(?P<sample_rate>"
        + NUM
        + ")",
        "/global_step=",
        _DS_TPUT + " (stop: since v0.8.0)",
    ),
    LineFormat(
        "deepspeed_tput_local_step",
        "DeepSpeed",
        ("step",),
        r"\] (?P<epoch>\d+)/(?P<step>\d+), (?:RunningAvgSamplesPerSec=" + NUM + r", CurrSamplesPerSec=|SamplesPerSec=)"
        r"(?P<sample_rate>" + NUM + ")",
        "SamplesPerSec=",
        _DS_TPUT + " (stop: v0.3-v0.7)",
    ),
    LineFormat(
        "deepspeed_config_batch",
        "DeepSpeed",
        ("batch_size",),
        # DeepSpeedConfig.print (`train_batch_size ............. 32`); Megatron's argument dump prints its
        # `global_batch_size ...... 512` the same way (megatron/training/arguments.py _print_args)
        r"^(?:\S.*?\]\s+|\s*)(?:train|global)_batch_size\s\.+\s(?P<batch>\d+)\s*$",
        "_batch_size ",
        "https://github.com/microsoft/DeepSpeed/blob/master/deepspeed/runtime/config.py (DeepSpeedConfig.print)",
    ),
    LineFormat(
        "deepspeed_save_begin",
        "DeepSpeed",
        ("save_begin",),
        r"\[Torch\] Checkpoint (?:global_step(?P<step>\d+)|\S+) is about to be saved",
        "is about to be saved",
        _DS_ENGINE,
    ),
    LineFormat(
        "deepspeed_save_file", "DeepSpeed", ("save_progress",), r"\[Torch\] Sav(?:ing|ed) \S+", "[Torch] Sav", _DS_CKPT
    ),
    LineFormat(
        "deepspeed_load_file",
        "DeepSpeed",
        ("load_progress",),
        r"\[Torch\] Loading checkpoint from \S+",
        "[Torch] Loading",
        _DS_CKPT,
    ),
)
