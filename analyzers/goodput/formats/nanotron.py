"""Line formats of Hugging Face nanotron's trainer (src/nanotron/trainer.py): its iteration line with
human-formatted numbers (`elapsed_time_per_iteration_ms: 4.71K` is 4.71 s), its `[Start training]` line, and
its checkpoint save (logged at WARNING level). Lines are `%m/%d/%Y %H:%M:%S [LEVEL|DP=0|PP=0|TP=0]: ...`
(2024; `%m/%d %H:%M:%S` with ANSI colours since 2025), read by formats.CLOCKS.

Not marks: `[Training Stage: NAME] Clearing the previous training stage's dataloader and datasets from memory`
(a data-stage switch: its dataloader rebuild runs inside the next iteration's timer, so it stays in that
step's time) and `Resuming training from stage NAME, it has trained for N samples ...` (printed at every
start for the stage the run is in, a fresh one too: only `[Start training]`'s start_iteration_step says where
training goes on from)."""

from __future__ import annotations

from scope.analyzers.goodput.formats.rows import HUMAN_NUM, LineFormat

_TRAINER = "https://github.com/huggingface/nanotron/blob/main/src/nanotron/trainer.py"
_LOGGING = "https://github.com/huggingface/nanotron/blob/main/src/nanotron/logging/base.py"

ROWS: tuple[LineFormat, ...] = (
    # LoggerWriter.add_scalars_from_list: `iteration: {step} / {train_steps} | ` then each LogItem `tag: value`
    # joined by ` | `, numbers through human_format; the iteration timer starts at each iteration
    # (train_step_logs: `elapsed_time_per_iteration_ms`, since 2025 `time_per_iteration_ms`), printed every
    # iteration_step_info_interval iterations: the last iteration's own time
    LineFormat(
        "nanotron_iteration",
        "nanotron",
        ("step",),
        r"\biteration: (?P<step>\d+) / (?P<total>\d+) \|.*?\b(?:elapsed_)?time_per_iteration_ms: "
        r"(?P<step_ms>" + HUMAN_NUM + r")(?![\w.])",
        "iteration: ",
        f"{_TRAINER} (train_step_logs); {_LOGGING} (LoggerWriter.add_scalars_from_list, human_format)",
        last_step_time=True,
    ),
    # the training's start: `[Start training] datetime: ... | mbs: M | grad_accum: G | ... | start_iteration_step: N
    # | consumed_train_samples: S` (to March 2025; d4fdd466 left the datetime out), since 0967c5d0 a separator-
    # framed `Start training` line, then `mbs: M | grad_accum: G | cp: C | ... | start_iteration_step: N |
    # consumed_tokens_total: T` on its own: the loop starts after step N (0: a fresh run)
    LineFormat(
        "nanotron_start_training",
        "nanotron",
        ("train_begin",),
        r"\bmbs: \d+ \| grad_accum: \d+ \|.*? start_iteration_step: (?P<step>\d+)\b",
        "start_iteration_step: ",
        _TRAINER + " (train: log_rank of the training's start)",
    ),
    # save_checkpoint: `Saving checkpoint at {checkpoints_path}/{iteration_step}` (WARNING, rank 0), before the
    # model, optimizer and scheduler are written (`Saving weights: 100%|...` bar)
    LineFormat(
        "nanotron_save",
        "nanotron",
        ("save_begin",),
        # (a path's last part, ending the line: mmcv's `Saving checkpoint at 1 epochs` is no such line)
        r"\bSaving checkpoint at \S*/(?P<step>\d+)/?\s*$",
        "Saving checkpoint at ",
        _TRAINER + " (save_checkpoint)",
    ),
)
