"""Which watchdog lines are of one process group, by the signals the lines carry (knowledge/c10d_groups.py).

Sequence numbers count per group, so timeouts are compared (a desync, a rank that never enqueued) only within one
group. A line names its group with certainty by a GUID (torch 2.5+), torch 2.4's described 'PG N (desc)' or the
default group's 'PG 0'. Torch 2.3's bare 'PG N' is a per-process counter: parallel tensor-parallel groups share it,
but a '[PG 1 ...]' line is never in PG 0's group nor in a 'PG 2' one. A timeout line of torch <= 2.5 whose status
line is not in the log names no group at all.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from scope.analyzers.diagnose.knowledge.c10d_groups import group_key
from scope.analyzers.diagnose.model import Anomaly

# Ranks of one group can be only a few collectives apart (each blocks on its peers); lines whose group is not
# certain and whose SeqNums differ by more come from different process groups, not from a desync.
SAME_GROUP_SEQ_SPREAD = 1000
# The key of lines whose group is not certain (torch 2.3's per-process 'PG N'): never equal to a named group's key
UNSURE = "unsure "


def is_sure(key: str | None) -> bool:
    """A group named with certainty (a GUID, a described or the default 'PG N')."""
    return key is not None and not key.startswith(UNSURE)


def group_rank(a: Anomaly) -> int | None:
    """The rank within its group a line prints ('[Rank R]')."""
    if a.details.get("rank_in_group"):
        return a.rank
    return a.details.get("group_rank", a.rank)


def one_group_possible(items: Iterable[Anomaly]) -> bool:
    """Lines whose group is not certain can be one group's only where nothing they carry says otherwise: SeqNums
    within SAME_GROUP_SEQ_SPREAD of each other, no rank within the group printed by two global ranks (every group
    has one rank 0), and no process with two SeqNums (one process waits in one collective of a group). Where only
    the group's ranks are shown (no global rank) the processes are not known: a rank printed twice may be one
    process saying its timeout twice."""
    seqs: dict[int, set[int]] = defaultdict(set)  # global rank -> its SeqNums
    holders: dict[int | None, set[int]] = defaultdict(set)  # group rank -> the global ranks printing it
    every_seq: list[int] = []
    for a in items:
        seq = a.details.get("seq")
        if seq is not None:
            every_seq.append(seq)
        if a.rank is None or a.details.get("rank_in_group"):
            continue
        holders[group_rank(a)].add(a.rank)
        if seq is not None:
            seqs[a.rank].add(seq)
    if every_seq and max(every_seq) - min(every_seq) > SAME_GROUP_SEQ_SPREAD:
        return False
    return all(len(h) < 2 for h in holders.values()) and all(len(s) < 2 for s in seqs.values())


def timeout_groups(items: Iterable[Anomaly]) -> dict[str | None, list[Anomaly]]:
    """Watchdog lines (timeouts, status lines) by their process group:
    - a group named with certainty (group_key): that group;
    - torch 2.3's bare 'PG N': a group of that number, never another number's; one group where nothing contradicts
      it (one_group_possible), else one per SeqNum (keys starting with UNSURE);
    - no group named: the one group the others name where nothing contradicts it, else apart (None)."""
    groups: dict[str | None, list[Anomaly]] = defaultdict(list)
    for a in items:
        pg = a.details.get("pg")
        groups[group_key(a.details) or (f"{UNSURE}pg {pg}" if pg is not None else None)].append(a)
    for key in [k for k in groups if k is not None and not is_sure(k)]:
        if not one_group_possible(groups[key]):
            for a in groups.pop(key):
                groups[f"{key} #{a.details.get('seq')}"].append(a)
    named = [k for k in groups if k is not None]
    if None in groups and len(named) == 1 and one_group_possible(groups[named[0]] + groups[None]):
        groups[named[0]].extend(groups.pop(None))
    return dict(groups)


def comparable(key: str | None, items: list[Anomaly]) -> bool:
    """SeqNums of these lines may be compared as one group's: a group named with certainty, or lines that nothing
    says are of several groups."""
    return is_sure(key) or one_group_possible(items)


def timed_out_seq(key: str | None, items: list[Anomaly]) -> int | None:
    """The highest SeqNum that timed out in one group; None where its lines may be of several groups."""
    seqs = [a.details["seq"] for a in items if "seq" in a.details]
    return max(seqs) if seqs and comparable(key, items) else None
