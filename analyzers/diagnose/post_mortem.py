"""diagnose(path): discover -> read in parallel -> Flight Recorder analysis -> root cause -> the Analysis."""

from __future__ import annotations

import dataclasses
import re
import time
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scope.analyzers.diagnose.knowledge.timeout_knobs import name_framework_knobs
from scope.analyzers.diagnose.knowledge.user_signatures import find_user_signatures
from scope.analyzers.diagnose.model import TEARDOWN, Anomaly, FileScan, NcclInfo
from scope.analyzers.diagnose.readers import infolines, signature_scan
from scope.analyzers.diagnose.readers.inputs import Inputs, discover, run_jobs
from scope.analyzers.diagnose.readers.torchrun import signal_name
from scope.analyzers.diagnose.reasoning import rootcause
from scope.analyzers.diagnose.reasoning.file_reading import read_text
from scope.analyzers.diagnose.reasoning.fr_analysis import FRAnalysis, analyze_dumps
from scope.analyzers.diagnose.reasoning.symptoms import symptom_incident
from scope.analyzers.diagnose.words.diverged import diverged_first
from scope.analyzers.diagnose.words.endings import (
    RanksHeard,
    explain_early_timeout,
    explain_exit_crash,
    explain_exit_hang,
    explain_exit_status,
    explain_timeout,
    lead_with_own_advice,
    name_the_nccl_release,
    name_the_setting,
    nccl_own_topology,
    single_host_system_error,
)
from scope.analyzers.diagnose.words.findings import incident_finding
from scope.analyzers.diagnose.words.report import diagnosis_analysis

from scope.causality import assign_ids
from scope.config import config_notes
from scope.errors import ScopeError
from scope.finding import Finding
from scope.flight_recorder import FRDump
from scope.inputs import Inventory, inventory_of
from scope.warnings import InputWarning, as_warnings, texts, unread, unread_file

if TYPE_CHECKING:
    from scope.result import Analysis

_DUMP_SEQ = re.compile(r"^(\d+)-")


