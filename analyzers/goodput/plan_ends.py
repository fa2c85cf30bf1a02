"""An end-of-training line is no proof that the run completed: a trainer that prints its closing summary on
every way out of its loop prints it after a Ctrl-C too. detectron2's TrainerBase.train calls after_train()
in a `finally:`, so the IterationTimer's `Overall training speed: 491 iterations` and `Total training time`
follow a KeyboardInterrupt as they follow MAX_ITER (an exception logs `Exception during training:` and its
traceback first: https://github.com/facebookresearch/detectron2/blob/main/detectron2/engine/train_loop.py,
TrainerBase.train; hooks.py, IterationTimer.after_train). Where the attempt's own lines state its planned
length in steps (a config dump's `MAX_ITER: 10000`, mmcv's `max: N iters`), the end line counts as the run's
end only when the last step shown reaches that plan. Where no plan line is left (a config dump cut out of
the log), the last progress line's own estimate of the time left says the same: detectron2's
CommonMetricPrinter prints `eta:` from the iterations left to MAX_ITER (utils/events.py, _get_eta), 0:00:00
at the last; a summary after `eta: 17:59:33` is a loop left 18 hours short of its end."""

from __future__ import annotations

import re

from scope.analyzers.goodput.mark import Mark

# A progress line's estimate of the run's time left: detectron2 `eta: 1:09:03`, mmcv/mmengine and
# PaddleDetection `eta: 1 day, 2:07:40` (str(datetime.timedelta)).
_ETA = re.compile(r"\beta:\s*(?:(?P<days>\d+) days?, )?(?P<h>\d+):(?P<m>\d{2}):(?P<s>\d{2})\b")
# More time left than this at the last progress line is no rounding of the estimate (a completed run's last
# line says 0:00:00; one log interval before the end says seconds): the planned end was not reached. Where the
# line states its own step time, the allowance is a few steps of it (a 1 s step with `eta: 0:00:27` left is 27
# iterations short of MAX_ITER), never more than this.
ETA_LEFT_MIN_S = 300.0
ETA_LEFT_MIN_STEPS = 2.0
ETA_ROUNDING_S = 2.0  # (the estimate is printed in whole seconds)


def eta_left_s(text: str) -> float | None:
    """The time left a progress line estimates (`eta: H:MM:SS`), in seconds, else None."""
    m = _ETA.search(text)
    if m is None:
        return None
    return int(m["days"] or 0) * 86400.0 + int(m["h"]) * 3600.0 + int(m["m"]) * 60.0 + int(m["s"])


# Only a loop's own summary, printed on the way out of a stopped loop as out of a finished one, is read against
# the eta: detectron2's hooks print `Total training time` in a finally: after an exception or a Ctrl-C too.
# A launcher's end (torchrun's `worker group successfully finished`), a tracker's (wandb), or a summary
# after another trainer's progress lines (mmengine stopped by its EarlyStoppingHook with `eta: 2:55:00` left
# finished healthy) says the run ended as it chose to.
ETA_SUMMARY_ROWS = frozenset({"training_time_total"})
# the progress line whose eta counts to MAX_ITER (CommonMetricPrinter's logger)
_D2_EVENTS = re.compile(r"\bd2\.utils\.events\b")


def eta_allowance_s(last: Mark) -> float:
    """The time left a completed run's last progress line may still estimate: a few of its own steps where it
    states their time (the estimate is steps left x step time), else ETA_LEFT_MIN_S."""
    if not last.step_s or last.step_s <= 0:
        return ETA_LEFT_MIN_S
    return min(ETA_LEFT_MIN_S, max(ETA_ROUNDING_S, ETA_LEFT_MIN_STEPS * last.step_s))


def short_of_eta(end: Mark, last: Mark | None) -> str:
    """Why the loop summary `end` (ETA_SUMMARY_ROWS) closed a detectron2 loop that its last events line `last`
    still estimated far from its end (no plan line to count against), else ''."""
    if last is None or end.row not in ETA_SUMMARY_ROWS or not _D2_EVENTS.search(last.text):
        return ""
    left = eta_left_s(last.text)
    if left is None or left < eta_allowance_s(last):
        return ""
    step = f" at step {last.step:,}" if last.step is not None else ""
    return (
        f"{end.where()}: the loop's summary{step} while its progress line still estimated {_left_text(left, last)} "
        f"left ({last.where()}): left before its planned end with no failure line: {end.text}"
    )


def _left_text(left: float, last: Mark) -> str:
    """`18.0 h`, or under ETA_LEFT_MIN_S the seconds and the steps they are (`27 s, 28 steps`)."""
    if left >= ETA_LEFT_MIN_S or not last.step_s:
        return f"{left / 3600:.1f} h"
    return f"{left:.0f} s, {left / last.step_s:.0f} steps"


# Plans in epochs whose loop has no way to end early but a stop (YOLOX's train_in_epoch: `for self.epoch in
# range(self.start_epoch, self.max_epoch)`, no early stopping): its epochs times the epoch's iterations is the
# run's length in steps
EPOCH_PLANS_IN_FULL = frozenset({"yolox_plan"})


def short_of_plan(end: Mark, plan: Mark | None, planned: int | None, last_step: int | None, interval: int) -> str:
    """Why the end line `end` closed a loop stopped before its planned last step, else '': the plan stated in
    steps by a plan line, and the last step shown more than one log interval short of it (a log every 20
    iterations shows 1,999 of 2,000 as its last)."""
    in_steps = plan is not None and (plan.total or plan.row in EPOCH_PLANS_IN_FULL)
    if plan is None or not in_steps or planned is None or last_step is None:
        return ""  # (a plan in epochs says nothing sure of the steps: early stopping ends a run before it)
    if last_step + interval >= planned:
        return ""
    return (
        f"{end.where()}: the loop's summary after step {last_step:,} of the {planned:,} planned ({plan.text.strip()}"
        f", {plan.where()}): left before its planned end with no failure line: {end.text}"
    )
