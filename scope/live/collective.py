"""Slow collectives as steps arrive: one process group's collectives taking longer for several steps.

Per rank and group, a baseline (the median of its first BASELINE samples after WARMUP) and a ring of
its last WINDOW samples. A rank's time in the group is up when the ring's lower quartile (up in three
samples of four) is RISE times the baseline and above it by the straggler margin. Per group, once PERSIST
looks in a row agree:

- every member is up: the group's collectives are slow (a slow link or switch on its path: a ring or a
  tree is as fast as its slowest link);
- all members but a few are up: the few start their collectives late and the others wait in them (the
  communication-path straggler of `scope analyze`);
- a few members are up: the group is slower on those ranks.

A group with a flagged straggler is not judged: the others' waiting is that straggler's.
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from dataclasses import dataclass, field

from scope.live.samples import StepSample

WARMUP = 2
BASELINE = 5
WINDOW = 8
QUANTILE = 0.25  # as the straggler's: up in three steps of four
RISE = 1.5
PERSIST = 2  # a look more than a straggler needs: the waiting it causes is named as the straggler first
# While a slowdown spreads, the ranks' quartiles rise a look or two apart: a verdict naming part of a group
# must hold longer than one naming all of it.
PERSIST_PARTIAL = 5
CLEAR = 3
MIN_RISE_S = 0.001
NOISE_K = 4.0


@dataclass
class _Series:
    seen: int = 0
    base: list[float] = field(default_factory=list)
    ring: deque[float] = field(default_factory=lambda: deque(maxlen=WINDOW))
    fresh: bool = False
    base_med: float = 0.0  # the baseline's median, and its spread in MADs (as a normal's deviation): set
    base_spread: float = 0.0  # once the baseline is complete, it moves no more
    cur: float | None = None  # the ring's QUANTILE, kept until the ring moves (a look judges every member)

    @property
    def ready(self) -> bool:
        return len(self.base) >= BASELINE and len(self.ring) >= 5


@dataclass
class GroupVerdict:
    group: str
    ranks: list[int]  # the ranks named
    shape: str  # group | late | ranks
    value_s: float  # median over the members that are up: time per step in the group's collectives
    base_s: float
    since_step: int
    step: int
    op: str = ""  # the group's costliest collective and its size per call, when the hook timed it


class CollectiveTracker:
    def __init__(self, min_loss: float = 0.15) -> None:
        self.min_loss = min_loss
        self.series: dict[tuple[str, int], _Series] = {}
        self.steps: dict[int, int] = {}
        self.ops: dict[str, str] = {}
        self.flagged: dict[str, GroupVerdict] = {}
        self._hits: dict[str, int] = {}
        self._calm: dict[str, int] = {}
        self._since: dict[str, int] = {}
        self._last: dict[str, tuple[str, tuple[int, ...]]] = {}
        # Per group, its ready members in the order each became ready (readiness only grows): a look walks
        # these, not every series; and the samples added, and as of the last look (none new: nothing to judge).
        self._ready: dict[str, dict[int, _Series]] = {}
        self._added = 0
        self._looked = 0

    def add(self, s: StepSample) -> None:
        self.steps[s.rank] = s.step
        self.ops.update(s.ops)
        self._added += 1
        for group, secs in s.comm.items():
            ser = self.series.get((group, s.rank))
            if ser is None:
                ser = self.series[(group, s.rank)] = _Series()
                self._ready.setdefault(group, {})
            ser.seen += 1
            if ser.seen <= WARMUP:
                continue
            if len(ser.base) < BASELINE:
                ser.base.append(secs)
                if len(ser.base) == BASELINE:
                    ser.base_med = statistics.median(ser.base)
                    ser.base_spread = 1.4826 * statistics.median(abs(v - ser.base_med) for v in ser.base)
            else:
                ser.ring.append(secs)
                ser.fresh, ser.cur = True, None
                if ser.ready:
                    self._ready[group][s.rank] = ser

    def evaluate(self, step_s: float | None, skip_ranks: set[int]) -> tuple[list[GroupVerdict], list[GroupVerdict]]:
        """(newly flagged, cleared). `step_s`: the job's typical step; `skip_ranks`: flagged stragglers."""
        new: list[GroupVerdict] = []
        cleared: list[GroupVerdict] = []
        if self._added == self._looked:
            return new, cleared  # no sample since the last look: no ring moved, no group is fresh
        self._looked = self._added
        for group, ranks in self._ready.items():
            if not ranks:
                continue
            fresh = any(s.fresh for s in ranks.values())
            for s in ranks.values():
                s.fresh = False
            if not fresh:
                continue
            verdict = None if skip_ranks & set(ranks) else self._judge(group, ranks, step_s or 0.0)
            self._count(group, verdict, new, cleared)
        return new, cleared

    def _judge(self, group: str, ranks: dict[int, _Series], step_s: float) -> GroupVerdict | None:
        up: list[int] = []
        for rank, ser in ranks.items():
            base = ser.base_med
            # The spread of one sample; `cur`, a quantile of the ring, spreads sqrt(pi / 2 / n) of that (as
            # the straggler's excess): a busy host's 40% sample-to-sample noise no longer hides a 2.5x rise.
            noise = ser.base_spread * math.sqrt(math.pi / 2 / len(ser.ring))
            cur = ser.cur
            if cur is None:
                cur = ser.cur = _quantile(list(ser.ring), QUANTILE)
            margin = max(self.min_loss * step_s, NOISE_K * noise, MIN_RISE_S)
            if cur > RISE * base and cur - base >= margin:
                up.append(rank)
        if not up:
            return None
        n, k = len(ranks), len(up)
        if k == n:
            shape, named = "group", sorted(ranks)
        elif k >= 2 and n - k <= max(1, n // 4):
            shape, named = "late", sorted(set(ranks) - set(up))
        elif k * 2 < n:
            shape, named = "ranks", sorted(up)
        else:
            return None
        value = statistics.median(statistics.median(ranks[r].ring) for r in up)
        base = statistics.median(ranks[r].base_med for r in up)
        step = max(self.steps.get(r, 0) for r in ranks)
        return GroupVerdict(group, named, shape, value, base, -1, step, self.ops.get(group, ""))

    def _count(self, group: str, v: GroupVerdict | None, new: list[GroupVerdict], cleared: list[GroupVerdict]) -> None:
        if v is not None:
            # The same verdict look after look: while a slowdown spreads (the ranks' records arrive at
            # different times) the set of ranks up changes, and the verdict waits for it to settle.
            same = self._last.get(group) == (v.shape, tuple(v.ranks))
            self._last[group] = (v.shape, tuple(v.ranks))
            self._hits[group] = self._hits.get(group, 0) + 1 if same else 1
            self._calm[group] = 0
            if self._hits[group] == 1:
                self._since[group] = v.step
            v.since_step = self._since.get(group, v.step)
            if group in self.flagged:
                self.flagged[group] = v
            elif self._hits[group] >= (PERSIST if v.shape == "group" else PERSIST_PARTIAL):
                self.flagged[group] = v
                new.append(v)
            return
        self._hits[group] = 0
        self._last.pop(group, None)
        self._calm[group] = self._calm.get(group, 0) + 1
        if group in self.flagged and self._calm[group] >= CLEAR:
            cleared.append(self.flagged.pop(group))


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)
