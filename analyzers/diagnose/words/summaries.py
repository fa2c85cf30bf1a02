"""One sentence per finding that names the cause, the rank and host, and what it did."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from scope.analyzers.diagnose.knowledge.c10d_groups import group_label
from scope.analyzers.diagnose.model import Anomaly
from scope.analyzers.diagnose.reasoning.c10d_grouping import timeout_groups
from scope.analyzers.diagnose.reasoning.rootcause import Incident


def who(ranks: list[int], hosts: list[str]) -> str:
    if not ranks and not hosts:
        return ""
    r = ""
    if ranks:
        shown = ", ".join(map(str, ranks[:8])) + (f" (+{len(ranks) - 8} more)" if len(ranks) > 8 else "")
        r = f"rank{'s' if len(ranks) > 1 else ''} {shown}"
    h = f"host{'s' if len(hosts) > 1 else ''} {', '.join(hosts[:4])}" if hosts else ""
    return f"{r} ({h})" if r and h else (r or h)


def cap(text: str) -> str:
    return text[:1].upper() + text[1:] if text else text


def rank_list(ranks: list[int]) -> str:
    ranks = list(ranks)
    return ", ".join(map(str, ranks[:10])) + (f" (+{len(ranks) - 10} more)" if len(ranks) > 10 else "")


def _s(n: int) -> str:
    return "s" if n > 1 else ""


@dataclass
class Subject:
    inc: Incident
    first: Anomaly
    ranks: list[int]
    hosts: list[str]

    @property
    def d(self) -> dict[str, Any]:
        return self.first.details

    @property
    def who(self) -> str:
        return who(self.ranks, self.hosts)


def _not_joined(s: Subject) -> str:
    d = s.d
    shape = f", {d['shape'].strip('()')}" if d.get("shape") else ""
    desc = f" ({d['pg_desc']}{shape})" if d.get("pg_desc") else (f" ({shape[2:]})" if shape else "")
    waiting = sorted(set(d.get("waiting_ranks", [])) - set(s.ranks))
    them = "them" if len(s.ranks) > 1 else "it"
    verb = "wait" if len(waiting) > 1 else "waits"
    tail = f"; rank{_s(len(waiting))} {rank_list(waiting)} {verb} for {them}" if waiting else ""
    return cap(f"{s.who} never joined {d.get('op')} #{d.get('seq')} on PG {d.get('pg')}{desc}{tail}.")


def _gpu_stalled(s: Subject) -> str:
    d = s.d
    desc = f" ({d['pg_desc']})" if d.get("pg_desc") else ""
    return cap(
        f"{s.who} stopped completing GPU work on PG {d.get('pg')}{desc}: done through #{d.get('completed')} "
        f"while its peers finished #{d.get('peers_completed')}."
    )


def _missing_dump(s: Subject) -> str:
    d = s.d
    return cap(
        f"{s.who} left no Flight Recorder dump while ranks {rank_list(d.get('waiting_ranks', []))} "
        f"wait on {d.get('op')} #{d.get('seq')} on PG {d.get('pg')}: it died or hung before dumping."
    )


def _fr_mismatch(s: Subject) -> str:
    d = s.d
    return cap(
        f"{s.who} called {d.get('op')} #{d.get('seq')} on PG {d.get('pg')} with {d.get('field')} "
        f"{d.get('got')} while the other ranks used {d.get('expected')} (collective desync)."
    )


def _c10d_desync(s: Subject) -> str:
    per = ", ".join(f"rank {r}: {v}" for r, v in list(s.d.get("per_rank", {}).items())[:8])
    return f"Ranks disagree on the collective that timed out ({per}): the ranks are out of step (desync)."


def _hang_suspects(s: Subject) -> str:
    waiting = s.d.get("waiting_ranks") or []
    op = f" {s.d['op']}" if s.d.get("op") else ""
    them = "them" if len(s.ranks) > 1 else "it"
    if (
        waiting
        and s.d.get("group")
        and len({(a.details.get("group"), a.details.get("seq")) for a in s.inc.anomalies}) == 1
    ):
        # every suspect missing from one collective of one process group (reasoning/c10d_grouping.py)
        return cap(
            f"{s.who} never joined{op} #{s.d['seq']} of process group {s.d['group']}, which rank{_s(len(waiting))} "
            f"{rank_list(waiting)} timed out waiting in: the job hung on {them}."
        )
    if not waiting:  # stack dumps only, no timeout naming who waited
        return cap(f"{s.who} never joined the{op} collective the other ranks wait in: the job hung on {them}.")
    return cap(
        f"{s.who} never joined the{op} collective that rank{_s(len(waiting))} {rank_list(waiting)} "
        f"timed out waiting in: the job hung on {them}."
    )


def _gpu_app_fault(s: Subject) -> str:
    xid = next((a for a in s.inc.anomalies if a.code == "xid"), s.first)
    crash = next((a for a in s.inc.anomalies if a.code != "xid"), None)
    of = f" of {s.who}" if s.who else ""
    with_crash = f" together with {crash.message}" if crash else ""
    return (
        f"Application fault on GPU {xid.details.get('pci', '?')}{of}: Xid {xid.details.get('xid')} "
        f"({xid.details.get('meaning')}){with_crash} at the same moment; the job faulted the GPU, the GPU is "
        "not bad."
    )


def _xid(s: Subject) -> str:
    d = s.d
    where = (f" of host {', '.join(s.hosts)}" if s.hosts else "") + (f" ({who(s.ranks, [])})" if s.ranks else "")
    n = len(s.inc.anomalies)
    xids = sorted({a.details["xid"] for a in s.inc.anomalies if a.details.get("xid") is not None})
    more = f" ({n} lines: Xid {', '.join(map(str, xids))})" if n > 1 else ""
    return f"Xid {d.get('xid')} on GPU {d.get('pci') or '?'}{where}: {d.get('meaning')}{more}."


def _timeout(s: Subject) -> str:
    groups = timeout_groups(s.inc.anomalies)
    if len(groups) > 1 and None not in groups:
        return _timeouts_apart(s, groups)
    ops = sorted(
        {
            (a.details.get("op_raw") or a.details.get("op") or "collective")
            + (f" #{a.details['seq']}" if "seq" in a.details else "")
            for a in s.inc.anomalies
        }
    )
    return cap(f"{', '.join(ops[:3])} timed out on {s.who or 'the ranks'} and no rank logged a cause.")


# Timeouts named in a summary of several groups' (each group's lowest rank first, then the next), the rest counted
APART_NAMED = 4


def _timeouts_apart(s: Subject, groups: dict[str | None, list[Anomaly]]) -> str:
    """Timeouts of different process groups (reasoning/c10d_grouping.py): each rank with its group and its rank
    there, never paired across groups; one entry per rank and group (torch 2.4/2.5 print a timeout twice), the
    first APART_NAMED groups named by their lowest rank, the rest counted (a 512-rank job has dozens)."""
    firsts = [_one_per_rank(lines) for lines in groups.values()]
    firsts.sort(key=lambda lines: _rank_order(lines[0]))
    named = [lines[0] for lines in firsts[:APART_NAMED]]
    named += [a for lines in firsts[:APART_NAMED] for a in lines[1:]][: APART_NAMED - len(named)]
    said = [_timeout_in_group(a) for a in sorted(named, key=_rank_order)]
    rest = sum(len(lines) for lines in firsts) - len(named)
    if rest:
        more_groups = len(firsts) - APART_NAMED
        said.append(f"+{rest} more rank{_s(rest)}" + (f" ({more_groups} more groups)" if more_groups > 0 else ""))
    return cap(
        f"Collectives of {len(groups)} process groups timed out ({'; '.join(said)}) and no rank logged a cause: "
        "each group waited for its own members, so sequence numbers and ranks are compared only within a group."
    )


def _rank_order(a: Anomaly) -> tuple[bool, int]:
    """Lines in rank order, those of no rank last."""
    return (a.rank is None, a.rank or 0)


def _one_per_rank(lines: list[Anomaly]) -> list[Anomaly]:
    """The first line of each rank of one group, a timeout (which names the op) before a status line, in rank
    order."""
    first: dict[int | None, Anomaly] = {}
    for a in sorted(lines, key=lambda a: ("op" not in a.details, *_rank_order(a))):
        first.setdefault(a.rank, a)
    return sorted(first.values(), key=_rank_order)


def _timeout_in_group(a: Anomaly) -> str:
    d = a.details
    op = (d.get("op_raw") or d.get("op") or "a collective") + (f" #{d['seq']}" if "seq" in d else "")
    group = group_label(d)
    if d.get("rank_in_group"):  # no global rank shown: the number is the rank within the group only
        return f"{op} of process group {group} on its rank {a.rank} there"
    there = f", its rank {d['group_rank']} there" if d.get("group_rank") is not None else ""
    whose = f"rank {a.rank}" if a.rank is not None else "a rank"
    return f"{whose} in {op} of process group {group}{there}"


def _heartbeat(s: Subject) -> str:
    return cap(
        f"The NCCL watchdog of {s.who or 'a rank'} stopped making progress: a CUDA or NCCL call is hanging "
        "inside the process (heartbeat monitor)."
    )


def _exit(s: Subject) -> str:
    d = s.d
    what = f"signal {d['signal']}" if d.get("signal") else f"exit code {d.get('exitcode')}"
    subject = s.who
    if not s.ranks and d.get("local_rank") is not None:
        subject = f"local rank {d['local_rank']}" + (f" (pid {d['pid']})" if d.get("pid") else "")
    return cap(f"{subject or 'a worker'} ended with {what} and no log line names a cause.")


def _oom(s: Subject) -> str:
    where = "GPU" if s.inc.code == "cuda_oom" else "host"
    return f"{cap(s.who) + ' ran' if s.who else 'Ran'} out of {where} memory: {s.first.message}"


def _mismatch_seen(s: Subject) -> str:
    return cap(f"{s.who + ' ' if s.who else ''}{s.first.message}.")


def _crash(s: Subject) -> str:
    frames = s.d.get("frames") or []
    at = f" (raised at {frames[-1]})" if frames else ""
    return (cap(s.who) + ": " if s.who else "") + s.first.message + at


def _peer_lost(s: Subject) -> str:
    return cap(f"{s.who} lost connections to peers; the rank that went away is not in these logs.")


def _peer_exited(s: Subject) -> str:
    said = s.first.message.split("NCCL WARN", 1)[-1].strip()[:120]
    return cap(
        f"{s.who + ': ' if s.who else ''}a process on the same host closed its connection ('{said}'): "
        "a local connection does not cross the network, so the process at its other end exited (crashed or was "
        "killed); its own error is not in these logs."
    )


SUMMARIES: dict[str, Callable[[Subject], str]] = {
    "peer_exited_same_host": _peer_exited,
    "fr_not_joined": _not_joined,
    "fr_gpu_stalled": _gpu_stalled,
    "fr_missing_dump": _missing_dump,
    "fr_mismatch": _fr_mismatch,
    "c10d_desync": _c10d_desync,
    "hang_suspects": _hang_suspects,
    "gpu_application_fault": _gpu_app_fault,
    "xid": _xid,
    "c10d_watchdog_timeout": _timeout,
    "gloo_timeout": _timeout,
    "c10d_pg_status": _timeout,
    "c10d_heartbeat_monitor": _heartbeat,
    "child_exit": _exit,
    "cuda_oom": _oom,
    "host_oom": _oom,
    "host_oom_kill": _oom,
    "collective_mismatch_detected": _mismatch_seen,
    "peer_lost": _peer_lost,
    **dict.fromkeys(
        (
            "python_exception",
            "nan_inf",
            "nccl_system_error",
            "nccl_cuda_error",
            "fatal_signal",
            "nccl_crash_signal",
            "segfault",
        ),
        _crash,
    ),
}


def summary(inc: Incident, first: Anomaly, ranks: list[int], hosts: list[str]) -> str:
    s = Subject(inc, first, ranks, hosts)
    build = SUMMARIES.get(inc.code)
    if build:
        return build(s)
    return f"{first.message}{' on ' + s.who if s.who else ''}."
