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
  1 ms; for compute, a CPU time, scaled to what a CPU second costs in wall time at the host's contention)
  or NOISE_K robust deviations (MAD) of the group's step-to-step spread over a window, whichever is larger;
- a clear effect is flagged sooner (a sequential test): slow in each step of the last FAST hook records by
  FAST_MARGIN times the margin;
- a rank is flagged at the first look it is slow (the quantile is its persistence; a host-class one once
  slow for HOST_PERSIST_S), and cleared after CLEAR looks in a row not slow; its class is the first slow
  one of compute, input, host. On a shared host a rank that computes more (COMPUTES_MORE) also waits more
  for a core: that wait is judged with its compute.
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
SERIES = (*CLASSES, "step_s")  # kept per rank and step
WINDOW = 8  # steps per look
# A rank is as slow as its QUANTILE step of the window: slow in three of four steps is persistent; OS hiccups
# (a step 2.5x, doubled when the hook's record covers two steps) in three steps of eight are not.
QUANTILE = 0.25
SLOTS = 32  # steps kept per rank; a rank more than SLOTS // 2 steps behind the group is left to the hang verdict
# A record whose checkpoint saves take this share of its steps is left out (a save is seconds; a step's own
# small torch.save of a metric is not).
SAVE_SHARE = 0.1
MIN_STEPS = 5  # a look needs this many steps of every rank
MIN_SEEN = WINDOW // 2  # and a rank's verdict this many of its steps in the window
PERSIST = 1  # the quantile is the persistence: slow in 3 steps of 4 over WINDOW steps
CLEAR = 3
NOISE_K = 4.0
MIN_LOSS_S = 0.001
MAD_SIGMA = 1.4826  # a normal distribution's standard deviation in MADs
# Per judged variant (compute, input, host, host with compute): 1 where healthy ranks' values are ~0 (input,
# host), padded by 1% of the step in a ratio.
PADDED = np.array([0.0, 1.0, 1.0, 0.0])
COMPUTES_MORE = 1.15  # compute over its peers' above which a rank's wait for a core is counted as compute
LOO_MAX = 16  # above this many peers, one rank barely moves the median: no leave-one-out
# The sequential test: a large effect needs fewer steps to be told from noise. Slow in every step of the last
# FAST hook records, by FAST_MARGIN times the margin. Records, not steps: a record covering two steps fills
# both with its average, so one OS hiccup (1% of steps) is two slow steps; three records in a row are ~1e-6.
FAST = 3
FAST_MARGIN = 1.5
# A rank waiting for a core more than its peers is named a host straggler once it has been for this long: on a
# host whose ranks outnumber its cores, the scheduler favours one rank then another for a second or so (on a
# 2-core host at load 8, rank 3 of 4 waited 76 ms a step against its peers' 47 for 8 steps of 0.12 s, then no
# more), while a neighbour that takes a rank's core stays for minutes.
HOST_PERSIST_S = 3.0


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
        self._loo: dict[int, np.ndarray] = {}  # group size -> each rank's others (leave-one-out index)
        self._grow(64)
        self._looked: dict[int, int] = {}  # group -> the last common step looked at
        self._holding: set[int] = set()  # rows whose median is slow at this look
        self.saves = 0  # hook records left out for a checkpoint save
        self._added = 0  # samples added, and how many there were at the last judged look
        self._judged = -1
        self._step_med = math.nan  # the group's median step at the last look
        self._back = np.arange(window)  # steps back from a rank's newest, in a window
        self._range = np.arange(0)  # the last np.arange(n) asked for (one: a count of ranks per look)
        self._by_row: dict[int, int] = {}  # row -> rank (rows only grow: rebuilt when one is added)

    def _arange(self, n: int) -> np.ndarray:
        """np.arange(n), kept while n stays the same (one per count would keep every count ever seen)."""
        if len(self._range) != n:
            self._range = np.arange(n)
        return self._range

    # -- the rings ------------------------------------------------------------------------------
    def _grow(self, cap: int) -> None:
        old, self._cap = self._cap, cap

        def grown(a: np.ndarray | None, fill: float, shape: tuple[int, ...], dtype: type) -> np.ndarray:
            out: np.ndarray = np.full(shape, fill, dtype=dtype)
            if a is not None and old:
                out[:old] = a[:old]
            return out

        # One array for the series (a look takes every class's window in one index); per name, a view of it.
        old_store = getattr(self, "_store", None)
        self._store = np.full((len(SERIES), cap, SLOTS), np.nan)
        if old_store is not None and old:
            self._store[:, :old] = old_store[:, :old]
        self._values = {name: self._store[k] for k, name in enumerate(SERIES)}
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
        self._added += 1

    def recent(self, name: str = "step_s") -> np.ndarray:
        """Each rank's median over its last WINDOW steps (NaN before its first sample), in row order."""
        n = len(self.rows)
        cols = (self._step[:n, None] - self._back[None, :]) % SLOTS
        return row_nanmedian(self._values[name][self._arange(n)[:, None], cols])  # (take_along_axis costs more)

    def peer_groups(self) -> np.ndarray:
        """Each rank's peer group (pipeline stage; -1 where none), in row order."""
        return self._group[: len(self.rows)]

    def suspects(self) -> set[int]:
        """Ranks flagged, or slow at the last look: whose peers' waiting is theirs."""
        slow = {r for r, i in self.rows.items() if self._hits[i] > 0}
        return slow | set(self.flagged)

    # -- the look -------------------------------------------------------------------------------
    def evaluate(self) -> tuple[list[RankVerdict], list[RankVerdict]]:
        """(newly flagged, cleared) since the last look: nothing to judge unless a sample came since.

        Not judged less often than the steps come (a gate of one look a second was tried): in a job of 0.1 s
        steps a 1.5x straggler was named 11 steps after its onset instead of 8 or fewer, and the others'
        waiting for a straggler was named a slow collective before the straggler was judged at all."""
        if self._added == self._judged:
            return [], []
        self._judged = self._added
        n = len(self.rows)
        if len(self._by_row) != n:
            self._by_row = {i: r for r, i in self.rows.items()}
        by_row = self._by_row
        new: list[RankVerdict] = []
        cleared: list[RankVerdict] = []
        ready = self._count[:n] >= 1
        groups = self._group[:n]
        for g in sorted(set(groups[ready].tolist())):  # (np.unique costs more on a few ranks)
            sel = np.flatnonzero(ready & (groups == g))
            top = int(self._step[sel].max())
            sel = sel[self._step[sel] >= top - SLOTS // 2]
            common = int(self._step[sel].min())
            if len(sel) < 2 or common < MIN_STEPS or common <= self._looked.get(g, -1):
                continue
            self._looked[g] = common
            self._holding = set()
            verdicts = self._judge_group(sel, common, by_row)
            self._persist(sel, verdicts, by_row, new, cleared)
        return new, cleared

    def _windows(self, sel: np.ndarray, common: int) -> tuple[np.ndarray, np.ndarray]:
        """series x rank x step (SERIES order): the last WINDOW steps up to `common` (NaN where a slot holds
        another step), every series in one index; and rank x step, the cells of the rank's last FAST records
        in it (all False when the window does not hold FAST of its records)."""
        steps = common - self._back[::-1]
        rows, cols = sel[:, None], (steps % SLOTS)[None, :]
        held = self._slot_step[rows, cols] == steps[None, :]
        win = np.where(held, self._store[:, rows, cols], np.nan)
        rec = np.where(held, self._slot_rec[rows, cols], -1)
        first = rec[:, -1] - FAST + 1
        mask = (rec >= first[:, None]) & (rec >= 0)
        whole = (rec == first[:, None]).any(axis=1) & (rec[:, 0] < first)  # its first record began in the window
        return win, mask & whole[:, None]

    def _judge_group(self, sel: np.ndarray, common: int, by_row: dict[int, int]) -> dict[int, RankVerdict]:
        best: dict[int, RankVerdict] = {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            win, last = self._windows(sel, common)
            # The classes, and a rank's wait for a core judged with its compute: a rank that computes more also
            # waits more for a core (COMPUTES_MORE), against its peers' compute and wait.
            x = np.empty((4, *win.shape[1:]))  # (np.stack's checks cost more than the copy on a few ranks)
            x[:3] = win[:3]
            np.add(win[2], win[0], out=x[3])
            fields, step_med = self._compare(x, win[3], last)
            self._step_med = step_med
            # over the window, or over its last records (the sequential test's view)
            computes_more = (fields[0, 0] > COMPUTES_MORE) | (fields[11, 0] > COMPUTES_MORE)
            cmp = Comparison.of(_host_with_compute(fields, computes_more))
            limit = 1 / self.threshold
            # A rank's quartile over a window it has few steps in says nothing yet (a job's first look: a 4-rank
            # job at load 14, one record of each rank, named a rank slow since its step 0, clear 6 steps later).
            seen = (~np.isnan(win[3])).sum(axis=1) >= MIN_SEEN
            slow = (cmp.ratio > limit) & (cmp.excess >= cmp.margin) & seen
            fast = (cmp.fast_ratio > limit) & (cmp.fast_excess >= FAST_MARGIN * cmp.margin) & seen
            med_ratio, med_excess = cmp.window[2], cmp.window[3]
            # A flagged rank stays flagged while its median step is slow (hysteresis: a 1.5x straggler's
            # lower quartile dips under the threshold now and then, its median does not).
            holding = ((med_ratio > limit) & (med_excess >= cmp.margin))[: len(CLASSES)].any(axis=0)
            self._holding.update(int(i) for i in sel[holding])
            scores = np.fmax(1.0, _nan_to_one(med_ratio[: len(CLASSES)]).max(axis=0))
            hit = slow | fast
            for k, cls in enumerate(CLASSES if hit.any() else ()):  # in precedence
                for j in np.flatnonzero(hit[k]):
                    i = int(sel[j])
                    if i in best:
                        continue
                    kind = "compute" if cls == "host" and computes_more[j] else cls
                    # A rank that computes more also waits more for a core: where that is slow too, its figures
                    # are those of its compute and wait together (what the step loses), not of its CPU time.
                    f = 2 if kind == "compute" and computes_more[j] and (slow[2, j] or fast[2, j]) else k
                    quick = bool(fast[f, j] and not slow[f, j])  # its figures: those of the steps that tell
                    value, other, ratio_j, loss = (float(a[f, j]) for a in (cmp.recent if quick else cmp.window))
                    best[i] = RankVerdict(by_row[i], kind, value, other, ratio_j, loss, -1, common, quick)
        self.score[sel] = scores
        return best

    def _compare(self, x: np.ndarray, step: np.ndarray, recent: np.ndarray) -> tuple[np.ndarray, float]:
        """Per variant and rank (x: variant x rank x step; `step`: rank x step, the step times): QUANTILE ratio
        and excess over the same steps' others, the margin an excess must pass, for the report its median
        value, the others', the median ratio and excess, and for the sequential test the least ratio and excess
        over the cells `recent` (its last FAST records). One array, field x variant x rank, in the order of
        Comparison's fields (Comparison.of reads it); and the group's median step.

        The medians and quantiles of rows of one width are taken by one sort (each numpy call costs more than
        its work on a few ranks): the step, the CPU share's compute and wait and each variant's excess over
        the group; then the excesses' deviations; then every cell series, whose sorted ratio and excess rows
        also give the quantiles."""
        k, n, w = x.shape
        others = self._others_median(x)
        excess_cells = x - others
        flat = excess_cells.reshape(k, -1)
        group = row_nanmedian(np.concatenate([step.reshape(1, -1), x[0].reshape(1, -1), x[2].reshape(1, -1), flat]))
        step_med = float(group[0])
        # host and input times are ~0 on healthy ranks (PADDED)
        pad = np.where(PADDED > 0, 0.01 * step_med, 0.0)[:, None, None]
        cell_ratio = (x + pad) / np.where(others + pad > 0, others + pad, np.nan)
        # The spread of one step's excess across the group; the rank's excess is a median of WINDOW steps,
        # whose spread is sqrt(pi / 2 / WINDOW) of that.
        spread = MAD_SIGMA * row_nanmedian(np.abs(flat - group[3:, None]))
        noise = spread * math.sqrt(math.pi / 2 / self.window)
        floor = self.min_loss * step_med * self._cpu_share(group[1], group[2], k)
        # the larger of the floor, the noise and MIN_LOSS_S, a NaN noise left out (a NaN floor: no margin is met)
        margin = np.fmax(np.fmax(floor, NOISE_K * noise), MIN_LOSS_S) if step_med == step_med else np.full(k, np.nan)
        cells = np.empty((4, k, n, w))  # x, others, ratio, excess: variant x rank x step each
        cells[0], cells[1], cells[2], cells[3] = x, others, cell_ratio, excess_cells
        last = np.where(recent, cells, np.nan)
        ordered, count = sort_rows(np.concatenate([cells, last]).reshape(-1, w))
        medians = sorted_median(ordered, count).reshape(2, 4, k, n)
        ratio_excess = slice(2 * k * n, 4 * k * n)  # the rows of cells[2] and cells[3]
        quantiles = sorted_quantile(ordered[ratio_excess], count[ratio_excess], QUANTILE).reshape(2, k, n)
        least = np.nanmin(last[2:], axis=-1)
        margins = np.empty((1, k, n))
        margins[0] = margin[:, None]
        return np.concatenate([quantiles, margins, medians.reshape(8, k, n), least]), step_med

    @staticmethod
    def _cpu_share(compute: float, wait: float, k: int) -> np.ndarray:
        """Per variant, what a second of it costs in the step's wall time, as a share: 1, but for compute,
        measured in CPU time: on a host whose ranks wait for a core (the group's median wait beside its median
        compute), a CPU second takes (compute + wait) / compute wall seconds, so the floor, a share of the
        wall-clock step, is that much less CPU time. A 1.5x straggler on a 2-core host at load 7 computed 15 ms
        a step more than its peers' 33 ms, in steps of 200 ms that waited 110 ms for a core: under the 30 ms
        floor, though the job's steps had grown 40%. A host without contention (a GPU node) keeps the floor."""
        compute, wait = float(compute), float(wait)
        share = compute / (compute + wait) if compute + wait > 0 else 1.0
        out = np.ones(k)
        out[0] = share if share == share else 1.0
        return out

    def _others_median(self, x: np.ndarray) -> np.ndarray:
        """variant x rank x step: per cell, the median of the other ranks in the same step (leave-one-out
        while few)."""
        k, n, w = x.shape
        if n > LOO_MAX:
            return np.broadcast_to(row_nanmedian(x.transpose(0, 2, 1).reshape(-1, n)).reshape(k, 1, w), x.shape)
        loo = self._loo.get(n)
        if loo is None:
            loo = self._loo[n] = np.array([[m for m in range(n) if m != j] for j in range(n)]).reshape(n, max(n - 1, 0))
        picked = x[:, loo].transpose(0, 1, 3, 2)  # variant x rank x step x others
        return row_nanmedian(picked.reshape(-1, max(n - 1, 0))).reshape(k, n, w)

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
            elif self._hits[i] >= PERSIST and self._long_enough(v):
                self.flagged[rank] = v
                new.append(v)

    def _long_enough(self, v: RankVerdict) -> bool:
        """A host-class verdict waits until the rank has been slow for HOST_PERSIST_S (its steps since its first
        slow one, at the group's median step); the other classes are said at once."""
        return v.kind != "host" or (v.step - v.since_step + 1) * self._step_med >= HOST_PERSIST_S


class Comparison(NamedTuple):
    """Per variant (the classes, then host with compute) and rank of a group: what the verdicts and their
    figures need."""

    ratio: np.ndarray  # QUANTILE over the window of the cell ratios
    excess: np.ndarray
    margin: np.ndarray
    window: tuple[np.ndarray, ...]  # medians over the window: value, others', ratio, excess
    recent: tuple[np.ndarray, ...]  # the same over its last FAST records
    fast_ratio: np.ndarray  # the least over its last FAST records
    fast_excess: np.ndarray

    @classmethod
    def of(cls, f: np.ndarray) -> Comparison:
        """The fields of one array, field x variant x rank (views: one pick serves them all)."""
        return cls(f[0], f[1], f[2], tuple(f[3:7]), tuple(f[7:11]), f[11], f[12])


def _host_with_compute(fields: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """field x class x rank: the classes' figures, the host class's, per rank where `mask` (it computes
    more), those of its wait and compute together (the last variant)."""
    out = fields[:, : len(CLASSES)].copy()
    out[:, 2] = np.where(mask, fields[:, 3], fields[:, 2])
    return out


def _nan_to_one(a: np.ndarray) -> np.ndarray:
    """np.nan_to_num(a, nan=1.0) (an infinity to the largest float) in two calls where it makes six."""
    big = np.finfo(float).max
    return np.clip(np.where(np.isnan(a), 1.0, a), -big, big)


def sort_rows(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row sorted (NaN last) and its count of non-NaN values: what row medians and quantiles read."""
    return np.sort(a, axis=1), a.shape[1] - np.isnan(a).sum(axis=1)  # (count_nonzero's wrapper costs more)


def sorted_quantile(ordered: np.ndarray, n: np.ndarray, q: float) -> np.ndarray:
    """Per row of sorted rows (NaN last) with `n` values each, the q-quantile (linear interpolation; NaN for an
    empty row)."""
    pos = q * np.maximum(n - 1, 0)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, np.maximum(n - 1, 0))
    rows = np.arange(len(ordered))
    low, high = ordered[rows, lo], ordered[rows, hi]  # (take_along_axis costs more)
    return np.where(n > 0, low + (high - low) * (pos - lo), np.nan)


def sorted_median(ordered: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Per row of sorted rows (NaN last) with `k` values each, the median (NaN for an empty row)."""
    rows = np.arange(len(ordered))
    lo, hi = np.maximum(k - 1, 0) >> 1, k >> 1  # ((k - 1) // 2 and k // 2, both 0 for an empty row)
    med = (ordered[rows, lo] + ordered[rows, hi]) / 2 if ordered.shape[1] else np.full(len(ordered), np.nan)
    return np.where(k > 0, med, np.nan)


def row_nanmedian(vals: np.ndarray) -> np.ndarray:
    """np.nanmedian(vals, axis=1), by one sort (NaN sorts last): numpy's own takes a masked-array path for short
    rows that cost the detector 2 ms a look, most of its time on an idle job."""
    return sorted_median(*sort_rows(vals))


def nanmedian(a: np.ndarray, axis: int | None = None) -> Any:
    """np.nanmedian(a, axis) through row_nanmedian (NaN for an all-NaN slice, without numpy's warning)."""
    a = np.asarray(a, dtype=float)
    if axis is None:
        return row_nanmedian(a.reshape(1, -1))[0]
    moved = np.moveaxis(a, axis, -1)
    return row_nanmedian(moved.reshape(-1, moved.shape[-1])).reshape(moved.shape[:-1])


def median_positive(values: np.ndarray) -> float | None:
    """The median of the positive values (statistics.median's, by one sort of an array, not of a Python list:
    the same floats, the middle one or the mean of the middle two), None where there are none."""
    clean = np.sort(values[values > 0])
    n = len(clean)
    if not n:
        return None
    mid = n // 2
    return float(clean[mid]) if n % 2 else float((clean[mid - 1] + clean[mid]) / 2)
