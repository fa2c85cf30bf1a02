"""Order the first anomalies of all ranks and hosts; the first is the root, what follows is its cascade.

1. Root candidates (hardware, application, communication errors, desyncs, Flight Recorder culprits)
   are grouped into incidents: one per GPU for hardware, one per error class for the rest.
2. An application-class Xid (13, 31, 43, ...) and a process crash on the same host within two
   seconds are one incident: an application fault on that GPU, not a bad GPU.
3. The primary incident is the earliest: by timestamp when both sides have one, else by causal
   level (hardware < application < communication < desync < stall < peer lost < teardown).
   Later incidents of a higher level become its cascade; hardware faults always stay findings.
4. Flight Recorder culprits are merged into the crash of the same rank when there is one.
5. Timeouts, resets, SIGTERMs and exits are cascade; with no root at all they become one symptom
   incident (symptoms.py).

Precedence among the findings of one failure (the most specific cause first):
  a. What happened first, where two timestamps are more than SAME_MOMENT_NS apart.
  b. Else the causal level (../model.py): a hardware fault, then a configuration or application cause
     (signature rows of cause=configuration, NCCL WARN classes of the shm / p2p / nvls / socket_config /
     usage / topology subsystems: knowledge/emitters.py), then communication errors, then desyncs, stalls, lost
     peers and teardown. A configuration cause thus outranks the NCCL error it makes NCCL return, and
     that NCCL error outranks the crash (abort, DistBackendError traceback) that follows it; at its own
     level a cause names itself:
  c. at the same level, a line that names its cause (a signature row, an NCCL WARN of a known subsystem:
     IB completion error, socket connect failure, OFI completion error) comes before a generic one (an
     'unhandled system error', 'internal error' result code, an unknown exception), which then joins
     its cascade.
  d. Across ranks, the first failing rank's own error is the root; its peers' timeouts, lost
     connections and aborts are its cascade (fold_cascades; symptoms.py names the rank that never
     joined when no rank logged a cause).
Each finding states its confidence: high when the line states the cause, medium when the message class
usually means it, low for a guess from where the log stops or an unknown error line (words/findings.py).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

from scope.analyzers.diagnose.knowledge.consequences import consequence_of
from scope.analyzers.diagnose.knowledge.xid import FOLLOW_ON_XIDS
from scope.analyzers.diagnose.model import APPLICATION, HARDWARE, MISMATCH, Anomaly

SAME_MOMENT_NS = 2_000_000_000
FOLLOW_ON_NS = 30_000_000_000
FR_CODES = ("fr_not_joined", "fr_gpu_stalled", "fr_mismatch", "fr_missing_dump")
FR_HANG_CODES = ("fr_not_joined", "fr_gpu_stalled", "fr_missing_dump")


@dataclass
class Incident:
    key: tuple[Any, ...]
    anomalies: list[Anomaly] = field(default_factory=list)
    cascade: list[Anomaly] = field(default_factory=list)
    merged: list[Incident] = field(default_factory=list)
    kind: str = ""
    code: str = ""
    severity_override: str | None = None
    # An incident that is the consequence of another (knowledge/consequences.py): reported under it.
    caused_by: Incident | None = None
    why: str = ""

    @property
    def first(self) -> Anomaly:
        return min(self.anomalies, key=lambda a: a.sort_key())

    @property
    def level(self) -> int:
        return min(a.level for a in self.anomalies)

    @property
    def time_ns(self) -> int | None:
        times = [a.time_ns for a in self.anomalies if a.time_ns is not None]
        return min(times) if times else None

    @property
    def mono_s(self) -> float | None:
        monos = [a.mono_s for a in self.anomalies if a.mono_s is not None]
        return min(monos) if monos else None

    @property
    def severity(self) -> str:
        if self.severity_override:
            return self.severity_override
        order = ("critical", "warning", "info")
        return min((a.severity for a in self.anomalies), key=order.index)

    @property
    def ranks(self) -> list[int]:
        return sorted({a.rank for a in self.anomalies if a.rank is not None})

    @property
    def hosts(self) -> list[str]:
        return sorted({a.host for a in self.anomalies if a.host})


def is_root_candidate(a: Anomaly) -> bool:
    if a.code in FR_CODES:
        return True
    if a.details.get("signature") and a.severity != "info":
        return True  # a known signature names its cause, whatever its level
    return a.level <= MISMATCH and a.severity != "info"


def _incident_key(a: Anomaly) -> tuple[Any, ...]:
    d = a.details
    if a.code in ("fr_not_joined", "fr_missing_dump", "fr_mismatch"):
        return ("fr", a.code, d.get("pg"), d.get("seq"))
    if a.code == "fr_gpu_stalled":
        return ("fr", a.code, a.rank)
    if a.level == HARDWARE:
        device = d.get("pci") or d.get("device") or d.get("gpu")
        return ("hw", a.host, device) if device not in (None, "") else ("hw", a.host, a.code)
    if a.code == "xid":  # application-class Xid: one per GPU
        return ("xid_app", a.host, d.get("pci"))
    if a.code in ("python_exception", "nccl_system_error", "nccl_warn"):
        return (a.code, re.sub(r"\d+", "N", a.message.split(":", 1)[-1])[:80])
    if a.code in ("collective_mismatch_detected",):
        return ("mismatch",)
    return (a.code,)


def build_incidents(anomalies: list[Anomaly]) -> tuple[list[Incident], list[Anomaly]]:
    incidents: dict[tuple[Any, ...], Incident] = {}
    symptoms: list[Anomaly] = []
    for a in anomalies:
        if not is_root_candidate(a):
            symptoms.append(a)
            continue
        key = _incident_key(a)
        inc = incidents.setdefault(key, Incident(key=key, kind=a.kind, code=a.code))
        inc.anomalies.append(a)
    found = list(incidents.values())
    _combine_app_xids(found)
    _fold_follow_on_xids(found)
    _combine_mismatches(found)
    _link_consequences(found)
    return [i for i in found if i.anomalies], symptoms


def _link_consequences(incidents: list[Incident]) -> None:
    """An error printed after a cause it is known to follow from (an illegal memory access after an IB
    completion error, in the same file or later in time) is that cause's consequence."""
    for inc in incidents:
        if not inc.anomalies:
            continue
        first = inc.first
        for cause in incidents:
            if cause is inc or cause.caused_by is not None or not cause.anomalies:
                continue
            rule = consequence_of(_text(first), {a.code for a in cause.anomalies})
            if rule and (_printed_after(cause.first, first) or _just_before(first, cause.first, rule.near)):
                inc.caused_by, inc.why = cause, rule.why
                break


