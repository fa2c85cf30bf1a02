"""Straggler scores as steps arrive: each rank against its peers in the same steps, per cause class.

Per rank, its last SLOTS steps for each class of the step budget: compute (its own work), input (waiting
for the next batch), host (runnable but not running: the host's other processes took its core); a hook
record that covers several steps fills each with their average. At each look, per peer group (a pipeline
stage, else all ranks), over the last WINDOW steps every rank of the group completed:

- each step of a rank is set against the median of the other ranks in that same step (leave-one-out
  while the group is small), as `scope analyze` does: contention that slows every rank at once cancels;
- the rank's ratio and excess are their QUANTILE (25%) over those steps: slow in three steps of four is
  persistent, a few OS hiccups are not;
- it is slow in a class when the ratio exceeds 1/threshold (the analyzer's straggler threshold, 0.75:
  33% slower) and the excess a margin: the analyzer's minimum loss (15% of the median step, at least
  1 ms) or NOISE_K robust deviations (MAD) of the group's step-to-step spread over a window, whichever is larger;
- a clear effect is flagged sooner (a sequential test): slow in each step of the last FAST hook records by
  FAST_MARGIN times the margin;
- a rank is flagged at the first look it is slow (the quantile is its persistence), and cleared after
  CLEAR looks in a row not slow; its class is the first slow one of compute, input, host. On a shared host a rank that
  computes more (COMPUTES_MORE) also waits more for a core: that wait is judged with its compute.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from scope.analyzers.stragglers_spec import STRAGGLER_MIN_LOSS, STRAGGLER_THRESHOLD
from scope.live.samples import StepSample

CLASSES = ("compute", "input", "host")
WINDOW = 8  # steps per look
# A rank is as slow as its QUANTILE step of the window: slow in three of four steps is persistent; OS hiccups
# (a step 2.5x, doubled when the hook's record covers two steps) in three steps of eight are not.
QUANTILE = 0.25
SLOTS = 32  # steps kept per rank; a rank more than SLOTS // 2 steps behind the group is left to the hang verdict
# A record whose checkpoint saves take this share of its steps is left out (a save is seconds; a step's own
# small torch.save of a metric is not).
SAVE_SHARE = 0.1
MIN_STEPS = 5  # a look needs this many steps of every rank
PERSIST = 1  # the quantile is the persistence: slow in 3 steps of 4 over WINDOW steps
CLEAR = 3
NOISE_K = 4.0
MIN_LOSS_S = 0.001
MAD_SIGMA = 1.4826  # a normal distribution's standard deviation in MADs
COMPUTES_MORE = 1.15  # compute over its peers' above which a rank's wait for a core is counted as compute
LOO_MAX = 16  # above this many peers, one rank barely moves the median: no leave-one-out
# The sequential test: a large effect needs fewer steps to be told from noise. Slow in every step of the last
# FAST hook records, by FAST_MARGIN times the margin. Records, not steps: a record covering two steps fills
# both with its average, so one OS hiccup (1% of steps) is two slow steps; three records in a row are ~1e-6.
FAST = 3
FAST_MARGIN = 1.5


@dataclass
class RankVerdict:
    """A rank's straggler state at one look."""

    rank: int
    kind: str  # compute | input | host
    value_s: float  # its median per step in that class
    others_s: float  # its peers' median in the same steps
    ratio: float
    loss_s: float  # value - others: what the step waits for it, at most
    since_step: int  # its first slow step of this episode
    step: int  # the last step of the look
    fast: bool = False  # flagged by the sequential test on its last FAST records


