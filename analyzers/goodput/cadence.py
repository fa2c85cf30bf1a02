"""Checkpoint cadence: the interval that loses the least time, beside the one the job used.

Young (1974) and Daly (2006): with a blocking checkpoint cost C and a mean time between failures M, the
interval tau = sqrt(2 C M) minimises the expected time lost per unit of time,

    waste(tau) = C / tau  +  tau / (2 M)

(the checkpoint overhead, plus half an interval of work redone per failure on average: Meta's ETTR model,
arXiv 2410.21680, makes the same half-interval assumption). Daly's higher-order form is given beside it.
Assumptions, stated in the report: failures independent and memoryless (exponential) at the observed rate;
C the median blocking save; restart cost independent of the interval (so it cancels in the comparison).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

HOURS_PER_WEEK = 168.0
# Fewer failures than this make the MTBF a rough guess (the report says so); none makes it unknown.
FEW_FAILURES = 3

ASSUMPTIONS = (
    "failures are independent and arrive at a constant rate (the observed one)",
    "each failure redoes half a checkpoint interval on average",
    "the checkpoint cost is the median blocking save seen",
    "the restart cost does not depend on the interval, so it is left out of the comparison",
)


@dataclass
class Cadence:
    checkpoint_cost_s: float | None
    mtbf_s: float | None
    failures: int
    interval_used_s: float | None
    interval_used_steps: float | None
    young_s: float | None = None
    daly_s: float | None = None
    waste_used: float | None = None  # fraction of time lost to saves + expected rollback at the used interval
    waste_best: float | None = None
    hours_per_week_saved: float | None = None
    note: str = ""
    assumptions: list[str] = field(default_factory=lambda: list(ASSUMPTIONS))

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def young_interval(cost_s: float, mtbf_s: float) -> float:
    return math.sqrt(2.0 * cost_s * mtbf_s)


def daly_interval(cost_s: float, mtbf_s: float) -> float:
    """Daly's higher-order estimate (valid for C < 2M; else the interval is M)."""
    if cost_s >= 2.0 * mtbf_s:
        return mtbf_s
    r = cost_s / (2.0 * mtbf_s)
    return math.sqrt(2.0 * cost_s * mtbf_s) * (1.0 + math.sqrt(r) / 3.0 + r / 9.0) - cost_s


def waste(interval_s: float, cost_s: float, mtbf_s: float) -> float:
    return cost_s / interval_s + interval_s / (2.0 * mtbf_s)


def cadence(
    cost_s: float | None,
    wall_s: float,
    failures: int,
    interval_used_s: float | None,
    interval_used_steps: float | None = None,
    mtbf_s: float | None = None,
) -> Cadence:
    """The recommendation; `mtbf_s` given (e.g. the fleet's figure) overrides the observed wall / failures."""
    if mtbf_s is not None and not (math.isfinite(mtbf_s) and mtbf_s > 0):
        mtbf_s = None  # a fleet figure that is no time (NaN, infinite, negative): the observed rate instead
    if cost_s is not None and not math.isfinite(cost_s):
        cost_s = None
    observed = mtbf_s is None
    if mtbf_s is None and failures > 0 and wall_s > 0:
        mtbf_s = wall_s / failures
    out = Cadence(cost_s, mtbf_s, failures, interval_used_s, interval_used_steps)
    if not cost_s or cost_s <= 0:
        out.note = (
            "no blocking checkpoint save was measured: the checkpoint cost is unknown, so no interval is recommended"
        )
        return out
    if mtbf_s is None:
        out.note = (
            "no failure was observed, so the mean time between failures is unknown and no interval is recommended "
            "(give --mtbf HOURS to use your fleet's figure)"
        )
        return out
    out.young_s = young_interval(cost_s, mtbf_s)
    out.daly_s = daly_interval(cost_s, mtbf_s)
    out.waste_best = waste(out.young_s, cost_s, mtbf_s)
    if interval_used_s and interval_used_s > 0:
        out.waste_used = waste(interval_used_s, cost_s, mtbf_s)
        out.hours_per_week_saved = max(0.0, out.waste_used - out.waste_best) * HOURS_PER_WEEK
    if observed and failures < FEW_FAILURES:
        out.note = (
            f"only {failures} failure{'s' if failures != 1 else ''} observed: the MTBF "
            f"({mtbf_s / 3600:.2f} h) and the interval built on it are rough; give --mtbf HOURS for a fleet figure"
        )
    return out