def _text(a: Anomaly) -> str:
    return f"{a.message} {a.details.get('line_text') or ''}"


def _just_before(effect: Anomaly, cause: Anomaly, near: int) -> bool:
    return bool(near) and effect.file == cause.file and 0 < cause.line - effect.line <= near


def _printed_after(cause: Anomaly, effect: Anomaly) -> bool:
    if cause.time_ns is not None and effect.time_ns is not None:
        return cause.time_ns <= effect.time_ns
    return cause.file == effect.file and cause.line < effect.line


def _same_moment(a: Anomaly, b: Anomaly) -> bool:
    if a.time_ns is not None and b.time_ns is not None:
        return abs(a.time_ns - b.time_ns) <= SAME_MOMENT_NS
    if a.mono_s is not None and b.mono_s is not None:
        return abs(a.mono_s - b.mono_s) <= SAME_MOMENT_NS / 1e9
    return False


def _combine_app_xids(incidents: list[Incident]) -> None:
    """Xid 13/31/43 + a crash of a process on that host at that moment: the application faulted the GPU."""
    crashes = [i for i in incidents if i.level == APPLICATION and i.key[0] != "xid_app"]
    for xi in [i for i in incidents if i.key[0] == "xid_app"]:
        for ci in crashes:
            if not ci.anomalies:
                continue
            if any(
                (x.host == c.host or not x.host or not c.host) and _same_moment(x, c)
                for x in xi.anomalies
                for c in ci.anomalies
            ):
                xi.anomalies.extend(ci.anomalies)
                ci.anomalies = []
                xi.kind, xi.code = "crash", "gpu_application_fault"
        if xi.code != "gpu_application_fault":
            xi.kind = "crash"


