"""The live detector: fed step samples and heartbeats, asked now and then what appeared or cleared.

Pure and incremental (no files, no threads, no clock of its own: the caller passes `now`), so the same
object serves `scope run`, `scope watch`, a replay of a recorded run and the unit tests. A sample costs a
few array writes; a look costs a median per class over the ranks' rings, and only ranks with new samples
move their persistence counters.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any

from scope.finding import Finding
from scope.live import findings as words
from scope.live.collective import CollectiveTracker
from scope.live.hang import HANG_FLOOR_S, HANG_STEPS, HangGate, HangVerdict, hang_limit, judge_hang
from scope.live.samples import Heartbeat, StepSample
from scope.live.straggle import RankVerdict, StragglerTracker, median_positive

# A stage bounds the pipeline when its median compute is this many times the other stages' (and above the
# straggler margin): below, the last stage's loss and the first's embedding are the model's own shape.
STAGE_RATIO = 1.2
STAGE_PERSIST = 2  # looks in a row


@dataclass
class LiveEvent:
    action: str  # new | update (the same finding, now naming another culprit) | clear
    key: str  # straggler:<rank> | slow_collective:<group> | pipeline_imbalance:<stage> | hang
    finding: Finding
    t: float  # when the look that saw it happened
    step: int = -1  # the furthest step any rank had completed then

    def line(self) -> str:
        """One terminal line."""
        if self.action in ("new", "update"):
            return f"scope live: {self.finding.kind}: {self.finding.summary}"
        return f"scope live: cleared {self.finding.kind} ({', '.join(map(str, self.finding.ranks)) or '-'})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "key": self.key,
            "t": self.t,
            "step": self.step,
            "finding": self.finding.to_dict(),
        }


class LiveDetector:
    def __init__(
        self,
        *,
        threshold: float | None = None,
        min_loss: float | None = None,
        hang_floor_s: float = HANG_FLOOR_S,
        hang_steps: float = HANG_STEPS,
    ) -> None:
        self.stragglers = StragglerTracker()
        if threshold is not None:
            self.stragglers.threshold = threshold
        if min_loss is not None:
            self.stragglers.min_loss = min_loss
        self.collectives = CollectiveTracker(min_loss=self.stragglers.min_loss)
        self.hang_floor_s = hang_floor_s
        self.hang_steps = hang_steps
        self.beats: dict[int, Heartbeat] = {}
        self.active: dict[str, Finding] = {}
        self.samples = 0
        self.max_step = -1
        self.dropped = 0  # samples refused (out of order, damaged)
        self._hang: HangVerdict | None = None
        self._hang_progress = 0.0
        self._stage_hits: dict[int, int] = {}
        self._stage_since: dict[int, int] = {}
        self._stage_looked = 0
        self._typical: tuple[int, float | None] = (-1, None)  # (samples then, the job's typical step)
        self._worded: dict[int, RankVerdict] = {}  # rank -> the straggler verdict its active finding says
        self._fed = 0  # samples and changed beats fed: the hang gate is kept until one comes
        self._gate: tuple[int, HangGate | None] = (-1, None)

    # -- feeding --------------------------------------------------------------------------------
    def add_sample(self, s: StepSample) -> None:
        if not (s.step_s > 0 and math.isfinite(s.step_s)):
            self.dropped += 1
            return
        self.samples += 1
        self.max_step = max(self.max_step, s.step)
        self.stragglers.add(s)
        if s.comm:
            self.collectives.add(s)
        beat = self.beats.get(s.rank)
        self._fed += 1
        if beat is None:
            self.beats[s.rank] = Heartbeat(s.rank, s.t, s.step, s.t)
        elif s.step >= beat.step:
            beat.step, beat.step_t, beat.written = s.step, s.t, max(beat.written, s.t)

    def add_beat(self, b: Heartbeat) -> None:
        old = self.beats.get(b.rank)
        if old is not None and old.step_t is not None and (b.step_t is None or b.step_t < old.step_t):
            b.step, b.step_t = old.step, old.step_t  # a progress sample was newer than this beat
        if b == old:
            return  # the same beat read again (the tail reads every heartbeat at each look): nothing moved
        self.beats[b.rank] = b
        self._fed += 1

    # -- looking --------------------------------------------------------------------------------
    def typical_step_s(self) -> float | None:
        if self._typical[0] != self.samples:  # the rings move only with samples: once per look at most
            self._typical = (self.samples, median_positive(self.stragglers.recent()))
        return self._typical[1]

    def hang_limit_s(self) -> float:
        """Seconds without progress that make a hang now (the floor until the job has a rhythm)."""
        return hang_limit(self.typical_step_s(), self.hang_floor_s, self.hang_steps)

    def evaluate(self, now: float) -> list[LiveEvent]:
        events: list[LiveEvent] = []
        new, cleared = self.stragglers.evaluate()
        for v in new:
            events.append(self._open(f"straggler:{v.rank}", words.straggler_finding(v), now))
            self._worded[v.rank] = v  # (worded once on its first look, not again below)
        for v in cleared:
            events.append(self._close(f"straggler:{v.rank}", now))
        for rank, v in self.stragglers.flagged.items():  # still slow: the latest figures
            if self._worded.get(rank) is not v:  # a verdict is replaced when judged, never changed after
                self.active[f"straggler:{rank}"] = words.straggler_finding(v)
                self._worded[rank] = v
        step_s = self.typical_step_s()
        gnew, gcleared = self.collectives.evaluate(step_s, self.stragglers.suspects())
        events += [self._open(f"slow_collective:{v.group}", words.collective_finding(v), now) for v in gnew]
        events += [self._close(f"slow_collective:{v.group}", now) for v in gcleared]
        events += self._stages(now)
        events += self._hang_events(now, step_s)
        for e in events:
            e.step = self.max_step
        return events

    def _open(self, key: str, finding: Finding, now: float) -> LiveEvent:
        self.active[key] = finding
        return LiveEvent("new", key, finding, now)

    def _close(self, key: str, now: float) -> LiveEvent:
        finding = self.active.pop(key)
        return LiveEvent("clear", key, finding, now)

    def _hang_gate(self) -> HangGate:
        fed, gate = self._gate
        if gate is None or fed != self._fed:
            gate = HangGate.of(self.beats)
            self._gate = (self._fed, gate)
        return gate

    def _hang_events(self, now: float, step_s: float | None) -> list[LiveEvent]:
        gate = self._hang_gate()
        progress = gate.latest
        if self._hang is None and gate.quiet(now, step_s, self.hang_floor_s, self.hang_steps):
            return []  # what judge_hang would say, without a walk over every rank
        if self._hang is not None:
            if progress > self._hang_progress:
                self._hang = None
                return [self._close("hang", now)]
            return self._hang_named(now, step_s)
        verdict = judge_hang(self.beats, now, step_s, self.hang_floor_s, self.hang_steps)
        if verdict is None:
            return []
        self._hang, self._hang_progress = verdict, progress
        return [self._open("hang", words.hang_finding(verdict), now)]

    def _hang_named(self, now: float, step_s: float | None) -> list[LiveEvent]:
        """An open hang whose culprit the evidence now names otherwise (a frozen rank's beat goes stale only
        after BEAT_STALE_S; a stalled rank's `where` comes with its next beat): said again, as an update."""
        verdict = judge_hang(self.beats, now, step_s, self.hang_floor_s, self.hang_steps)
        if verdict is None or not verdict.culprits or self._hang is None:
            return []
        if (verdict.culprits, verdict.how) == (self._hang.culprits, self._hang.how):
            return []
        self._hang = verdict
        finding = words.hang_finding(verdict)
        self.active["hang"] = finding
        return [LiveEvent("update", "hang", finding, now)]

    @property
    def hang(self) -> HangVerdict | None:
        return self._hang

    def _stages(self, now: float) -> list[LiveEvent]:
        """A pipeline stage whose ranks all compute more than the other stages (no rank straggles within)."""
        if self.samples == self._stage_looked:
            return []  # nothing new since the last look: the counters move with the steps
        self._stage_looked = self.samples
        table = self._stage_compute()
        if len(table) < 2:
            return []
        step_s = self.typical_step_s() or 0.0
        heavy = max(table, key=lambda g: table[g][0])
        value = table[heavy][0]
        others = statistics.median(v for g, (v, _) in table.items() if g != heavy)
        slow = value > STAGE_RATIO * others and value - others >= self.stragglers.min_loss * step_s
        events: list[LiveEvent] = []
        for g in table:
            hit = slow and g == heavy
            self._stage_hits[g] = self._stage_hits.get(g, 0) + 1 if hit else 0
            key = f"pipeline_imbalance:{g}"
            if hit and self._stage_hits[g] == 1:
                self._stage_since[g] = max(self.stragglers._step[self.stragglers.rows[r]] for r in table[g][1])
            if hit and (key in self.active or self._stage_hits[g] >= STAGE_PERSIST):
                finding = words.stage_finding(g, table[g][1], value, others, self._stage_since.get(g, -1))
                if key not in self.active:
                    events.append(LiveEvent("new", key, finding, now))
                self.active[key] = finding
            elif not hit and key in self.active:
                events.append(self._close(key, now))
        return events

    def _stage_compute(self) -> dict[int, tuple[float, list[int]]]:
        import numpy as np

        st = self.stragglers
        stage = st.peer_groups()
        n = len(stage)
        if n < 2 or len({g for g in stage.tolist() if g >= 0}) < 2:
            return {}  # one peer group (no pipeline stages): nothing to compare
        comp = st.recent("compute")
        by_row = {i: r for r, i in st.rows.items()}
        groups: dict[int, list[int]] = {}
        for i in range(n):
            g = int(stage[i])
            if g >= 0 and np.isfinite(comp[i]):
                groups.setdefault(g, []).append(i)
        return {g: (float(np.median(comp[rows])), sorted(by_row[i] for i in rows)) for g, rows in groups.items()}

    # -- for metrics ----------------------------------------------------------------------------
    def rank_metrics(self, now: float) -> dict[int, dict[str, float]]:
        """Per rank: recent step time, straggler score (own time over its peers', 1 = like them), seconds
        since its last step."""
        st = self.stragglers
        recent = st.recent()
        out: dict[int, dict[str, float]] = {}
        for rank, i in st.rows.items():
            beat = self.beats.get(rank)
            since = now - beat.step_t if beat is not None and beat.step_t is not None else float("nan")
            out[rank] = {"step_s": float(recent[i]), "score": float(st.score[i]), "since_progress_s": since}
        return out
