"""Turn incidents into Findings: one sentence naming cause, rank and host; evidence lines; a concrete fix."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from scope.analyzers.diagnose.model import HARDWARE, Anomaly
from scope.analyzers.diagnose.reasoning.rootcause import Incident
from scope.analyzers.diagnose.words import advice

from scope.finding import Finding

MAX_EVIDENCE = 12
MAX_CASCADE_EVIDENCE = 10


# Findings read from where a log stops (reasoning/stages.py, progress.py): no error line was there to match
STOP_CODES = ("init_stalled", "benchmark_stalled", "ranks_out_of_step", "stopped_marked_hang")


def _guess_prefix(code: str, known: bool) -> str:
    """How a low-confidence finding says what it rests on: a signature row, where the log stops, or neither."""
    if known:
        return "Best guess: "
    if code.startswith("stopped_in_") or code in STOP_CODES:
        return "Best guess, from where the log stops: "
    if code == "hang_stack_dump":
        return "Best guess, from the stack dump: "
    if code.startswith("traceback_cut_in_"):  # reasoning/cut_activity.py: what the cut traceback's frames show
        return "Best guess, from the frames of a cut traceback: "
    return "Best guess, no known signature matched: "


def incident_finding(inc: Incident, rank_hosts: dict[int, str], stack_of: dict[int, Anomaly] | None = None) -> Finding:
    first = inc.first
    ranks = inc.ranks
    hosts = sorted(set(inc.hosts) | {rank_hosts[r] for r in ranks if r in rank_hosts})
    if not ranks and hosts and inc.level == HARDWARE:  # a host-level fault hits every rank on that host
        ranks = sorted(r for r, h in rank_hosts.items() if h in hosts)
    summary = advice.summary(inc, first, ranks, hosts)
    stacks = {r: stack_of[r] for r in ranks if stack_of and r in stack_of} if inc.kind in HANG_KINDS else {}
    if stacks:
        summary += " " + " ".join(
            f"Rank {r} was at {_short_frame(a.details.get('frame', ''))}." for r, a in list(stacks.items())[:3]
        )
    confidence = confidence_of(inc)
    if confidence == "low":
        # a low-confidence signature row did match: the guess is its, not the absence of any
        known = any(a.details.get("signature") for a in inc.anomalies)
        summary = _guess_prefix(inc.code, known) + summary
    metrics: dict[str, Any] = {
        "code": inc.code,
        "hosts": hosts,
        "lines": len(inc.anomalies),
        "confidence": confidence,
    }
    signature = first.details.get("signature")
    if signature:
        metrics["signature"] = signature
        metrics["cause"] = first.details.get("cause")
        metrics["reference"] = first.details.get("reference")
    if inc.time_ns is not None:
        metrics["first_seen"] = _iso(inc.time_ns)
    details = {  # a key with a leading '_' is the diagnosis' own working (a remedy's filled slots), no metric
        k: v
        for k, v in first.details.items()
        if k not in ("frames", "evidence") and not k.startswith("_") and v not in (None, "", [], {})
    }
    if details:
        metrics["details"] = details
    if first.details.get("frames"):
        metrics["traceback"] = first.details["frames"]
    merged = [m for m in inc.merged if m.anomalies]
    if merged:
        metrics["related"] = [
            {"code": m.code, "summary": m.first.message, "ranks": m.ranks, "details": _trim(m.first.details)}
            for m in merged
        ]
    if inc.cascade:
        metrics["cascade"] = cascade_summary(inc.cascade)
    if stacks:
        metrics["stacks"] = {str(r): a.details.get("frame") for r, a in stacks.items()}
    return Finding(
        kind=inc.kind or first.kind,
        severity=inc.severity,
        summary=summary,
        ranks=ranks,
        evidence=_evidence(inc, merged),
        metrics=metrics,
        suggestion=advice.suggestion(inc, first, ranks, hosts),
    )


HANG_KINDS = ("hang", "missing_rank", "timeout")
# Codes whose line or dump states its cause outright (the rest is medium unless a signature says otherwise).
HIGH_CONFIDENCE_CODES = frozenset(
    {
        "c10d_watchdog_timeout",
        "c10d_pg_status",
        "c10d_heartbeat_monitor",
        "c10d_desync",
        "gloo_timeout",
        "cuda_oom",
        "host_oom",
        "host_oom_kill",
        "collective_mismatch_detected",
        "nccl_ib_completion_error",
        "nccl_socket_connect",
        "nccl_shm",
        "nccl_duplicate_gpu",
        "nccl_crash_signal",
        "info_collective_mismatch",
        "hang_suspects",
        "gpu_application_fault",
        *("fr_not_joined", "fr_gpu_stalled", "fr_mismatch", "fr_missing_dump"),
    }
)


def confidence_of(inc: Incident) -> str:
    """high: the evidence states the cause; medium: it usually does; low: a best guess from an unmatched line."""
    stated = [c for a in inc.anomalies if (c := a.details.get("confidence"))]
    if stated:
        order = ("high", "medium", "low")
        return min(stated, key=lambda c: order.index(c) if c in order else 1)
    if inc.level == HARDWARE or inc.code in HIGH_CONFIDENCE_CODES or inc.code == "xid":
        return "high"
    return "medium"


def _short_frame(frame: str) -> str:
    """'/long/path/pkg/mod.py:12 in f' -> 'pkg/mod.py:12 in f'."""
    path, _, rest = frame.partition(":")
    return "/".join(path.split("/")[-2:]) + (":" + rest if rest else "")


def cascade_summary(cascade: list[Anomaly]) -> dict[str, Any]:
    ordered = sorted(cascade, key=lambda a: a.sort_key())
    codes = Counter(a.code for a in ordered)
    return {
        "count": len(ordered),
        "by_code": dict(codes.most_common()),
        "ranks": sorted({a.rank for a in ordered if a.rank is not None}),
        "evidence": _unique([a.evidence for a in ordered if a.file])[:MAX_CASCADE_EVIDENCE],
    }


def _evidence(inc: Incident, merged: list[Incident]) -> list[str]:
    lines: list[str] = []
    ordered = sorted(inc.anomalies, key=lambda a: (a.sort_key(), a.file, a.line))
    # the first line of each kind of evidence first (an Xid burst must not hide the crash beside it)
    firsts: dict[tuple[str, str], Anomaly] = {}
    for a in ordered:
        firsts.setdefault((a.code, a.file), a)
    for a in list(firsts.values()) + ordered:
        if a.file:
            lines.append(a.evidence)
        lines.extend(a.details.get("evidence", []))
    for m in merged:
        for a in m.anomalies:
            lines.extend([a.evidence] if a.file else [])
            lines.extend(a.details.get("evidence", []))
    return _unique(lines)[:MAX_EVIDENCE]


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _trim(details: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in details.items() if k not in ("frames", "evidence") and v not in (None, "", [], {})}


def _iso(ns: int) -> str:
    secs, frac = divmod(ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + f".{frac // 1_000_000:03d}Z"