def _after_within(first: Anomaly, later: Anomaly, window_ns: int) -> bool:
    if first.time_ns is not None and later.time_ns is not None:
        return 0 <= later.time_ns - first.time_ns <= window_ns
    if first.mono_s is not None and later.mono_s is not None:
        return 0 <= later.mono_s - first.mono_s <= window_ns / 1e9
    return False


def _fold_follow_on_xids(incidents: list[Incident]) -> None:
    """Xid 43/45/109/... right after an application Xid on the same GPU belong to that fault."""
    apps = [i for i in incidents if i.key[0] == "xid_app" and i.anomalies]
    for hw in incidents:
        xids = [a for a in hw.anomalies if a.code == "xid"]
        if hw.key[0] != "hw" or not xids or len(xids) != len(hw.anomalies):
            continue
        if any(a.details.get("xid") not in FOLLOW_ON_XIDS or "caused_by" in a.details for a in xids):
            continue
        for app in apps:
            if any(
                a.code == "xid"
                and a.details.get("pci") == x.details.get("pci")
                and a.host == x.host
                and _after_within(a, x, FOLLOW_ON_NS)
                for a in app.anomalies
                for x in xids
            ):
                app.cascade.extend(hw.anomalies)
                hw.anomalies = []
                break


def _combine_mismatches(incidents: list[Incident]) -> None:
    """A desync seen in the Flight Recorder and in a log line is one incident."""
    fr = [i for i in incidents if i.code == "fr_mismatch"]
    logs = [i for i in incidents if i.key == ("mismatch",)]
    if fr and logs:
        for i in logs:
            fr[0].merged.append(Incident(key=i.key, anomalies=list(i.anomalies), kind=i.kind, code=i.code))
            i.anomalies = []


def _before(a: Incident, b: Incident) -> int:
    """-1 when a comes first in the causal chain."""
    ta, tb = a.time_ns, b.time_ns
    if ta is not None and tb is not None and abs(ta - tb) > SAME_MOMENT_NS:
        return -1 if ta < tb else 1
    ma, mb = a.mono_s, b.mono_s  # kernel clock: comparable on one host only
    same_boot = ma is not None and mb is not None and set(a.hosts) == set(b.hosts)
    if (ta is None or tb is None) and same_boot and ma != mb:
        return -1 if ma < mb else 1  # type: ignore[operator]
    if a.level != b.level:
        return -1 if a.level < b.level else 1
    if ta is not None and tb is not None and ta != tb:
        return -1 if ta < tb else 1
    known_a, known_b = _known(a), _known(b)
    if known_a != known_b:  # same level, no order in time: the line that names its cause explains the other
        return -1 if known_a else 1
    return 0


def _generic_after_known(primary: Incident, inc: Incident) -> bool:
    return inc.kind == "nccl_error" and _known(primary) and not _known(inc) and _before(primary, inc) <= 0


def _known(inc: Incident) -> bool:
    """The incident's line names its cause: a signature row, or an NCCL WARN of a known subsystem."""
    return any(
        x.details.get("signature") or x.details.get("subsystem") not in (None, "internal") or "ib_status" in x.details
        for x in inc.anomalies
    )


GENERIC_REFUSAL = "framework_setting_refused"


def order_incidents(incidents: list[Incident]) -> list[Incident]:
    """Critical before warnings; within each, in causal order."""
    crit = sorted((i for i in incidents if i.severity == "critical"), key=functools.cmp_to_key(_before))
    if any(i.level == HARDWARE for i in crit):
        # an application-class Xid with no crash beside it says only that some process faulted its GPU; a
        # hardware fault on the node explains more, whenever each happened
        lone_app_xids = [i for i in crit if i.key[0] == "xid_app" and i.code != "gpu_application_fault"]
        crit = [i for i in crit if i not in lone_app_xids] + lone_app_xids
    # the generic refusal of a setting (knowledge/framework_config.py) is the last resort among critical rows: a
    # specific row (an OOM, a collective timeout) in the same job names the failure better
    crit = [i for i in crit if i.code != GENERIC_REFUSAL] + [i for i in crit if i.code == GENERIC_REFUSAL]
    rest = sorted((i for i in incidents if i.severity != "critical"), key=functools.cmp_to_key(_before))
    return _effects_after_causes(crit + rest)