def diagnose(
    source: Path | str | Inventory,
    workers: int | None = None,
    engine: str = "local",
    scheduler: str | None = None,
) -> Analysis:
    """Name the root cause of a failed or hung run from its logs, dumps and kernel messages (the files
    PATH's inventory lists, scope.inputs: `scope analyze` lists PATH once for every analyzer), read on
    scope.engine (ENGINE, SCHEDULER: as ingest reads the ranks' traces). The result is the Analysis every
    command shows (words/report.py): findings root cause first, the `fr` and `hosts` tables, warnings and
    the diagnosis' sections (path, verdict, nccl, inputs, elapsed_s)."""
    t0 = time.perf_counter()
    inventory = inventory_of(source)
    path = inventory.path
    inputs = discover(inventory)
    if path.is_file() and not inputs.jobs:
        raise ScopeError(f"{path}: nothing to diagnose in this file (not a log, dump or error file)")
    user = find_user_signatures(inventory)
    with signature_scan.user_rows(user):
        scans, dumps, errors = run_jobs(inputs, workers, user, engine, scheduler, read=read_text)
    if path.is_file() and errors and not scans and not dumps:
        raise ScopeError(f"{path}: {str(errors[0]).split(': ', 1)[-1]}")
    dumps = _latest_dump_per_rank(dumps)
    nccl = NcclInfo()
    for s in scans:
        nccl.merge(s.nccl)
    rank_hosts = _rank_hosts(inputs, scans, nccl)
    world = _world(inputs, scans, dumps, nccl, rank_hosts)
    anomalies = [a for s in scans for a in s.anomalies] + _manifest_exits(inputs)
    anomalies, foreign = _not_the_jobs_deaths(anomalies, inputs)
    anomalies.extend(infolines.mismatches([c for s in scans for c in s.coll_calls]))
    _latest_stacks_only(anomalies)
    fr_rows: list[dict[str, Any]] = []
    if dumps:
        labels = {d.rank: _display(d, inputs) for d in dumps if d.rank is not None}
        declared = set(range(inputs.manifest.world_size)) if inputs.manifest and inputs.manifest.world_size else None
        fr, unusable = _analyze_sparing(dumps, declared, labels)
        errors.extend(unusable)
        if fr is not None:
            anomalies.extend(fr.anomalies)
            fr_rows = [r for r in fr.rows if r["role"] != "unknown"]
    _attach_hosts(anomalies, rank_hosts, inputs)
    incidents, symptoms = rootcause.split(anomalies)
    if symptoms:
        symptom = symptom_incident(symptoms, world)
        incidents = ([symptom] if symptom else []) + incidents
    stack_of = {a.rank: a for a in anomalies if a.code.startswith("stack_") and a.rank is not None}
    if not any(i.severity != "info" for i in incidents):
        incidents = _last_resort(scans) + incidents
    findings = [incident_finding(i, rank_hosts, stack_of) for i in incidents]
    _link_effects(incidents, findings)
    if findings:
        seen = {r for s in scans for r in s.ranks_seen | s.rank_tags} | {d.rank for d in dumps if d.rank is not None}
        tagged = any(s.rank_tags for s in scans)
        explain_timeout(
            findings[0],
            [s.late for s in scans if s.late is not None],
            [s.engine for s in scans if s.engine],
            RanksHeard(frozenset(seen), tagged),
        )
        explain_early_timeout(findings[0], incidents[0])
        explain_exit_hang(findings[0], incidents[0], scans)
        nccl_own_topology(findings[0], incidents[0], scans, nccl.version)
        name_the_setting(findings[0], incidents[0], scans)
        name_the_nccl_release(findings[0], incidents[0], nccl.version, nccl.rccl)
        explain_exit_status(findings[0], incidents[0], scans)
        single_host_system_error(findings[0], len(set(rank_hosts.values())))
        root = inputs.root if inputs.manifest is not None else None  # hook records: a run directory's
        explain_exit_crash(findings[0], incidents[0], scans, root, stack_of)  # its words go first, after ...
        lead_with_own_advice(findings[0], incidents[0])  # ... the fix the failing line names itself
        diverged_first(findings[0], incidents[0], scans)  # a loss gone NaN before the fault: the divergence first
    frameworks = {f for s in scans for f in s.frameworks}
    for finding in findings:
        finding.suggestion = name_framework_knobs(finding.suggestion, frameworks)
    # what could not be read makes the diagnosis partial (exit 4): the files not read and the parts of files
    # the readers skipped (a huge log's middle: its bytes); notes and others' deaths do not
    not_read = errors + inputs.skipped + [u for s in scans for u in s.unread]
    return diagnosis_analysis(
        inventory,
        findings,
        warnings=not_read + config_notes(inventory) + as_warnings([n for s in scans for n in s.notes] + foreign),
        fr=fr_rows,
        hosts=_hosts_table(anomalies, rank_hosts, incidents),
        nccl=_nccl_summary(nccl),
        read={
            "logs": sum(1 for j in inputs.jobs if j.kind != "dump"),
            "dumps": len(dumps),
            "ranks": len(world),
            "hosts": len(set(rank_hosts.values())),
            "skipped": texts(inputs.skipped),
            "unreadable": texts(not_read),
        },
        elapsed_s=time.perf_counter() - t0,
        stopped=_where_stopped(scans),
    )


def _where_stopped(scans: list[FileScan]) -> dict[str, Any]:
    """The stage the logs stopped in: the least advanced log that did not end cleanly (what the others wait
    for), else the furthest clean end; with the file it is read from."""
    from scope.analyzers.diagnose.knowledge.stages import STAGES

    stops = [(s.path, s.stop) for s in scans if s.stop is not None]
    if not stops:
        return {}
    open_ = [x for x in stops if not x[1].clean]
    path, stop = min(open_ or stops, key=lambda x: (STAGES.index(x[1].stage), x[0]))
    return {"file": path, **stop.to_dict()}


