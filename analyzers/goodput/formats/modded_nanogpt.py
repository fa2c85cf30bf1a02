"""Line formats of modded-nanoGPT (Keller Jordan's speedrun train_gpt.py) and the trainers forked from it.

Its only clock is `train_time`, the run's cumulative training time in ms: the loop stops it ("stop the
clock") before each validation and restarts it after ("start the clock again"), and a checkpoint save runs
outside it too, so a validation line repeats the train_time of the step line before it and the next step adds
an ordinary step's time. It is no wall clock (rows.training_clock): each step's time is its growth, and the
wall is at least the training time, by how much the log does not say. Early versions reset it after the
first 10 (compile warm-up) steps (structural._per_step_times reads the drop)."""

from __future__ import annotations

from scope.analyzers.goodput.formats.rows import NUM, LineFormat

_TRAIN_GPT = "https://github.com/KellerJordan/modded-nanogpt/blob/master/train_gpt.py"
# the optimization track's scripts and logs print the clock in seconds (`train_time:5.418s step_avg:5418.26ms`)
_TRACK3 = "https://github.com/KellerJordan/modded-nanogpt/tree/master/records/track_3_optimization"
# a fork that prints its saves (the upstream script saves silently): AkramjitS/gpt-lab-diffusion's train.log
_FORK = "https://github.com/AkramjitS/gpt-lab-diffusion/blob/0dff6e1bc406ca0f8d347dfcfe7e89e3928a724a/train.log"

ROWS: tuple[LineFormat, ...] = (
    # `step:{step+1}/{train_steps} train_time:{approx_training_time_ms:.0f}ms step_avg:...ms` (2024 versions:
    # `train_loss:{loss:.4f}` before train_time; the track-3 scripts: `train_time:{approx_training_time:.3f}s`)
    LineFormat(
        "modded_nanogpt_step",
        "modded-nanoGPT",
        ("step",),
        r"\bstep:(?P<step>\d+)/(?P<total>\d+) (?:train_loss:(?:" + NUM + r"|nan|inf) )?"
        r"train_time:(?:(?P<step_ms>\d+(?:\.\d+)?)ms|(?P<step_s>\d+(?:\.\d+)?)s) "
        # (step_avg prints `nan` while its divisor is 0: the early versions' first 10 steps)
        r"step_avg:(?:" + NUM + "|nan|inf)ms",
        "train_time:",
        f"{_TRAIN_GPT} (print0 of the step line after each training step); {_TRACK3} (train_time in seconds)",
        training_clock=True,
    ),
    # `step:{step}/{train_steps} val_loss:{val_loss:.4f} train_time:...ms step_avg:...ms`: the validation
    # pass ran between the clock's stop and this line
    LineFormat(
        "modded_nanogpt_val",
        "modded-nanoGPT",
        ("eval_end",),
        r"\bstep:(?P<step>\d+)/(?P<total>\d+) val_loss:(?:" + NUM + r"|nan|inf) train_time:",
        " val_loss:",
        _TRAIN_GPT + " (print0 of the validation line, the clock stopped)",
    ),
    # the fork's `Saved checkpoint to {path}` after torch.save(..., state_step{step:06d}.pt) (the upstream
    # script's save, at the last step, prints nothing)
    LineFormat(
        "modded_nanogpt_save",
        "modded-nanoGPT",
        ("save_end",),
        r"^Saved checkpoint to \S*state_step(?P<step>\d+)\.pt\b",
        "Saved checkpoint to ",
        _FORK + f" (a fork's print after the save; upstream's path: {_TRAIN_GPT}, state_step{{step:06d}}.pt)",
    ),
)