def _effects_after_causes(ordered: list[Incident]) -> list[Incident]:
    """Each consequence right after its cause, whatever its level."""
    effects = [i for i in ordered if i.caused_by is not None and i.caused_by in ordered]
    out = [i for i in ordered if i not in effects]
    for e in effects:
        out.insert(out.index(e.caused_by) + 1, e)  # type: ignore[arg-type]
    return out


def fold_cascades(ordered: list[Incident], symptoms: list[Anomaly]) -> list[Incident]:
    """Keep independent roots; hang everything that follows from the primary under it."""
    if not ordered:
        return []
    primary = ordered[0]
    kept = [primary]
    for inc in ordered[1:]:
        if inc.code in FR_HANG_CODES and APPLICATION <= primary.level <= MISMATCH:
            # a crash or a desync stops collectives everywhere: what the dumps show after it follows from it
            primary.cascade.extend(inc.anomalies)
        elif inc.level == HARDWARE or inc.code in FR_CODES or inc.severity != "critical":
            kept.append(inc)
        elif inc.level > primary.level and _before(primary, inc) <= 0:
            primary.cascade.extend(inc.anomalies)
        elif inc.level == primary.level and _generic_after_known(primary, inc):
            primary.cascade.extend(inc.anomalies)  # precedence (c): the generic NCCL error the cause made
        else:
            kept.append(inc)
    for s in symptoms:
        primary.cascade.append(s)
    return kept


def merge_ras_into_fr(incidents: list[Incident]) -> list[Incident]:
    """NCCL RAS naming the ranks a Flight Recorder culprit names corroborates it: one incident, FR's words."""
    fr = [i for i in incidents if i.code in FR_CODES]
    out = []
    for inc in incidents:
        target = next((f for f in fr if set(f.ranks) & set(inc.ranks)), None) if inc.code.startswith("ras_") else None
        if target is None:
            out.append(inc)
        else:
            target.merged.append(inc)
    return out


def merge_fr_into_crashes(incidents: list[Incident]) -> list[Incident]:
    return [i for i in incidents if not _merge_fr_into_crash(i, incidents)]


def _merge_fr_into_crash(inc: Incident, others: list[Incident]) -> bool:
    """A Flight Recorder culprit whose rank crashed: the crash is the cause, the FR facts its detail."""
    if inc.code not in ("fr_not_joined", "fr_missing_dump", "fr_gpu_stalled"):
        return False
    for other in others:
        if other is inc or other.code in FR_CODES or other.level > MISMATCH:
            continue
        if set(inc.ranks) & set(other.ranks) or (set(inc.hosts) & set(other.hosts) and other.level == HARDWARE):
            other.merged.append(inc)
            return True
    return False


# A scheduler ending the job: its cause when nothing came before it, the timeouts' end when they did.
ENDINGS = ("slurm_cancelled",)
TIMEOUTS = ("c10d_watchdog_timeout", "gloo_timeout", "nccl_timeout_reached", "c10d_pg_status")


def _ends_after_timeouts(anomalies: list[Anomaly]) -> None:
    """A job cancelled after its collectives timed out (in the same file, or earlier in time) was cancelled
    because of them: the cancel is teardown, the timeouts the failure."""
    timeouts = [a for a in anomalies if a.code in TIMEOUTS]
    for a in anomalies:
        if a.code in ENDINGS and any(_printed_after(t, a) for t in timeouts):
            a.severity, a.details["signature"] = "info", None


def split(anomalies: list[Anomaly]) -> tuple[list[Incident], list[Anomaly]]:
    """Incidents to report (primary first) and the symptoms left when there is no root at all."""
    _ends_after_timeouts(anomalies)
    incidents, symptoms = build_incidents(anomalies)
    incidents = merge_fr_into_crashes(merge_ras_into_fr(incidents))
    if not any(i.severity == "critical" for i in incidents):
        return order_incidents(incidents), symptoms  # warnings alone explain no failure: read the symptoms
    return fold_cascades(order_incidents(incidents), symptoms), []
