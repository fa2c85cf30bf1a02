"""Did the step change? Judged on the typical step, said with what the mean and the causes show.

The budget's buckets explain the mean step (their changes add up to it exactly: budget.py), but a mean of
the few steps a profiler window holds moves with one or two slow steps (a warm-up step, a checkpoint):
on the real dataloader pair two slow edge steps in B pulled its mean up while every other step was ~50 ms
faster. So whether the step changed is judged on the typical change: the Hodges-Lehmann shift, the median
of every B step minus every A step (per step, averaged over ranks). It ignores a few slow steps in either
run as the median does, and does not jump between the modes of a bimodal step as a difference of medians
does (two healthy gloo runs: mean -3.6%, medians -17.5%). The test is the same noise as the buckets'.

The verdict is one sentence tied to what the report lists: when the typical and the mean change disagree
it says so and names the slow steps; when the step is within noise but a cause moved beyond its own
noise it says that, never "no real change" beside a cause marked beyond noise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

    from scope.compare.budget import BucketChange

# Steps per run used for the pairwise shift (evenly spaced beyond this: 1,000 x 1,000 differences).
MAX_STEPS = 1000
# A step this many noises above its run's median step is a "slow step" the verdict names.
SLOW_STEP_NOISES = 1.0


@dataclass
class StepVerdict:
    typical_delta_us: float  # median of (B step - A step) over every pair of steps
    typical_beyond: bool
    mean_beyond: bool
    slow_steps: dict[str, list[int]] = field(default_factory=dict)  # "A"/"B" -> steps far above the typical
    text: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "delta_typical_step_us": self.typical_delta_us,
            "typical_beyond_noise": self.typical_beyond,
            "mean_beyond_noise": self.mean_beyond,
            "slow_steps": self.slow_steps,
            "verdict": self.text,
        }


def typical_shift(a: pd.Series, b: pd.Series) -> float:
    """Hodges-Lehmann shift: the median of b_j - a_i over every pair (NaN when either run has no step)."""
    x, y = _spaced(a.to_numpy(dtype=float)), _spaced(b.to_numpy(dtype=float))
    if not x.size or not y.size:
        return float("nan")
    return float(np.median(np.subtract.outer(y, x)))


def _spaced(values: np.ndarray) -> np.ndarray:
    values = values[np.isfinite(values)]
    if values.size <= MAX_STEPS:
        return values
    return np.sort(values)[np.linspace(0, values.size - 1, MAX_STEPS).astype(int)]


def slow_steps(per_step: pd.Series, noise_us: float) -> list[int]:
    """The steps more than SLOW_STEP_NOISES noises above the run's median step."""
    if per_step.empty or not noise_us:
        return []
    limit = float(per_step.median()) + SLOW_STEP_NOISES * noise_us
    return [int(s) for s in per_step.index[per_step.to_numpy() > limit]]


def judge(
    a_steps: pd.Series, b_steps: pd.Series, mean_delta_us: float, noise_us: float, changes: list[BucketChange]
) -> StepVerdict:
    """The verdict from each run's per-step times (index: step), the mean change, the noise and the buckets."""
    shift = typical_shift(a_steps, b_steps)
    typical = bool(np.isfinite(shift) and abs(shift) > noise_us)
    mean = bool(np.isfinite(mean_delta_us) and abs(mean_delta_us) > noise_us)
    slow = {label: s for label, s in (("A", slow_steps(a_steps, noise_us)), ("B", slow_steps(b_steps, noise_us))) if s}
    verdict = StepVerdict(shift, typical, mean, slow)
    verdict.text = _sentence(verdict, mean_delta_us, noise_us, changes)
    return verdict


def _ms(us: float) -> str:
    return f"{us / 1e3:+,.1f} ms"


def _sentence(v: StepVerdict, mean_delta_us: float, noise_us: float, changes: list[BucketChange]) -> str:
    if not np.isfinite(v.typical_delta_us):
        return "no step time in one of the runs: nothing to judge"
    way = "slower" if v.typical_delta_us > 0 else "faster"
    slow = "; ".join(f"slow steps in {run}: {', '.join(map(str, steps))}" for run, steps in v.slow_steps.items())
    if v.typical_beyond:
        text = f"B's typical step is {abs(v.typical_delta_us) / 1e3:,.1f} ms {way} than A's, beyond noise"
        if not v.mean_beyond or (mean_delta_us > 0) != (v.typical_delta_us > 0):
            text += (
                f"; the mean step moved {_ms(mean_delta_us)}, within noise or the other way: mean and median "
                f"disagree because a few steps are far from the rest ({slow or 'spread'})"
            )
        elif slow:
            text += f" (mean {_ms(mean_delta_us)}; {slow})"
        return text
    if v.mean_beyond:
        return (
            f"the mean step moved {_ms(mean_delta_us)} but the typical step only {_ms(v.typical_delta_us)}, "
            f"within noise: mean and median disagree; a few steps make the difference ({slow or 'spread'}), "
            "not a change of every step"
        )
    moved = [c for c in changes if c.beyond_noise]
    if moved:
        causes = ", ".join(f"{c.label} {_ms(c.delta_us)}" for c in moved[:3])
        return (
            f"the step is within noise ({_ms(v.typical_delta_us)} typical), but {causes} moved beyond "
            "their own noise: the time shifted between causes"
        )
    return "within noise: no real change"