def _link_effects(incidents: list[rootcause.Incident], findings: list[Finding]) -> None:
    """A consequence (rootcause._link_consequences) points at its cause's finding: caused_by / explains."""
    if not any(i.caused_by is not None for i in incidents):
        return
    assign_ids(findings)
    of = {id(i): f for i, f in zip(incidents, findings, strict=True)}
    for inc, f in zip(incidents, findings, strict=True):
        cause = of.get(id(inc.caused_by)) if inc.caused_by is not None else None
        if cause is None:
            continue
        f.caused_by = cause.id
        f.metrics["caused_by_why"] = inc.why
        f.summary += f" A consequence of the earlier error ({cause.metrics.get('code', cause.kind)}): {inc.why}."


_FR_FAULTS = (TypeError, ValueError, KeyError, IndexError, AttributeError, RecursionError, OverflowError)
LEAVE_ONE_OUT_MAX = 64  # dumps: above this, trying every set of all but one costs too much


def _analyze_sparing(
    dumps: list[FRDump], declared: set[int] | None, labels: dict[int, str]
) -> tuple[FRAnalysis | None, list[InputWarning]]:
    """The dumps' analysis; a dump that loaded but holds something the analysis did not expect costs only
    itself (one damaged dump of 16 once lost all 16's diagnosis). When the whole set fails, the dumps that
    fail alone are left out; when none does (the fault shows only beside the others' entries), the one
    whose leaving out lets the rest be analyzed. Each dump left out is named; the rest is analyzed."""
    try:
        return analyze_dumps(dumps, declared, labels), []
    except _FR_FAULTS as whole:
        first: Exception = whole
    bad = {id(d): exc for d in dumps if (exc := _fault_of([d], declared, labels)) is not None}
    if not bad and len(dumps) <= LEAVE_ONE_OUT_MAX:
        for d in dumps:
            if _fault_of([o for o in dumps if o is not d], declared, labels) is None:
                bad = {id(d): first}
                break
    kept = [d for d in dumps if id(d) not in bad]
    if bad and kept:
        try:
            analysis = analyze_dumps(kept, declared, labels)
        except _FR_FAULTS as exc:
            first = exc
        else:
            return analysis, [_not_analyzed(d, bad[id(d)]) for d in dumps if id(d) in bad]
    return None, [unread(f"Flight Recorder dumps ({len(dumps)}): not analyzed ({type(first).__name__}: {first})"[:400])]


def _fault_of(dumps: list[FRDump], declared: set[int] | None, labels: dict[int, str]) -> Exception | None:
    try:
        analyze_dumps(dumps, declared, labels)
    except _FR_FAULTS as exc:
        return exc
    return None


def _not_analyzed(dump: FRDump, exc: Exception) -> InputWarning:
    what = f"{dump.path}: not analyzed, the others were ({type(exc).__name__}: {str(exc)[:200]})"
    return unread_file(str(dump.path), what)


def _last_resort(scans: list[FileScan]) -> list[rootcause.Incident]:
    """Nothing explained the failure: where the run stopped, else the first unexplained error line (low confidence)."""
    for pick in (lambda s: s.stalled, lambda s: s.guess):
        found = sorted((a for a in map(pick, scans) if a is not None), key=lambda a: (a.sort_key(), a.file, a.line))
        if found:
            a = found[0]
            ranks = a.details.get("ranks") or []
            extra = [dataclasses.replace(a, rank=r) for r in ranks[1:]] if len(ranks) > 1 else []
            if len(ranks) > 1:
                a.rank = ranks[0]
            return [rootcause.Incident(key=(a.code,), anomalies=[a, *extra], kind=a.kind, code=a.code)]
    return []


