"""The step budget of a run, per rank and step, and its difference between two runs.

The budget is a set of buckets per rank and step that add up to the step: the `budget` table when
the analysis has one (analyzers/budget/analyze.py: compute, communication by family, waiting, input
pipeline, host-bound, sync, checkpoint, idle), else the breakdown's partition of the step (compute,
waiting for peers, communication transfer, exposed copies, idle). Either way the comparison reads
them the same way: wide rows (rank, step, step_us, one column per bucket).

Why the mean step for the buckets: the mean of a sum is the sum of the means, so the buckets' mean
changes add up to the change of the mean step exactly (medians do not add up), and the mean is what sets
a job's throughput (the time of N steps is N mean steps). Whether the step changed at all is judged on
the typical step, which a few slow steps do not move (verdict.py); the median step is reported beside.

Noise: a run's step-to-step spread is 1.4826 x the median absolute deviation of its per-step times
(the step averaged over ranks; a robust standard deviation). A change is beyond noise when it
exceeds twice the larger of the two runs' spreads, and at least NOISE_FLOOR of A's mean step (a
single-step run has no spread of its own). Each bucket gets the same test with its own spread.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from scope.compare.verdict import StepVerdict, judge

if TYPE_CHECKING:
    from scope.result import Analysis

NOISE_FLOOR = 0.02  # of A's mean step
NOISE_SIGMAS = 2.0
MAD_TO_SIGMA = 1.4826
# The breakdown's columns that partition the step (scope/rankpass/timeline.py), with the words we print.
BREAKDOWN_BUCKETS: dict[str, str] = {
    "compute_us": "compute",
    "exposed_comm_wait_us": "waiting for peers",
    "exposed_comm_transfer_us": "communication (transfer)",
    "memcpy_us": "memory copies",
    "idle_us": "idle",
}
KEYS = ["rank", "step"]


@dataclass
class Budget:
    """One run's budget: per rank-step rows, the bucket columns and their printed names, the source."""

    rows: pd.DataFrame  # rank, step, step_us, bucket columns
    labels: dict[str, str]  # bucket column -> printed name
    source: str  # "budget" | "breakdown" | "steps"

    @property
    def buckets(self) -> list[str]:
        return list(self.labels)

    def per_step(self) -> pd.DataFrame:
        """Per step: the mean over ranks of the step and of each bucket."""
        cols = ["step_us", *self.buckets]
        return self.rows.groupby("step")[cols].mean() if not self.rows.empty else pd.DataFrame(columns=cols)

    def mean(self) -> pd.Series:
        return self.rows[["step_us", *self.buckets]].mean() if not self.rows.empty else pd.Series(dtype=float)

    def median_step_us(self) -> float:
        per_step = self.per_step()
        return float(per_step["step_us"].median()) if not per_step.empty else float("nan")

    def spread(self) -> pd.Series:
        """Robust standard deviation over steps of the step and of each bucket."""
        per_step = self.per_step()
        if len(per_step) < 2:
            return pd.Series(0.0, index=["step_us", *self.buckets])
        mad = (per_step - per_step.median()).abs().median()
        return MAD_TO_SIGMA * mad


def budget_of(analysis: Analysis) -> Budget:
    """The run's budget rows (see the module docstring); steps alone when nothing else is there."""
    table = analysis.table("budget")
    if table is not None and {"rank", "step", "step_us", "bucket", "us"} <= set(table.columns):
        budget = _from_budget_table(table)
        if budget is not None:
            return budget
    bd = analysis.table("breakdown")
    if bd is not None and {"rank", "step", "step_us"} <= set(bd.columns):
        labels = {c: n for c, n in BREAKDOWN_BUCKETS.items() if c in bd.columns}
        return Budget(_numeric(bd[[*KEYS, "step_us", *labels]]), labels, "breakdown")
    steps = analysis.steps
    if steps is not None and not steps.empty and {"rank", "step", "step_us"} <= set(steps.columns):
        return Budget(_numeric(steps[[*KEYS, "step_us"]]), {}, "steps")
    return Budget(pd.DataFrame(columns=[*KEYS, "step_us"]), {}, "none")


# Words for the budget's buckets (scope/rankpass/budget.py BUCKETS); an unknown bucket prints as its name.
BUCKET_WORDS: dict[str, str] = {
    "compute": "compute",
    "comm_overlapped": "communication under compute",
    "optimizer": "optimizer",
    "comm_wait": "waiting for peers",
    "comm_unknown": "communication (group partly traced)",
    "comm_transfer": "communication transfer",
    "input": "input pipeline",
    "checkpoint": "checkpoint",
    "memcpy": "memory copies",
    "sync": "host-device sync",
    "gc": "garbage collection",
    "host_bound": "host-bound (GPU waits for launches)",
    "unexplained": "unexplained",
}


# The host view of a GPU rank (analyzers/ops.py host_budget): what the training thread did.
HOST_WORDS: dict[str, str] = {
    "input": "input pipeline (DataLoader)",
    "checkpoint": "checkpoint",
    "sync": "waiting on the GPU (syncs)",
    "optimizer": "optimizer",
    "gc": "garbage collection",
    "launch": "kernel launches",
    "runtime": "other CUDA runtime calls (copies, allocations)",
    "cpu_ops": "CPU operators' own time",
    "unexplained": "untraced (Python between ops)",
}


def host_budget_of(analysis: Analysis) -> Budget | None:
    """The training thread's budget of a GPU run (None for CPU runs: their budget is the thread's)."""
    table = analysis.table("host_budget")
    if table is None or not {"rank", "step", "step_us", "bucket", "us"} <= set(table.columns):
        return None
    return _from_budget_table(table, HOST_WORDS)


