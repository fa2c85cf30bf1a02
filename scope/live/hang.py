"""A hang verdict from the job's own rhythm, with its culprit.

The job is hung when no running rank completed a step for HANG_STEPS times its typical step (the median
of the ranks' recent step times), and at least `floor_s`: a job stepping every 50 ms is hung after
seconds, one stepping every 40 s after minutes, where a fixed 300 s is too late for the first and
too early for the second. The culprit, in the order the evidence is strong:

1. a rank whose heartbeat stopped while the others' still beat (its process is frozen, or gone);
2. in a process group where ranks entered collectives, the rank(s) that never joined the collective
   the others wait in (their last sequence number is lower);
3. rank(s) behind: at a lower step than the others, which finished theirs and wait in the next;
4. rank(s) whose main thread stands elsewhere than where all the others wait (the hook notes its
   innermost frame once the step stalls).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from scope.live.samples import Heartbeat

HANG_STEPS = 10.0
HANG_FLOOR_S = 10.0
# The hook rewrites a heartbeat every 10 s without progress: two missed beats and a half is a stopped one.
BEAT_STALE_S = 25.0
SAVE_MAX_S = 300.0


@dataclass
class HangVerdict:
    stalled_s: float  # since the last step of any running rank
    limit_s: float
    typical_step_s: float | None
    culprits: list[int]
    how: str  # stopped_beating | not_joined | behind | elsewhere | unknown
    detail: str  # one sentence naming the culprit and what the others do
    last_steps: dict[int, int] = field(default_factory=dict)


def hang_limit(typical_step_s: float | None, floor_s: float = HANG_FLOOR_S, steps: float = HANG_STEPS) -> float:
    """Seconds without progress that make a hang for a job stepping every `typical_step_s`."""
    return max(floor_s, steps * typical_step_s) if typical_step_s else floor_s


def judge_hang(
    beats: dict[int, Heartbeat],
    now: float,
    typical_step_s: float | None,
    floor_s: float = HANG_FLOOR_S,
    steps: float = HANG_STEPS,
) -> HangVerdict | None:
    """The hang verdict now, or None. Before any rank stepped the rhythm is unknown: no verdict (start-up
    is the watchdog's, with its own long timeout)."""
    gate = HangGate.of(beats)  # (a rank that ended, an exception or an exit, is a failure, not a hang)
    if not typical_step_s or gate.quiet(now, typical_step_s, floor_s, steps):
        return None
    running = [b for b in beats.values() if b.running]
    stalled = now - gate.progress
    limit = hang_limit(typical_step_s, floor_s, steps)
    culprits, how, detail = name_culprit(running, now)
    return HangVerdict(
        stalled, limit, typical_step_s, culprits, how, detail, {b.rank: b.step for b in sorted(running, key=_rank)}
    )


@dataclass
class HangGate:
    """What judge_hang reads of the beats that does not move with the clock, kept while no beat or sample
    changes (most looks between two steps, and every look of a job of long steps): whether judge_hang
    says no hang now is then a few comparisons, the same ones in its order, not a walk over every rank."""

    never: bool  # no running rank, one ended, or none progressed yet: no verdict at any time
    progress: float  # the running ranks' latest step or save end
    saving: list[float]  # the running ranks' saves in progress, since then
    latest: float  # the latest step of any rank (the detector's: a hang clears when it moves)

    @classmethod
    def of(cls, beats: dict[int, Heartbeat]) -> HangGate:
        running = [b for b in beats.values() if b.running]
        progress = [t for b in running for t in (b.step_t, b.saved_at) if t is not None]
        return cls(
            not running or len(running) < len(beats) or not progress,
            max(progress, default=0.0),
            [b.saving_since for b in running if b.saving_since is not None],
            max((b.step_t for b in beats.values() if b.step_t is not None), default=0.0),
        )

    def quiet(self, now: float, typical_step_s: float | None, floor_s: float, steps: float) -> bool:
        """judge_hang(...) is None now."""
        if self.never or not typical_step_s:
            return True
        # a rank in a checkpoint save (the others wait for it in their next collective): no hang while it
        # lasts, up to SAVE_MAX_S (a save that long is stuck: the watchdog's fixed limit)
        if any(now - since < SAVE_MAX_S for since in self.saving):
            return True
        return now - self.progress < hang_limit(typical_step_s, floor_s, steps)


def name_culprit(running: list[Heartbeat], now: float) -> tuple[list[int], str, str]:
    for rule in (_stopped_beating, _not_joined, _behind, _elsewhere):
        found = rule(running, now)
        if found is not None:
            return found
    return [], "unknown", f"all {len(running)} ranks stand at step {max(b.step for b in running)}; none stands out"


def _rank(b: Heartbeat) -> int:
    return b.rank


def _ranks(ranks: list[int]) -> str:
    return ", ".join(str(r) for r in sorted(ranks))


def _others(running: list[Heartbeat], culprits: list[int]) -> list[int]:
    return sorted(b.rank for b in running if b.rank not in culprits)


def _stopped_beating(running: list[Heartbeat], now: float) -> tuple[list[int], str, str] | None:
    stale = sorted(b.rank for b in running if now - b.written > BEAT_STALE_S)
    if not stale or len(stale) == len(running):
        return None
    age = max(now - b.written for b in running if b.rank in stale)
    others = _others(running, stale)
    return (
        stale,
        "stopped_beating",
        f"rank{'s' if len(stale) > 1 else ''} {_ranks(stale)} stopped beating {age:.0f} s ago (process frozen or "
        f"gone) while rank{'s' if len(others) > 1 else ''} {_ranks(others)} still beat and wait",
    )


def _not_joined(running: list[Heartbeat], now: float) -> tuple[list[int], str, str] | None:
    by_group: dict[str, list[Heartbeat]] = {}
    for b in running:
        if b.coll and isinstance(b.coll.get("seq"), int):
            by_group.setdefault(str(b.coll.get("group", "0")), []).append(b)
    for group, members in sorted(by_group.items()):
        top = max(int(b.coll["seq"]) for b in members if b.coll)
        missing = sorted(b.rank for b in members if b.coll and int(b.coll["seq"]) < top)
        if missing and len(missing) < len(members):
            waiting = sorted(b.rank for b in members if b.rank not in missing)
            op = next((str(b.coll.get("op") or "collective") for b in members if b.coll and b.coll["seq"] == top), "")
            plural = len(waiting) > 1
            return (
                missing,
                "not_joined",
                f"rank{'s' if len(missing) > 1 else ''} {_ranks(missing)} never joined {op} #{top} on PG {group}; "
                f"rank{'s' if plural else ''} {_ranks(waiting)} wait{'' if plural else 's'} for it",
            )
    return None


def _behind(running: list[Heartbeat], now: float) -> tuple[list[int], str, str] | None:
    top = max(b.step for b in running)
    behind = sorted(b.rank for b in running if b.step < top)
    if not behind:
        return None
    low = min(b.step for b in running)
    others = _others(running, behind)
    return (
        behind,
        "behind",
        f"rank{'s' if len(behind) > 1 else ''} {_ranks(behind)} stopped at step {low} while "
        f"rank{'s' if len(others) > 1 else ''} {_ranks(others)} finished step {top} and wait for "
        f"{'them' if len(behind) > 1 else 'it'} in the next",
    )


def _elsewhere(running: list[Heartbeat], now: float) -> tuple[list[int], str, str] | None:
    sites = Counter(b.where for b in running if b.where)
    if len(sites) < 2 or sum(sites.values()) < len(running):
        return None
    site, count = sites.most_common(1)[0]
    if count * 2 <= len(running):
        return None  # no majority waits in one place
    odd = sorted(b.rank for b in running if b.where != site)
    where = {b.where for b in running if b.rank in odd}
    return (
        odd,
        "elsewhere",
        f"rank{'s' if len(odd) > 1 else ''} {_ranks(odd)} {'are' if len(odd) > 1 else 'is'} not where the "
        f"{count} others wait ({site}): at {', '.join(sorted(str(w) for w in where))}",
    )