def _display(d: FRDump, inputs: Inputs) -> str:
    try:
        return str(d.path.relative_to(inputs.root))
    except ValueError:
        return d.path.name


def _latest_dump_per_rank(dumps: list[FRDump]) -> list[FRDump]:
    """scope's hook may dump a rank several times (fr/001-hang.pkl, fr/002-exit.pkl): keep the last."""
    best: dict[int | None, FRDump] = {}
    for d in dumps:
        m = _DUMP_SEQ.match(d.path.name)
        key = (int(m.group(1)) if m else 0, d.path.stat().st_mtime if d.path.exists() else 0)
        cur = best.get(d.rank)
        if cur is None or key >= getattr(cur, "_key", (0, 0)):
            d._key = key  # type: ignore[attr-defined]
            best[d.rank] = d
    return [d for r, d in best.items() if r is not None]


def _latest_stacks_only(anomalies: list[Anomaly]) -> None:
    """Several stack dumps of one rank: only the latest says where it stands now. Dumps with no rank are told
    apart by their process id (py-spy dumps of several processes pasted into one log)."""
    last: dict[tuple[str, str, int], Anomaly] = {}

    def order(a: Anomaly) -> tuple[int, str, int]:  # timed dumps (scope's hook) beat untimed ones
        return (a.time_ns or 0, a.file, a.line)

    for a in anomalies:
        if not a.code.startswith("stack_"):
            continue
        who = _stack_owner(a)
        if who not in last or order(a) > order(last[who]):
            last[who] = a
    keep = {id(a) for a in last.values()}
    anomalies[:] = [a for a in anomalies if not a.code.startswith("stack_") or id(a) in keep]


def _stack_owner(a: Anomaly) -> tuple[str, str, int]:
    """Whose stack a dump is: its rank, else its process id; faulthandler names neither, so each of its dumps
    is a process of its own (several pasted into one log are several processes, not one dumped again)."""
    if a.rank is not None:
        return ("rank", "", a.rank)
    pid = a.details.get("pid")
    if isinstance(pid, int):
        return ("pid", "", pid)
    return ("dump at", a.file, a.line)


def _rank_hosts(inputs: Inputs, scans: list[FileScan], nccl: NcclInfo) -> dict[int, str]:
    out: dict[int, str] = {}
    for s in scans:
        out.update(s.rank_hosts)
    out.update(nccl.rank_hosts)
    if inputs.manifest:
        for r in inputs.manifest.ranks:
            if r.host:
                out[r.rank] = r.host
    for job in inputs.jobs:
        if job.rank is not None and job.host and job.rank not in out:
            out[job.rank] = job.host
    return out


def _world(
    inputs: Inputs, scans: list[FileScan], dumps: list[FRDump], nccl: NcclInfo, rank_hosts: dict[int, str]
) -> set[int]:
    m = inputs.manifest
    if m and m.world_size:
        return set(range(m.world_size))
    if m and m.ranks:
        return {r.rank for r in m.ranks}
    if nccl.nranks:
        return set(range(nccl.nranks))
    world = set(rank_hosts) | {d.rank for d in dumps if d.rank is not None}
    for s in scans:
        world |= s.ranks_seen
    return world


# Process deaths the kernel log reports for whichever process it was (the log is the host's, not the job's).
HOST_PROCESS_DEATHS = ("segfault", "host_oom_kill")


def _not_the_jobs_deaths(anomalies: list[Anomaly], inputs: Inputs) -> tuple[list[Anomaly], list[str]]:
    """A run whose every rank exited 0 did not die of a process the kernel killed or saw segfault on its
    host: unless that process is one of its ranks, it is another job's (a shared host's kernel log)."""
    m = inputs.manifest
    if m is None or not m.ranks or any(r.exit_code != 0 or r.signal for r in m.ranks):
        return anomalies, []
    rank_pids = {r.pid for r in m.ranks if r.pid}
    keep, notes = [], []
    for a in anomalies:
        if a.code in HOST_PROCESS_DEATHS and a.details.get("pid") not in rank_pids:
            notes.append(f"{a.evidence}: {a.message}: not a rank of this run, whose ranks all exited 0 (ignored)")
        else:
            keep.append(a)
    return keep, notes


