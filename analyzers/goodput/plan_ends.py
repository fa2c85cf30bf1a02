"""An end-of-training line is no proof that the run completed: a trainer that prints its closing summary on
every way out of its loop prints it after a Ctrl-C too. detectron2's TrainerBase.train calls after_train()
in a `finally:`, so the IterationTimer's `Overall training speed: 491 iterations` and `Total training time`
follow a KeyboardInterrupt as they follow MAX_ITER (an exception logs `Exception during training:` and its
traceback first: https://github.com/facebookresearch/detectron2/blob/main/detectron2/engine/train_loop.py,
TrainerBase.train; hooks.py, IterationTimer.after_train). Where the attempt's own lines state its planned
length in steps (a config dump's `MAX_ITER: 10000`, mmcv's `max: N iters`), the end line counts as the run's
end only when the last step shown reaches that plan."""

from __future__ import annotations

from scope.analyzers.goodput.mark import Mark


def short_of_plan(end: Mark, plan: Mark | None, planned: int | None, last_step: int | None, interval: int) -> str:
    """Why the end line `end` closed a loop stopped before its planned last step, else '': the plan stated in
    steps by a plan line, and the last step shown more than one log interval short of it (a log every 20
    iterations shows 1,999 of 2,000 as its last)."""
    if plan is None or not plan.total or planned is None or last_step is None:
        return ""  # (a plan in epochs says nothing sure of the steps: early stopping ends a run before it)
    if last_step + interval >= planned:
        return ""
    return (
        f"{end.where()}: the loop's summary after step {last_step:,} of the {planned:,} planned ({plan.text.strip()}"
        f", {plan.where()}): left before its planned end with no failure line: {end.text}"
    )