class StragglerTracker:
    def __init__(
        self,
        threshold: float = STRAGGLER_THRESHOLD.default,
        min_loss: float = STRAGGLER_MIN_LOSS.default,
        window: int = WINDOW,
    ) -> None:
        self.threshold = threshold
        self.min_loss = min_loss
        self.window = window
        self.rows: dict[int, int] = {}
        self.flagged: dict[int, RankVerdict] = {}
        self._cap = 0
        self._values: dict[str, np.ndarray] = {}
        self._grow(64)
        self._looked: dict[int, int] = {}  # group -> the last common step looked at
        self._holding: set[int] = set()  # rows whose median is slow at this look
        self.saves = 0  # hook records left out for a checkpoint save

    # -- the rings ------------------------------------------------------------------------------
    def _grow(self, cap: int) -> None:
        old, self._cap = self._cap, cap

        def grown(a: np.ndarray | None, fill: float, shape: tuple[int, ...], dtype: type) -> np.ndarray:
            out: np.ndarray = np.full(shape, fill, dtype=dtype)
            if a is not None and old:
                out[:old] = a[:old]
            return out

        for name in (*CLASSES, "step_s"):
            self._values[name] = grown(self._values.get(name), np.nan, (cap, SLOTS), float)
        self._slot_step = grown(getattr(self, "_slot_step", None), -1, (cap, SLOTS), np.int64)
        self._slot_rec = grown(getattr(self, "_slot_rec", None), -1, (cap, SLOTS), np.int64)  # the record's number
        self._step = grown(getattr(self, "_step", None), -1, (cap,), np.int64)
        self._count = grown(getattr(self, "_count", None), 0, (cap,), np.int64)
        self._group = grown(getattr(self, "_group", None), -1, (cap,), np.int64)
        self._hits = grown(getattr(self, "_hits", None), 0, (cap,), np.int64)
        self._calm = grown(getattr(self, "_calm", None), 0, (cap,), np.int64)
        self._since = grown(getattr(self, "_since", None), -1, (cap,), np.int64)
        self.score = grown(getattr(self, "score", None), np.nan, (cap,), float)

    def row(self, rank: int) -> int:
        idx = self.rows.get(rank)
        if idx is None:
            idx = len(self.rows)
            if idx >= self._cap:
                self._grow(2 * self._cap)
            self.rows[rank] = idx
        return idx

    def add(self, s: StepSample) -> None:
        i = self.row(s.rank)
        values = {"compute": s.own_compute(), "input": s.data_s, "host": s.host_s, "step_s": s.step_s}
        if s.ckpt_s > SAVE_SHARE * s.step_s:
            # Steps holding a checkpoint save are no samples of the job's rhythm: left empty, a rank saving
            # alone (rank 0 writes the checkpoint) is no straggler, and all ranks saving no slow step.
            values = dict.fromkeys(values, math.nan)
            self.saves += 1
        first = max(s.step - min(max(s.steps, 1), SLOTS) + 1, int(self._step[i]) + 1)
        for step in range(first, s.step + 1):
            slot = step % SLOTS
            for name, value in values.items():
                self._values[name][i, slot] = value
            self._slot_step[i, slot] = step
            self._slot_rec[i, slot] = self._count[i]
        self._step[i] = max(int(self._step[i]), s.step)
        self._count[i] += 1
        self._group[i] = -1 if s.group is None else s.group

    def recent(self, name: str = "step_s") -> np.ndarray:
        """Each rank's median over its last WINDOW steps (NaN before its first sample), in row order."""
        n = len(self.rows)
        cols = (self._step[:n, None] - np.arange(self.window)[None, :]) % SLOTS
        return row_nanmedian(np.take_along_axis(self._values[name][:n], cols, axis=1))

    def suspects(self) -> set[int]:
        """Ranks flagged, or slow at the last look: whose peers' waiting is theirs."""
        slow = {r for r, i in self.rows.items() if self._hits[i] > 0}
        return slow | set(self.flagged)

    # -- the look -------------------------------------------------------------------------------
    def evaluate(self) -> tuple[list[RankVerdict], list[RankVerdict]]:
        """(newly flagged, cleared) since the last look."""
        n = len(self.rows)
        by_row = {i: r for r, i in self.rows.items()}
        new: list[RankVerdict] = []
        cleared: list[RankVerdict] = []
        ready = self._count[:n] >= 1
        for g in np.unique(self._group[:n][ready]):
            sel = np.flatnonzero(ready & (self._group[:n] == g))
            top = int(self._step[sel].max())
            sel = sel[self._step[sel] >= top - SLOTS // 2]
            common = int(self._step[sel].min())
            if len(sel) < 2 or common < MIN_STEPS or common <= self._looked.get(int(g), -1):
                continue
            self._looked[int(g)] = common
            self._holding = set()
            verdicts = self._judge_group(sel, common, by_row)
            self._persist(sel, verdicts, by_row, new, cleared)
        return new, cleared

    def _window(self, name: str, sel: np.ndarray, common: int) -> np.ndarray:
        """rank x step: the last WINDOW steps up to `common` (NaN where a slot holds another step)."""
        steps = common - np.arange(self.window)[::-1]
        cols = steps % SLOTS
        vals = self._values[name][np.ix_(sel, cols)]
        return np.where(self._slot_step[np.ix_(sel, cols)] == steps[None, :], vals, np.nan)

    def _last_records(self, sel: np.ndarray, common: int) -> np.ndarray:
        """rank x step of the window: the cells of the rank's last FAST records in it (all False when the
        window does not hold FAST of its records)."""
        steps = common - np.arange(self.window)[::-1]
        cols = steps % SLOTS
        rec = np.where(self._slot_step[np.ix_(sel, cols)] == steps[None, :], self._slot_rec[np.ix_(sel, cols)], -1)
        first = rec[:, -1] - FAST + 1
        mask = (rec >= first[:, None]) & (rec >= 0)
        whole = (rec == first[:, None]).any(axis=1) & (rec[:, 0] < first)  # its first record began in the window
        return mask & whole[:, None]

    def _judge_group(self, sel: np.ndarray, common: int, by_row: dict[int, int]) -> dict[int, RankVerdict]:
        best: dict[int, RankVerdict] = {}
        scores = np.ones(len(sel))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            step_med = float(nanmedian(self._window("step_s", sel, common)))
            computes_more = np.zeros(len(sel), bool)
            recent = self._last_records(sel, common)
            for cls in CLASSES:
                x = self._window(cls, sel, common)
                cmp = self._compare(x, step_med, cls != "compute", recent)
                if cls == "host" and computes_more.any():
                    # A rank that computes more also waits more for a core: its wait is judged with its
                    # compute, against its peers' compute and wait.
                    both = self._compare(x + self._window("compute", sel, common), step_med, False, recent)
                    cmp = _pick(computes_more, both, cmp)
                ratio, excess, margin, med_ratio, med_excess = cmp.ratio, cmp.excess, cmp.margin, *cmp.window[2:]
                scores = np.fmax(scores, np.nan_to_num(med_ratio, nan=1.0))
                if cls == "compute":  # over the window, or over its last records (the sequential test's view)
                    computes_more = (ratio > COMPUTES_MORE) | (cmp.fast_ratio > COMPUTES_MORE)
                slow = (ratio > 1 / self.threshold) & (excess >= margin)
                fast = (cmp.fast_ratio > 1 / self.threshold) & (cmp.fast_excess >= FAST_MARGIN * margin)
                hit = slow | fast
                # A flagged rank stays flagged while its median step is slow (hysteresis: a 1.5x straggler's
                # lower quartile dips under the threshold now and then, its median does not).
                self._holding.update(int(i) for i in sel[(med_ratio > 1 / self.threshold) & (med_excess >= margin)])
                for j in np.flatnonzero(hit):
                    i = int(sel[j])
                    if i not in best:  # CLASSES in precedence
                        kind = "compute" if cls == "host" and computes_more[j] else cls
                        quick = bool(fast[j] and not slow[j])  # its figures: those of the steps that tell
                        value, other, ratio_j, loss = (float(a[j]) for a in (cmp.recent if quick else cmp.window))
                        best[i] = RankVerdict(by_row[i], kind, value, other, ratio_j, loss, -1, common, quick)
        self.score[sel] = scores
        return best

    def _compare(self, x: np.ndarray, step_med: float, padded: bool, recent: np.ndarray) -> Comparison:
        """Per rank (rows of x, rank x step): QUANTILE ratio and excess over the same steps' others, the margin
        an excess must pass, for the report its median value, the others', the median ratio and excess, and
        for the sequential test the least ratio and excess over the cells `recent` (its last FAST records)."""
        others = _others_median(x)
        pad = 0.01 * step_med if padded else 0.0  # host and input times are ~0 on healthy ranks
        excess_cells = x - others
        cell_ratio = (x + pad) / np.where(others + pad > 0, others + pad, np.nan)
        ratio = row_quantile(cell_ratio, QUANTILE)
        excess = row_quantile(excess_cells, QUANTILE)
        # The spread of one step's excess across the group; the rank's excess is a median of WINDOW steps,
        # whose spread is sqrt(pi / 2 / WINDOW) of that.
        spread = MAD_SIGMA * float(nanmedian(np.abs(excess_cells - nanmedian(excess_cells))))
        noise = spread * math.sqrt(math.pi / 2 / self.window)
        margin = np.full(len(x), max(self.min_loss * step_med, NOISE_K * noise, MIN_LOSS_S))
        return Comparison(
            ratio,
            excess,
            margin,
            _medians(x, others, cell_ratio, excess_cells),
            _medians(*(np.where(recent, a, np.nan) for a in (x, others, cell_ratio, excess_cells))),
            np.nanmin(np.where(recent, cell_ratio, np.nan), axis=1),
            np.nanmin(np.where(recent, excess_cells, np.nan), axis=1),
        )

    def _persist(
        self,
        sel: np.ndarray,
        verdicts: dict[int, RankVerdict],
        by_row: dict[int, int],
        new: list[RankVerdict],
        cleared: list[RankVerdict],
    ) -> None:
        for i in sel:
            i = int(i)
            rank, v = by_row[i], verdicts.get(i)
            if v is None and i in self._holding and rank in self.flagged:
                self._calm[i] = 0
                continue
            if v is None:
                self._hits[i] = 0
                self._calm[i] += 1
                if rank in self.flagged and self._calm[i] >= CLEAR:
                    cleared.append(self.flagged.pop(rank))
                continue
            self._calm[i] = 0
            self._hits[i] += 1
            if self._hits[i] == 1:  # slow since the test's first step
                self._since[i] = v.step - (FAST if v.fast else int(self.window * (1 - QUANTILE))) + 1
            v.since_step = int(self._since[i])
            if rank in self.flagged:
                self.flagged[rank] = v  # still slow: the latest figures
            elif self._hits[i] >= PERSIST:
                self.flagged[rank] = v
                new.append(v)


class Comparison(NamedTuple):
    """Per rank of a group, one class: what the verdicts and their figures need."""

    ratio: np.ndarray  # QUANTILE over the window of the cell ratios
    excess: np.ndarray
    margin: np.ndarray
    window: tuple[np.ndarray, ...]  # medians over the window: value, others', ratio, excess
    recent: tuple[np.ndarray, ...]  # the same over its last FAST records
    fast_ratio: np.ndarray  # the least over its last FAST records
    fast_excess: np.ndarray


def _pick(mask: np.ndarray, yes: Comparison, no: Comparison) -> Comparison:
    """Per rank (mask), one comparison's figures or the other's."""

    def one(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.where(mask, a, b)

    return Comparison(
        one(yes.ratio, no.ratio),
        one(yes.excess, no.excess),
        one(yes.margin, no.margin),
        tuple(one(a, b) for a, b in zip(yes.window, no.window, strict=True)),
        tuple(one(a, b) for a, b in zip(yes.recent, no.recent, strict=True)),
        one(yes.fast_ratio, no.fast_ratio),
        one(yes.fast_excess, no.fast_excess),
    )


def _medians(x: np.ndarray, others: np.ndarray, ratio: np.ndarray, excess: np.ndarray) -> tuple[np.ndarray, ...]:
    return tuple(nanmedian(a, axis=1) for a in (x, others, ratio, excess))


def _others_median(x: np.ndarray) -> np.ndarray:
    """rank x step: per cell, the median of the other ranks in the same step (leave-one-out while few)."""
    if len(x) > LOO_MAX:
        return np.broadcast_to(nanmedian(x, axis=0), x.shape)
    n = len(x)
    others = np.array([[k for k in range(n) if k != j] for j in range(n)])  # n x (n - 1)
    return nanmedian(x[others], axis=1)


def row_quantile(a: np.ndarray, q: float) -> np.ndarray:
    """Per row, the q-quantile of its non-NaN values (linear interpolation; NaN for an empty row). One sort
    for all rows: numpy's nanquantile along an axis goes row by row in Python (0.7 s a look at 4,096 ranks)."""
    ordered = np.sort(a, axis=1)  # NaN last
    n = np.sum(~np.isnan(a), axis=1)
    pos = q * np.maximum(n - 1, 0)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, np.maximum(n - 1, 0))
    low = np.take_along_axis(ordered, lo[:, None], axis=1)[:, 0]
    high = np.take_along_axis(ordered, hi[:, None], axis=1)[:, 0]
    return np.where(n > 0, low + (high - low) * (pos - lo), np.nan)


def row_nanmedian(vals: np.ndarray) -> np.ndarray:
    """np.nanmedian(vals, axis=1), by one sort (NaN sorts last): numpy's own takes a masked-array path for short
    rows that cost the detector 2 ms a look, most of its time on an idle job."""
    ordered = np.sort(vals, axis=1)
    k = np.count_nonzero(~np.isnan(vals), axis=1)
    rows = np.arange(len(vals))
    lo, hi = np.maximum((k - 1) // 2, 0), np.maximum(k // 2 - (k == 0), 0)
    med = (ordered[rows, lo] + ordered[rows, hi]) / 2 if vals.shape[1] else np.full(len(vals), np.nan)
    return np.where(k > 0, med, np.nan)


def nanmedian(a: np.ndarray, axis: int | None = None) -> Any:
    """np.nanmedian(a, axis) through row_nanmedian (NaN for an all-NaN slice, without numpy's warning)."""
    a = np.asarray(a, dtype=float)
    if axis is None:
        return row_nanmedian(a.reshape(1, -1))[0]
    moved = np.moveaxis(a, axis, -1)
    return row_nanmedian(moved.reshape(-1, moved.shape[-1])).reshape(moved.shape[:-1])
