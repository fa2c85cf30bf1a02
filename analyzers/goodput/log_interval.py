"""Steps between two progress lines of a log: the attempts' resume steps, their plans and the steps redone
read it (a log every N steps shows step resume + N first)."""

from __future__ import annotations

import statistics
from itertools import pairwise

from scope.analyzers.goodput.mark import Mark


def log_interval(steps: list[Mark]) -> int:
    """Steps between two progress lines (a log every N steps): the first line shows step resume + N."""
    nums = [m.step for m in steps if m.step is not None]
    gaps = [b - a for a, b in pairwise(nums) if b > a]
    return int(statistics.median(gaps)) if gaps else 1
