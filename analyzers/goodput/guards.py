"""Guards that keep every goodput figure possible: no time that is NaN or infinite, and every second of
the job in exactly one interval (so the buckets sum to the wall time and no share leaves 0-100%)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scope.analyzers.goodput.mark import Mark
    from scope.analyzers.goodput.states import Interval


def finite_or_none(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def finite(marks: list[Mark]) -> list[Mark]:
    """A time or a duration that is NaN or infinite (a damaged record, a hostile value) is no time at all:
    the mark keeps what else it says; a negative duration likewise."""
    for m in marks:
        m.t = finite_or_none(m.t)
        for name in ("step_s", "dur_s", "data_s"):
            v = getattr(m, name)
            if v is not None and not (math.isfinite(v) and v >= 0):
                setattr(m, name, None)
    return marks


def no_overlap(intervals: list[Interval], start: float, end: float) -> list[Interval]:
    """Every second in exactly one bucket: intervals clipped to the job's span, and where two overlap (a
    clock that stepped, lines out of order) the earlier keeps the time. So the buckets sum to the wall time
    and no share leaves 0-100%."""
    out: list[Interval] = []
    cursor = start
    for iv in sorted(intervals, key=lambda iv: (iv.start, iv.end)):
        s, e = max(iv.start, cursor, start), min(iv.end, end)
        if e <= s:
            continue
        iv.start, iv.end = s, e
        out.append(iv)
        cursor = e
    return out
