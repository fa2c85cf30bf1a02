"""Training-progress line formats, as data: one row per line a framework or launcher prints.

Each row names the program that prints the line (`source`: the file that formats it), what the line
means for the job's time (`kinds`, see MARK_KINDS) and a regex whose named groups carry the numbers:
`step`, `total`, `epoch`, `step_ms` / `step_s` (seconds per step from an elapsed-time field), `dur_s` /
`dur_ms` (what the line says an operation took), `elapsed` (a progress bar's relative clock h:mm:ss),
`bytes`, `ts` (a timestamp inside the message). `needle` is a literal every matching line contains: it
keeps the scan cheap (most rows never run their regex on most lines). Adding a framework is adding rows
and a test excerpt (tests/test_goodput_formats.py).

Wall-clock timestamps at a line's start are read by CLOCKS (below), separately from the rows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# What a line says about the job's time. The state a mark leaves the job in is in timeline.py.
MARK_KINDS = (
    "step",  # training progress: a step (iteration, update) number reached
    "step_time",  # seconds per step for the step mark just before (a postfix printed after it)
    "data_dur",  # seconds per step spent waiting for input data, for the step mark just before (a timer)
    "train_begin",  # initialization is over, the training loop starts
    "train_end",  # the training loop finished
    "init_begin",  # a process (or worker group) starts: an attempt's initialization begins
    "init_mark",  # still initializing (a setup phase reached)
    "init_dur",  # initialization took dur_s, ending at this line
    "save_begin",
    "save_progress",  # a file of a checkpoint written (a save in progress, or one beginning)
    "save_end",
    "save_dur",  # the last save took dur_ms / dur_s (a timer printed after it)
    "load_begin",
    "load_progress",
    "load_end",  # a checkpoint was loaded (its `step` is the step the attempt resumes from)
    "load_dur",
    "resume",  # the attempt continues from `step` (no load line of its own)
    "eval_begin",
    "eval_end",
    "interrupt",  # the user stopped the job (Ctrl-C, SIGINT): the attempt ends, not by a failure
    "failure",  # a process failed (the attempt ends here unless progress follows without a restart)
    "restart",  # the launcher or scheduler restarts the job (the gap until the next attempt begins)
    "world",  # the worker group's size: `world` ranks, `nodes` nodes (a change between attempts: membership)
    "job_end",
)


@dataclass(frozen=True)
class LineFormat:
    name: str
    framework: str
    kinds: tuple[str, ...]
    pattern: str
    needle: str
    source: str
    # The `elapsed` group is this bar's clock (only the training bar: evaluation bars restart theirs).
    clock: bool = False
    # The step time is the last step's own (nanoGPT), not the mean over the steps since the line before.
    last_step_time: bool = False
    # The `step` counts within an epoch of `total` steps whose `epoch` counts from this number (mmcv's
    # `Epoch [2][50/930]` from 1): the job's step is the epochs before it times `total`, plus `step`.
    epoch_from: int | None = None
    regex: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "regex", re.compile(self.pattern))
        unknown = set(self.kinds) - set(MARK_KINDS)
        if unknown:
            raise ValueError(f"{self.name}: unknown mark kinds {sorted(unknown)}")


_MEG = "https://github.com/NVIDIA/Megatron-LM/blob/main/megatron/training/training.py (training_log, pretrain)"
_MEG_CKPT = "https://github.com/NVIDIA/Megatron-LM/blob/main/megatron/training/checkpointing.py"
_MEG_TIMERS = "https://github.com/NVIDIA/Megatron-LM/blob/main/megatron/core/timers.py ((min, max) time across ranks)"
_DS_ENGINE = "https://github.com/microsoft/DeepSpeed/blob/master/deepspeed/runtime/engine.py"
_DS_CKPT = (
    "https://github.com/microsoft/DeepSpeed/blob/master/deepspeed/runtime/checkpoint_engine/torch_checkpoint_engine.py"
)
_DS_TPUT = "https://github.com/microsoft/DeepSpeed/blob/master/deepspeed/utils/timer.py (ThroughputTimer)"
_FS_TRAIN = "https://github.com/facebookresearch/fairseq/blob/main/fairseq_cli/train.py"
_FS_CKPT = "https://github.com/facebookresearch/fairseq/blob/main/fairseq/checkpoint_utils.py"
_FS_TRAINER = "https://github.com/facebookresearch/fairseq/blob/main/fairseq/trainer.py"
_FS_DIST = "https://github.com/facebookresearch/fairseq/blob/main/fairseq/distributed/utils.py"
_PL_BAR = "https://github.com/Lightning-AI/pytorch-lightning/blob/master/src/lightning/pytorch/callbacks/progress/tqdm_progress.py"
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
_HF = "https://github.com/huggingface/transformers/blob/main/src/transformers/trainer.py"
_HF_MODEL = "https://github.com/huggingface/transformers/blob/main/src/transformers/modeling_utils.py"
_TQDM = "https://github.com/tqdm/tqdm/blob/master/tqdm/std.py (format_meter: n/total [elapsed<remaining, rate])"
_ACC = "https://github.com/huggingface/accelerate/blob/main/src/accelerate/accelerator.py (save_state, load_state)"
_ACC_CKPT = "https://github.com/huggingface/accelerate/blob/main/src/accelerate/checkpointing.py"
_NANOGPT = "https://github.com/karpathy/nanoGPT/blob/master/train.py"
_TT_TRAIN = "https://github.com/pytorch/torchtitan/blob/main/torchtitan/train.py"
_TT_METRICS = "https://github.com/pytorch/torchtitan/blob/main/torchtitan/components/metrics.py (log)"
_TT_CKPT = "https://github.com/pytorch/torchtitan/blob/main/torchtitan/components/checkpoint.py"
_MMCV_TEXT = "https://github.com/open-mmlab/mmcv/blob/v1.7.0/mmcv/runner/hooks/logger/text.py (_log_info)"
_MMCV_CKPT = "https://github.com/open-mmlab/mmcv/blob/v1.7.0/mmcv/runner/hooks/checkpoint.py (after_train_epoch)"
_MMCV_BAR = "https://github.com/open-mmlab/mmcv/blob/v1.7.0/mmcv/utils/progressbar.py (ProgressBar.update)"
_OLMO_TRAIN = "https://github.com/allenai/OLMo/blob/main/olmo/train.py"
_OLMO_SCRIPT = "https://github.com/allenai/OLMo/blob/main/scripts/train.py"
_SCEPTER = "https://github.com/modelscope/scepter/blob/main/scepter/modules/solver/hooks/log.py"
_WORDPLAY = "https://github.com/saforem2/wordplay/blob/main/src/wordplay/trainer.py (train_step metrics)"
_ELASTIC = "https://github.com/pytorch/pytorch/blob/main/torch/distributed/elastic/agent/server/api.py"
_ELASTIC_RDZV = (
    "https://github.com/pytorch/pytorch/blob/main/torch/distributed/elastic/rendezvous/dynamic_rendezvous.py"
)
_ELASTIC_MP = "https://github.com/pytorch/pytorch/blob/main/torch/distributed/elastic/multiprocessing/api.py"
_SLURMSTEPD = "https://github.com/SchedMD/slurm/blob/master/src/slurmd/slurmstepd/req.c (*** JOB/STEP ... CANCELLED AT)"
_SRUN = "https://github.com/SchedMD/slurm/blob/master/src/srun/srun_job.c / step_launch.c (task exit lines)"
_K8S = "https://github.com/kubernetes/kubernetes/blob/master/pkg/kubelet/kuberuntime/kuberuntime_container.go (events)"
_PY = "https://github.com/python/cpython/blob/main/Python/traceback.c"
_C10D = "https://github.com/pytorch/pytorch/blob/main/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp (watchdog)"

_N = r"[\d.]+(?:[eE][+-]?\d+)?"

LINE_FORMATS: tuple[LineFormat, ...] = (
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
        + _N
        + r")|\(s\):\s*(?P<step_s>"
        + _N
        + "))",
        "per",
        _MEG,
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
        r"successfully saved checkpoint (?:from |at )?iteration\s+(?P<step>\d+)",
        "successfully saved checkpoint",
        _MEG_CKPT,
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
        r"save-checkpoint \.*:\s*\((?:" + _N + r"),\s*(?P<dur_ms>" + _N + r")\)",
        "save-checkpoint ",
        _MEG_TIMERS,
    ),
    LineFormat(
        "megatron_old_save_timer",
        "Megatron-LM",
        ("save_dur",),
        r"time \(ms\).*?\| save-checkpoint: (?P<dur_ms>" + _N + ")",
        "| save-checkpoint:",
        "https://github.com/NVIDIA/Megatron-LM/blob/v2.5/megatron/timers.py (Timers.log: time (ms) | name: value)",
    ),
    LineFormat(
        "megatron_data_timer",
        "Megatron-LM",
        ("data_dur",),
        # normalized by the log interval (timers.log(..., normalizer=log_interval)): per iteration
        r"batch-generator(?: \.*:\s*\((?:" + _N + r"),\s*|: )(?P<dur_ms>" + _N + ")",
        "batch-generator",
        _MEG_TIMERS + "; megatron/training/training.py (training_log: timers_to_log)",
    ),
    LineFormat(
        "megatron_load_timer",
        "Megatron-LM",
        ("load_dur",),
        r"load-checkpoint \.*:\s*\((?:" + _N + r"),\s*(?P<dur_ms>" + _N + r")\)",
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
    LineFormat(
        "deepspeed_step", "DeepSpeed", ("step",), r"\[Rank \d+\] step=(?P<step>\d+), skipped=\d+", "step=", _DS_ENGINE
    ),
    LineFormat(
        "deepspeed_throughput",
        "DeepSpeed",
        ("step",),
        r"steps: (?P<step>\d+) loss: \S+ iter time \(s\): (?P<step_s>" + _N + ")",
        "iter time (s):",
        _DS_TPUT,
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
    LineFormat(
        "fairseq_json_progress",
        "fairseq",
        ("step",),
        r"\| train(?:_inner)? \| \{.*?\"num_updates\": \"?(?P<step>\d+)",
        "num_updates",
        _FS_TRAIN + " (--log-format json)",
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
        + _N
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
    LineFormat("torchtitan_start", "torchtitan", ("init_begin",), r"Starting job: ", "Starting job: ", _TT_TRAIN),
    LineFormat(
        "fairseq_done",
        "fairseq",
        ("job_end",),
        r"done training in (?P<dur_s>[\d.]+) seconds",
        "done training in",
        _FS_TRAIN,
    ),
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
    ),
    LineFormat(
        "nemo_step_timing",
        "NeMo",
        ("step_time",),
        r"train_step_timing in s=(?P<step_s>" + _N + ")",
        "train_step_timing in s=",
        _NEMO_EXP,
    ),
    LineFormat(
        "lightning_val_bar",
        "Lightning",
        ("eval_begin",),
        r"(?:^|\r)\s*Validat(?:ion(?: DataLoader \d+)?|ing): *(?:\d+%|\|)",
        "Validat",
        _PL_BAR,
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
        "lightning_fit_end", "Lightning", ("train_end",), r"`Trainer\.fit` stopped:", "`Trainer.fit` stopped", _PL_FIT
    ),
    LineFormat(
        "nemo2_progress",
        "NeMo 2",
        ("step",),
        r"Training epoch (?P<epoch>\d+), iteration \d+/\d+ \|.*?global_step: (?P<step>\d+)"
        r"(?:.*?train_step_timing in s: (?P<step_s>" + _N + "))?",
        "Training epoch ",
        _NEMO2_PRINTER,
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
        r"Save duration: (?P<dur_s>" + _N + r")s",
        "Global Checkpoint Save",
        _NEMO2_CKPT,
    ),
    LineFormat(
        "nemo_save_begin",
        "NeMo",
        ("save_begin",),
        r"Using \('\w+', \d+\) dist-ckpt save strategy",
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
    # --- Hugging Face Trainer and accelerate ---------------------------------------------------------------
    LineFormat(
        "hf_train_bar",
        "HF Trainer",
        ("step",),
        r"(?:^|\r)\s*(?P<pct>\d+)%\|[^|\n]*\|\s*(?P<step>\d+)/(?P<total>\d+)\s*\[(?P<elapsed>(?:\d+:)?\d+:\d\d)",
        "%|",
        _TQDM,
        clock=True,
    ),
    # A tqdm bar a training loop draws with its own description ("Training", "train", "Epoch 3/10"): the
    # count is the step (offset by the epoch where the description numbers it and the bar restarts each
    # epoch), the rate after the clock (1.45it/s, 2.48s/it) a step's time. Lightning's "Epoch N:" bar and
    # the bare bar have rows of their own.
    LineFormat(
        "tqdm_train_bar",
        "tqdm (a training loop's own bar)",
        ("step",),
        r"(?:^|\r)\s*(?!Epoch \d+:)(?![^|\n\r]{0,70}?(?i:eval|valid|test|predict|infer|generat|sampl))"
        r"(?P<desc>[^|\n\r]{0,40}?(?i:\btrain(?:ing)?\b|\bepoch\b)"
        r"(?:\s*\[?(?P<epoch>\d+)(?P<of>/\d+)?\]?)?[^|\n\r%]{0,30}?)\s*\d+%\|[^|\n]*\|\s*(?P<step>\d+)/"
        r"(?P<total>\d+)\s*\[(?P<elapsed>(?:\d+:)?\d+:\d\d)<[^,\]\n]*,\s*"
        r"(?P<bar_rate>" + _N + r")(?P<bar_unit>it/s|s/it)",
        "%|",
        _TQDM,
        clock=True,
    ),
    LineFormat(
        "hf_train_begin", "HF Trainer", ("train_begin",), r"\*{5} Running training \*{5}", "***** Running training", _HF
    ),
    LineFormat(
        "hf_eval_begin",
        "HF Trainer",
        ("eval_begin",),
        r"\*{5} Running (?:Evaluation|Prediction) \*{5}",  # (evaluation_loop's description: predict() too)
        "***** Running ",
        _HF,
    ),
    LineFormat("hf_eval_end", "HF Trainer", ("eval_end",), r"\{'eval_loss': ", "{'eval_loss'", _HF),
    LineFormat(
        "hf_save_begin",
        "HF Trainer",
        ("save_begin",),
        r"Saving model checkpoint to \S+",
        "Saving model checkpoint to",
        _HF,
    ),
    LineFormat(
        "hf_save_file",
        "HF Trainer",
        ("save_progress",),
        r"(?:Model weights saved in|Configuration saved in|tokenizer config file saved in"
        r"|Special tokens file saved in) \S+",
        " saved in ",
        _HF_MODEL,
    ),
    LineFormat("hf_load_begin", "HF Trainer", ("load_begin",), r"Loading model from \S+", "Loading model from", _HF),
    LineFormat(
        "hf_resume",
        "HF Trainer",
        ("resume",),
        r"Continuing training from global step (?P<step>\d+)",
        "Continuing training from global step",
        _HF,
    ),
    LineFormat(
        "hf_train_end", "HF Trainer", ("train_end",), r"Training completed\. Do not forget", "Training completed.", _HF
    ),
    # The console callback prints the logs dict each `logging_steps`: a step counter only in some versions
    # ('step': N, or its value quoted); the step is then worked out from the epoch (hf_trainer.py).
    LineFormat(
        "hf_log_line",
        "HF Trainer",
        ("step",),
        r"(?:^|(?<=\]))\s*\{'loss': '?" + _N + r"'?,.*?'epoch': '?(?P<epoch_f>" + _N + r")'?"
        r"(?:, 'step': '?(?P<step>\d+)'?)?\s*\}",
        "{'loss'",
        _HF + " (_maybe_log_save_evaluate -> log; trainer_callback.py PrinterCallback / ProgressCallback.on_log)",
    ),
    # train()'s speed metrics: the training loop's own runtime and rate, printed once at its end
    LineFormat(
        "hf_train_summary",
        "HF Trainer",
        ("train_end",),
        r"(?:^|(?<=\]))\s*\{'train_runtime': '?(?P<dur_s>" + _N + r")'?"
        r"(?:.*?'train_steps_per_second': '?(?P<rate>" + _N + r")'?)?"
        r".*?'epoch': '?(?P<epoch_f>" + _N + r")'?(?:, 'step': '?(?P<step>\d+)'?)?",
        "{'train_runtime'",
        _HF + " (train: speed_metrics('train', start_time, num_samples, num_steps))",
    ),
    LineFormat(
        "hf_train_output",
        "HF Trainer",
        ("train_end",),
        r"TrainOutput\(global_step=(?P<step>\d+)",
        "TrainOutput(global_step=",
        "https://github.com/huggingface/transformers/blob/main/src/transformers/trainer_utils.py (TrainOutput)",
    ),
    LineFormat(
        "accelerate_save_begin",
        "accelerate",
        ("save_begin",),
        r"Saving current state to \S+",
        "Saving current state to",
        _ACC,
    ),
    LineFormat(
        "accelerate_save_file",
        "accelerate",
        ("save_progress",),
        r"(?:Model weights|Optimizer state|Scheduler state|Random states) saved in \S+",
        " saved in ",
        _ACC_CKPT,
    ),
    LineFormat(
        "accelerate_load_begin", "accelerate", ("load_begin",), r"Loading states from \S+", "Loading states from", _ACC
    ),
    LineFormat(
        "accelerate_load_end",
        "accelerate",
        ("load_end",),
        r"All (?:model weights|random states) loaded successfully",
        "loaded successfully",
        _ACC_CKPT,
    ),
    # --- torchtitan --------------------------------------------------------------------------------------
    LineFormat(
        "torchtitan_step",
        "torchtitan",
        ("step",),
        r"step:\s*(?P<step>\d+)(?:/\d+ = [\d.]+%)?\s+loss:\s*" + _N,
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
        + _N
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
        r"Finished loading the checkpoint in (?P<dur_s>" + _N + r") seconds",
        "Finished loading the checkpoint",
        _TT_CKPT,
    ),
    LineFormat("torchtitan_done", "torchtitan", ("train_end",), r"Training completed", "Training completed", _TT_TRAIN),
    # --- nanoGPT (and the many training scripts copied from its train.py) ---------------------------------
    # `time` is the last iteration's own time (t1 - t0 around one step), printed every log_interval steps;
    # an evaluation and its save run inside the timed iteration that follows them.
    LineFormat(
        "nanogpt_iter",
        "nanoGPT",
        ("step",),
        r"\biter (?P<step>\d+): loss (?:" + _N + r"|nan|inf), time (?P<step_ms>" + _N + r")ms",
        "iter ",
        _NANOGPT + " (print of iter_num, lossf, dt*1000, running_mfu)",
        last_step_time=True,
    ),
    LineFormat(
        "nanogpt_eval",
        "nanoGPT",
        ("eval_end",),
        r"\bstep (?P<step>\d+): train loss (?:" + _N + r"|nan), val loss",
        ": train loss",
        _NANOGPT + " (estimate_loss every eval_interval)",
    ),
    LineFormat(
        "nanogpt_save", "nanoGPT", ("save_begin",), r"^saving checkpoint to \S+", "saving checkpoint to", _NANOGPT
    ),
    # --- OpenMMLab: mmcv's EpochBasedRunner / IterBasedRunner and MMEngine (mmdet, mmseg, mmocr, ...) ------------
    # The text logger prints every `interval` iterations; `time` is the mean seconds per iteration over them.
    LineFormat(
        "mmcv_epoch_iter",
        "mmcv / MMEngine",
        ("step",),
        r"\bEpoch(?:\(train\))?\s*\[(?P<epoch>\d+)\]\s*\[\s*(?P<step>\d+)/(?P<total>\d+)\]"
        r".*?\btime: (?P<step_s>" + _N + r")",
        "Epoch",
        _MMCV_TEXT,
        epoch_from=1,
    ),
    LineFormat(
        "mmcv_iter",
        "mmcv / MMEngine",
        ("step",),
        r"\bIter(?:\(train\))?\s*\[\s*(?P<step>\d+)/(?P<total>\d+)\].*?\btime: (?P<step_s>" + _N + r")",
        "Iter",
        _MMCV_TEXT,
    ),
    LineFormat(
        "mmcv_save_begin",
        "mmcv / MMEngine",
        ("save_begin",),
        r"Saving checkpoint at (?:(?P<epoch>\d+) epochs|(?P<step>\d+) iterations)",
        "Saving checkpoint at",
        _MMCV_CKPT,
    ),
    # mmcv's ProgressBar over the validation set (single_gpu_test / multi_gpu_test): the line is drawn at the
    # first image, redrawn with \r; what lands in a file is its last state, `elapsed` after the start
    LineFormat(
        "mmcv_eval_bar",
        "mmcv",
        ("eval_begin",),
        r"\[[>\s]*\] \d+/\d+, " + _N + r" task/s, elapsed: (?P<dur_s>\d+)s",
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
        r"Stage \[train\] iter: \[(?P<step>\d+)/(?P<total>\d+)\],(?: data_time: " + _N + r"\(" + _N + r"\),)?"
        r" time: (?P<step_s>" + _N + r")\(",
        "Stage [train] iter:",
        _SCEPTER + " (_print_iter_log: the batch time, then its mean in brackets)",
    ),
    # --- saforem2's wordplay (nanoGPT on ezpz): `dt` is the last step's milliseconds -------------------------
    LineFormat(
        "wordplay_step",
        "wordplay",
        ("step",),
        r"\bstep=(?P<step>\d+) loss=(?:" + _N + r"|nan) dt=(?P<step_ms>" + _N + r")\b",
        " dt=",
        _WORDPLAY,
        last_step_time=True,
    ),
    # --- launchers and schedulers ----------------------------------------------------------------------------
    LineFormat(
        "torchrun_restart",
        "torchrun",
        ("restart",),
        r"Worker group (?:FAILED|UNHEALTHY)\. (?P<left>\d+)/(?P<max>\d+) attempts left",
        "attempts left",
        _ELASTIC,
    ),
    LineFormat(
        "torchrun_rendezvous",
        "torchrun",
        ("init_begin",),
        r"Rendezvous'ing worker group",
        "Rendezvous'ing worker group",
        _ELASTIC,
    ),
    # Elastic membership: a node joining restarts the worker group without a failure (not counted against
    # --max-restarts); the rendezvous that follows says the group's new size.
    LineFormat(
        "torchrun_new_nodes",
        "torchrun",
        ("restart",),
        r"Detected (?P<joined>\d+) new nodes from group_rank=\d+; will restart worker group",
        "new nodes from group_rank",
        _ELASTIC,
    ),
    LineFormat(
        "torchrun_world_sizes",
        "torchrun",
        ("world",),
        r"(?<!\w)global_world_sizes=\[(?P<world>\d+)",
        "global_world_sizes=[",
        _ELASTIC + " (_rendezvous: Rendezvous complete for workers)",
    ),
    LineFormat(
        "torchrun_group_world_size",
        "torchrun",
        ("world",),
        r"(?<!\w)group_world_size=(?P<nodes>\d+)",
        "group_world_size=",
        _ELASTIC + " (_rendezvous: Rendezvous complete for workers)",
    ),
    LineFormat(
        "torchrun_rdzv_joined",
        "torchrun",
        ("world",),
        r"has joined round \d+ of the rendezvous '[^']*' as rank \d+ in a world of size (?P<nodes>\d+)",
        "in a world of size",
        _ELASTIC_RDZV,
    ),
    LineFormat(
        "torchrun_child_failed",
        "torchrun",
        ("failure",),
        r"failed \(exitcode: (?P<code>-?\d+)\) local_rank: (?P<rank>\d+)",
        "failed (exitcode:",
        _ELASTIC_MP,
    ),
    # W&B's footer as the process exits: `(success).` only for exit code 0 (else `(failed N)`)
    LineFormat(
        "wandb_finish_success",
        "Weights & Biases",
        ("job_end",),
        r"^wandb: Waiting for W&B process to finish\.\.\. \(success\)",
        "Waiting for W&B process",
        "https://github.com/wandb/wandb/blob/main/wandb/sdk/wandb_run.py (_footer_exit_status_info)",
    ),
    LineFormat(
        "torchrun_done",
        "torchrun",
        ("job_end",),
        r"worker group successfully finished",
        "successfully finished",
        _ELASTIC,
    ),
    LineFormat(
        "slurm_cancelled",
        "SLURM",
        ("failure",),
        r"\*\*\* (?:JOB|STEP) (?P<job>[\d.]+) ON (?P<node>\S+) CANCELLED AT (?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)"
        r"(?: DUE TO (?P<why>[A-Z ]+?))?(?:, REQUEUED)? \*\*\*",
        "CANCELLED AT",
        _SLURMSTEPD,
    ),
    LineFormat(
        "srun_task_exit",
        "SLURM",
        ("failure",),
        r"srun: error: (?P<node>\S+): tasks? (?P<rank>[\d,\-]+): (?:Exited with exit code \d+|Killed|\w+ fault)",
        "srun: error:",
        _SRUN,
    ),
    LineFormat(
        "slurm_requeue",
        "SLURM",
        ("restart",),
        r"SLURM_RESTART_COUNT[=: ]+(?P<attempt>[1-9]\d*)",
        "SLURM_RESTART_COUNT",
        _SLURMSTEPD,
    ),
    LineFormat(
        "lightning_slurm_requeue",
        "Lightning",
        ("restart",),
        r"(?:Requeued SLURM job|requeing job):? (?P<job>\d+)",
        " job",
        "https://github.com/Lightning-AI/pytorch-lightning/blob/master/src/lightning/pytorch/trainer/connectors/"
        "signal_connector.py (auto-requeue)",
    ),
    LineFormat(
        "lightning_sigterm",
        "Lightning",
        ("failure",),
        r"\[rank: \d+\] Received SIGTERM: \d+",
        "Received SIGTERM",
        "https://github.com/Lightning-AI/pytorch-lightning/blob/master/src/lightning/pytorch/trainer/connectors/"
        "signal_connector.py (_sigterm_notifier_fn)",
    ),
    LineFormat(
        "k8s_backoff", "Kubernetes", ("restart",), r"Back-off restarting failed container", "Back-off restarting", _K8S
    ),
    LineFormat("k8s_oomkilled", "Kubernetes", ("failure",), r"Reason:\s+(?:OOMKilled|Error)\b", "Reason:", _K8S),
    LineFormat(
        "python_keyboard_interrupt",
        "Python",
        ("interrupt",),
        r"^\s*(?:\[rank\d+\]:\s*)?KeyboardInterrupt\s*$",
        "KeyboardInterrupt",
        _PY + " (the exception line of a traceback Ctrl-C ended)",
    ),
    LineFormat(
        "torchrun_sigint",
        "torchrun",
        ("interrupt",),
        r"Received (?:Signals\.SIGINT|2) death signal|SignalException: Process \d+ got signal: 2\b"
        r"|Sending process \d+ closing signal SIGINT",
        " signal",
        _ELASTIC + "; torch/distributed/elastic/multiprocessing/api.py (_terminate_process_handler)",
    ),
    # the agent's own SIGTERM (a scheduler's cancel or preemption, a `kill`): the workers are stopped from outside
    LineFormat(
        "torchrun_sigterm",
        "torchrun",
        ("failure",),
        r"Received (?:Signals\.SIGTERM|15) death signal",
        " death signal",
        _ELASTIC + " (_terminate_process_handler: SignalException; the agent then sends SIGTERM to its workers)",
    ),
    LineFormat(
        "lightning_keyboard_interrupt",
        "Lightning",
        ("interrupt",),
        r"Detected KeyboardInterrupt, attempting graceful shutdown",
        "Detected KeyboardInterrupt",
        "https://github.com/Lightning-AI/pytorch-lightning/blob/master/src/lightning/pytorch/trainer/call.py",
    ),
    LineFormat(
        "python_traceback",
        "Python",
        ("failure",),
        r"^\s*(?:\[rank\d+\]:\s*)?Traceback \(most recent call last\)",
        "Traceback (most",
        _PY,
    ),
    LineFormat(
        "c10d_watchdog_timeout",
        "PyTorch c10d",
        ("failure",),
        r"Watchdog caught collective operation timeout",
        "Watchdog caught",
        _C10D,
    ),
)

# A timestamp in a line: the first one found is the line's time. Each row: name, regex, how to read it.
# The ISO-like row covers Python logging (`2023-06-13 17:29:37,123`), DeepSpeed / torchtitan (`[... ,mmm]`),
# NeMo (`[NeMo I 2024-08-01 05:47:24 ...]`), Megatron (`datetime: ...`, `[2024-03-05 10:00:00] iteration`),
# and ISO 8601 with T and a zone (SLURM, kubectl, scope's own hook).
CLOCKS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "iso",
        re.compile(
            r"(?P<y>\d{4})-(?P<mo>\d\d)-(?P<d>\d\d)[T ](?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)(?:[.,](?P<frac>\d{1,9}))?"
            r"(?P<tz>Z|[+-]\d\d:?\d\d)?"
        ),
    ),
    # MMEngine / mmcv loggers: datefmt "%Y/%m/%d %H:%M:%S" (mmengine/logging/logger.py)
    (
        "ymd_slash",
        re.compile(
            r"(?P<y>\d{4})/(?P<mo>\d\d)/(?P<d>\d\d) (?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)(?:[.,](?P<frac>\d{1,9}))?"
        ),
    ),
    # transformers' example scripts: logging datefmt "%m/%d/%Y %H:%M:%S"
    ("us_date", re.compile(r"(?P<mo>\d\d)/(?P<d>\d\d)/(?P<y>\d{4}) (?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)")),
    # rich's logging handler (colossalai, many training scripts): log_time_format "[%x %X]", %x in the C / en_US
    # locale a two-digit year; rich leaves the time out of a line logged in the same second (the line's
    # time is then the one before's). At the line's start only: a bare dd/dd/dd elsewhere is no clock.
    (
        "rich",
        re.compile(r"^\[(?P<mo>\d\d)/(?P<d>\d\d)/(?P<yy>\d\d) (?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)\]"),
    ),
    # glog (torch.distributed.elastic since 2.3: `W0301 10:06:00.123456 1234 file.py:12]`; c10's C++ lines:
    # `[rank1]:[E1201 12:31:50.123456789 ProcessGroupNCCL.cpp:616]`):
    # no year, taken from the log's other timestamps (else 1970: the times still order and subtract).
    (
        "glog",
        re.compile(
            r"^(?:\[rank\d+\]:)?\[?[IWEF](?P<mo>\d\d)(?P<d>\d\d) (?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)"
            r"(?:\.(?P<frac>\d{1,9}))?(?= +\d+ | +[\w./-]+:\d+\])"
        ),
    ),
    # MMEngine's first logger format (datefmt "%m/%d %H:%M:%S", 2022): no year, at the line's start
    ("md_slash", re.compile(r"^(?P<mo>\d\d)/(?P<d>\d\d) (?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)(?= )")),
)

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


LAST_STEP_TIME_ROWS = frozenset(f.name for f in LINE_FORMATS if f.last_step_time)
# Progress bars (their redraws show a counter's position, not a step's own record)
BAR_ROWS = frozenset(f.name for f in LINE_FORMATS if f.clock)


def by_name() -> dict[str, LineFormat]:
    return {f.name: f for f in LINE_FORMATS}