def _manifest_exits(inputs: Inputs) -> list[Anomaly]:
    """run.json's exit status per rank, as teardown-level anomalies."""
    m = inputs.manifest
    if not m:
        return []
    out = []
    for r in m.ranks:
        sig = r.signal or (signal_name(r.exit_code) if r.exit_code is not None and r.exit_code < 0 else None)
        if not sig and not r.exit_code:
            continue
        what = f"signal {sig}" if sig else f"exit code {r.exit_code}"
        out.append(
            Anomaly(
                code="child_exit",
                kind="crash",
                level=TEARDOWN,
                message=f"rank {r.rank} ended with {what}",
                file="run.json",
                rank=r.rank,
                host=r.host or None,
                time_ns=r.end_ns,
                severity="info",
                details={"exitcode": r.exit_code, "signal": sig, "pid": r.pid},
            )
        )
    return out


def _attach_hosts(anomalies: list[Anomaly], rank_hosts: dict[int, str], inputs: Inputs) -> None:
    """Fill hosts from ranks, and ranks of kernel-log lines from the pids in run.json."""
    pid_rank: dict[tuple[str | None, int], int] = {}
    if inputs.manifest:
        for r in inputs.manifest.ranks:
            if r.pid:
                pid_rank[(r.host or None, r.pid)] = r.rank
    offsets = {h.name: h.clock_offset_ns for h in inputs.manifest.hosts} if inputs.manifest else {}
    for a in anomalies:
        if a.rank is None and "pid" in a.details and pid_rank:
            a.rank = pid_rank.get((a.host, a.details["pid"]))
        if a.host is None and a.rank is not None:
            a.host = rank_hosts.get(a.rank)
        if a.time_ns is not None and offsets.get(a.host or ""):  # each host's clock onto the run clock
            a.time_ns += offsets[a.host or ""]


def _nccl_summary(nccl: NcclInfo) -> dict[str, Any]:
    out = nccl.to_dict()
    nets = nccl.networks
    if "OFI" in nets:
        out["network"] = "OFI/" + "/".join(sorted(n for n in nets if n not in ("OFI",))) if len(nets) > 1 else "OFI"
    elif nets:
        out["network"] = "/".join(sorted(nets))
    return out


def _hosts_table(anomalies: list[Anomaly], rank_hosts: dict[int, str], incidents: list[Any]) -> list[dict[str, Any]]:
    ranks_of: dict[str, set[int]] = defaultdict(set)
    for r, h in rank_hosts.items():
        ranks_of[h].add(r)
    per_host: dict[str, list[Anomaly]] = defaultdict(list)
    for a in anomalies:
        if a.host:
            per_host[a.host].append(a)
            if a.rank is not None:
                ranks_of[a.host].add(a.rank)
    root_hosts = set(incidents[0].hosts) if incidents else set()
    fault_hosts = {h for i in incidents for h in i.hosts}
    rows = []
    for host in sorted(set(ranks_of) | set(per_host)):
        items = sorted(per_host.get(host, []), key=lambda a: a.sort_key())
        serious = [a for a in items if a.severity != "info"]
        status = (
            "root cause"
            if host in root_hosts
            else ("fault" if host in fault_hosts else ("errors" if serious else "ok"))
        )
        rows.append(
            {
                "host": host,
                "ranks": sorted(ranks_of.get(host, ())),
                "n_ranks": len(ranks_of.get(host, ())),
                "status": status,
                "anomalies": len(items),
                "first_anomaly": (serious or items)[0].message if items else "",
                "codes": sorted({a.code for a in items}),
            }
        )
    return rows