def _from_budget_table(table: pd.DataFrame, words: dict[str, str] | None = None) -> Budget | None:
    """The budget's long rows (rank, step, bucket, family, us, step_us) as wide rows: one column per
    bucket, communication buckets split by family (nccl, gloo, ...), so each run's columns sum to its step."""
    if "bucket" not in table.columns or "us" not in table.columns:
        return None
    family = table["family"].fillna("").astype(str) if "family" in table.columns else ""
    column = table["bucket"].astype(str) + np.where(family != "", ":" + family, "")
    wide = table.assign(column=column).pivot_table(
        index=KEYS, columns="column", values="us", aggfunc="sum", fill_value=0.0
    )
    steps = table.groupby(KEYS)["step_us"].first()
    wide = wide.assign(step_us=steps).reset_index()
    labels = {c: _bucket_label(c, words or BUCKET_WORDS) for c in wide.columns if c not in (*KEYS, "step_us")}
    return Budget(_numeric(wide[[*KEYS, "step_us", *labels]]), labels, "budget")


def _bucket_label(column: str, words: dict[str, str]) -> str:
    bucket, _, family = column.partition(":")
    word = words.get(bucket, bucket.replace("_", " "))
    return f"{word} ({family})" if family else word


def _numeric(df: pd.DataFrame) -> pd.DataFrame:
    out = df.copy()
    for c in out.columns:
        out[c] = pd.to_numeric(out[c], errors="coerce")
    return out.dropna(subset=["step_us"]).fillna(0.0)


@dataclass
class BucketChange:
    bucket: str
    label: str
    a_us: float
    b_us: float
    noise_us: float

    @property
    def delta_us(self) -> float:
        return self.b_us - self.a_us

    @property
    def beyond_noise(self) -> bool:
        return abs(self.delta_us) > self.noise_us

    def to_dict(self) -> dict[str, Any]:
        return {
            "bucket": self.bucket,
            "label": self.label,
            "a_us": self.a_us,
            "b_us": self.b_us,
            "delta_us": self.delta_us,
            "noise_us": self.noise_us,
            "beyond_noise": self.beyond_noise,
        }


@dataclass
class BudgetDiff:
    """Mean step A -> B and the buckets' changes, largest first; they sum to the step's change."""

    a_mean_us: float
    b_mean_us: float
    a_median_us: float
    b_median_us: float
    noise_us: float
    a_spread_us: float
    b_spread_us: float
    changes: list[BucketChange] = field(default_factory=list)
    sources: tuple[str, str] = ("", "")
    verdict: StepVerdict | None = None  # whether the step changed (verdict.py)

    @property
    def delta_us(self) -> float:
        return self.b_mean_us - self.a_mean_us

    @property
    def median_delta_us(self) -> float:
        return self.b_median_us - self.a_median_us

    @property
    def beyond_noise(self) -> bool:
        """Whether the step changed: judged on the typical step (verdict.py), which a few slow steps do
        not move; the mean where there is no verdict."""
        if self.verdict is not None:
            return self.verdict.typical_beyond
        return abs(self.delta_us) > self.noise_us

    def to_dict(self) -> dict[str, Any]:
        return {
            "a_mean_step_us": self.a_mean_us,
            "b_mean_step_us": self.b_mean_us,
            "delta_mean_step_us": self.delta_us,
            "a_median_step_us": self.a_median_us,
            "b_median_step_us": self.b_median_us,
            "delta_median_step_us": self.median_delta_us,
            "noise_us": self.noise_us,
            "a_spread_us": self.a_spread_us,
            "b_spread_us": self.b_spread_us,
            "beyond_noise": self.beyond_noise,
            **(self.verdict.to_dict() if self.verdict is not None else {}),
            "sources": list(self.sources),
            "buckets": [c.to_dict() for c in self.changes],
        }


def noise(a_spread: float, b_spread: float, a_mean: float) -> float:
    return max(NOISE_SIGMAS * max(a_spread, b_spread), NOISE_FLOOR * a_mean)


def diff_budgets(a: Budget, b: Budget) -> BudgetDiff:
    """Bucket by bucket; a bucket only one run has counts as 0 in the other. When the two runs' budgets
    come from different sources, the buckets of both are kept (still each run's buckets sum to its step)."""
    am, bm = a.mean(), b.mean()
    a_mean = float(am.get("step_us", np.nan))
    b_mean = float(bm.get("step_us", np.nan))
    a_sp, b_sp = a.spread(), b.spread()
    labels = {**a.labels, **b.labels}
    changes = [
        BucketChange(
            col,
            label,
            float(am.get(col, 0.0)),
            float(bm.get(col, 0.0)),
            noise(float(a_sp.get(col, 0.0)), float(b_sp.get(col, 0.0)), a_mean),
        )
        for col, label in labels.items()
    ]
    changes.sort(key=lambda c: -abs(c.delta_us))
    a_step_sp, b_step_sp = float(a_sp.get("step_us", 0.0)), float(b_sp.get("step_us", 0.0))
    step_noise = noise(a_step_sp, b_step_sp, a_mean)
    verdict = judge(a.per_step()["step_us"], b.per_step()["step_us"], b_mean - a_mean, step_noise, changes)
    return BudgetDiff(
        a_mean_us=a_mean,
        b_mean_us=b_mean,
        a_median_us=a.median_step_us(),
        b_median_us=b.median_step_us(),
        noise_us=step_noise,
        a_spread_us=a_step_sp,
        b_spread_us=b_step_sp,
        changes=changes,
        sources=(a.source, b.source),
        verdict=verdict,
    )
