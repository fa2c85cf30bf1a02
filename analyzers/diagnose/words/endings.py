"""Two readings of the root finding that depend on what the log did around it.

- A collective timeout whose late rank was busy with work of its own (reasoning/late_rank.py): the cause is
  that work, and the remedy the timeout or the work (knowledge/late_work.py), not "find the rank".
- A crash after training finished (reasoning/stages.training_finished): the results are complete and the
  crash is in teardown; say so, and where the stack is.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, NamedTuple

from scope.analyzers.diagnose.knowledge.late_work import TAKE_DOWN_REMEDY
from scope.analyzers.diagnose.knowledge.remedies import GATHER_OPS, RANK_ZERO_ALONE, RANK_ZERO_GATHER_CAUSE
from scope.analyzers.diagnose.words.nccl_internal import network_explains

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from scope.analyzers.diagnose.knowledge.engines import Engine
    from scope.analyzers.diagnose.model import Anomaly, FileScan
    from scope.analyzers.diagnose.reasoning.late_rank import Busy
    from scope.analyzers.diagnose.reasoning.rootcause import Incident

    from scope.finding import Finding


class RanksHeard(NamedTuple):
    """The ranks the input holds lines of (the scanner's, '[rankN]:' tags, dumps), and whether a file is torchrun's
    tagged stream of its local ranks."""

    ranks: frozenset[int] = frozenset()
    tagged: bool = False


TIMEOUT_CODES = ("c10d_watchdog_timeout", "gloo_timeout", "c10d_pg_status", "timeout_silent_rank")
CRASH_KINDS = ("crash",)


def explain_timeout(
    finding: Finding, busy: list[Busy], engines: Sequence[Engine] = (), heard: RanksHeard | None = None
) -> None:
    """The timeout's cause where the log shows it: a rank busy with its own work, a serving engine's workers, or
    rank 0 alone reporting it while the input holds the other ranks, silent (HEARD)."""
    if finding.kind != "timeout" and finding.metrics.get("code") not in TIMEOUT_CODES:
        return
    if not busy and engines:  # no rank busy elsewhere, in a serving engine's workers (knowledge/engines.py)
        finding.suggestion = f"{engines[0].timeout_remedy} {finding.suggestion}"
        finding.metrics["engine"] = engines[0].name
        return
    if not busy:
        _rank_zero_alone(finding, heard or RanksHeard())
        return
    b = busy[0]
    took = f", {b.elapsed_s // 60} min into it" if b.elapsed_s else ""
    finding.summary += (
        f" The timeout is the symptom: the late rank was {b.work.what} (line {b.line}: '{b.text}'{took}), longer "
        "than the ranks waiting for it allow."
    )
    finding.suggestion = _limit_quoted(finding, b.limit) + b.work.remedy + (TAKE_DOWN_REMEDY if b.taken_down else "")
    finding.metrics["late_work"] = {"work": b.work.name, "line": b.line, "text": b.text, "elapsed_s": b.elapsed_s}


def _rank_zero_alone(finding: Finding, heard: RanksHeard) -> None:
    """A watchdog timeout only rank 0 reported while the other ranks are in the input and silent about it: rank
    0's own collective, issued by code run on rank 0 alone, leads the remedy; the search that confirms it (the
    Flight Recorder) follows (knowledge/remedies.RANK_ZERO_ALONE). Only for a gather (the collective rank-0-only
    code issues: model.state_dict() under FSDP) right after a line of a rank-0-only point (a save, an evaluation:
    details rank_zero_point); rank 0's output alone (the usual input) says nothing of the others, except where it is
    torchrun's tagged stream of every local rank ('[rank0]:')."""
    if finding.metrics.get("code") != "c10d_watchdog_timeout" or list(finding.ranks) != [0]:
        return
    details = finding.metrics.get("details")
    said: dict[str, Any] = details if isinstance(details, dict) else {}
    op = str(said.get("op") or "").lower()
    if op not in GATHER_OPS or (not heard.ranks - {0} and not heard.tagged):
        return
    named = said.get("op_raw") or op
    if not said.get("rank_zero_point"):  # rank-0-only code stays one of the usual causes, after them, not the lead
        finding.suggestion += RANK_ZERO_GATHER_CAUSE.format(named=named)
        return
    gather = ""
    if op in GATHER_OPS:
        gather = f" (here a gather, {named})" if op == "gather" else f" (here an all-gather, {named})"
    rest = finding.suggestion
    finding.suggestion = RANK_ZERO_ALONE.format(gather=gather) + (_lower_first(rest) or "enable the Flight Recorder.")
    finding.metrics["rank_zero_alone"] = True


def _lower_first(text: str) -> str:
    """TEXT to follow 'To check, ': its first word lowered only where it is an ordinary word ('Find'), not an
    acronym or a name ('NCCL', 'PyTorch')."""
    head = text.split(" ", 1)[0]
    if head[:1].isupper() and head[1:].islower():
        return text[0].lower() + text[1:]
    return text


def _limit_quoted(finding: Finding, said: str) -> str:
    """The timeout, so the remedy says what to raise it above: quoted only in the words the timeout line wrote
    (SAID, e.g. 'Timeout(ms)=1200000'); a limit a row read from other words ('Timed out waiting 1800000ms') is
    stated, not quoted."""
    from scope.analyzers.diagnose.knowledge.line_shapes import TIMEOUT_LIMIT, timeout_limit_ms

    m = TIMEOUT_LIMIT.search(said) if said else None
    details = finding.metrics.get("details")
    read = details.get("timeout_ms") if isinstance(details, dict) else None
    ms = timeout_limit_ms(m) if m else read if isinstance(read, int) else 0
    if ms <= 0:
        return ""
    took = f"{ms / 60_000:g} min" if ms >= 60_000 else f"{ms / 1000:g} s"
    return f"The waiting ranks gave up after {took}" + (f" ('{m.group(0)}'). " if m else ". ")


def explain_exit_crash(
    finding: Finding,
    incident: Incident,
    scans: list[FileScan],
    root: Path | None = None,
    stack_of: dict[int, Anomaly] | None = None,
) -> None:
    """Training finished before this crash (a log line saying so, or the hook's record of a normal end of the
    crashed rank): it happened at exit. Say so, and where its stack is."""
    if finding.kind not in CRASH_KINDS:
        return
    done = _finished_in_logs(incident, scans) or _finished_in_records(finding, root, _attempt_of(incident.first.file))
    if done is None:
        return
    line, text = done
    where = _stack(finding, incident.first.details, stack_of or {})
    gc = " while Python finalized (faulthandler: 'Garbage-collecting')" if any(s.finalizing for s in scans) else ""
    finding.summary = f"Training finished ({line}: '{text[:100]}') and the job crashed after it, at exit{gc}: " + (
        finding.summary
    )
    finding.suggestion = (
        "The training itself completed: check that the last checkpoint was written before the crash. The crash is in "
        f"teardown; {where}. At exit: destroy the process group once after the last collective "
        "(dist.destroy_process_group()), stop profilers, hooks and data-loader workers before the interpreter exits; "
        "a native crash (SIGSEGV / SIGABRT) in garbage collection at exit is a library's teardown bug (upgrade it, "
        "or end with os._exit(0) after saving); PYTHONFAULTHANDLER=1 prints the native stack. " + finding.suggestion
    )
    finding.metrics["after_training"] = {"finished": line, "stack": where, "finalizing": bool(gc)}


def _finished_in_logs(incident: Incident, scans: list[FileScan]) -> tuple[str, str] | None:
    first = incident.first
    for s in scans:
        if s.finished and (first.file == "run.json" or (first.file == s.path and first.line > s.finished[0])):
            return f"{s.path}:{s.finished[0]}", s.finished[1]
    return None


def _attempt_of(path: str | None) -> int | None:
    """The attempt a rank's file belongs to, where `scope run` kept an earlier attempt's output apart
    (ranks/<r>/attempt<N>.stderr.log)."""
    found = re.search(r"(?:^|/)attempt(\d+)\.[^/]*$", path or "")
    return int(found.group(1)) if found else None


def _finished_in_records(finding: Finding, root: Path | None, attempt: int | None) -> tuple[str, str] | None:
    from scope.analyzers.diagnose.readers.hook_end import rank_end

    if root is None:
        return None
    for r in finding.ranks:
        rec = rank_end(root, r, attempt)
        if rec and rec["state"] == "exited":
            return f"ranks/{r}/attempts.jsonl", f"rank {r} ended normally after step {rec['step']} (scope's hook)"
    return None


# Launcher reports whose only word is the exit status: the status' meaning is the diagnosis.
EXIT_REPORTS = (
    "child_exit",
    "deepspeed_launcher_exit",
    "mpirun_nonzero_exit",
    "unmatched_error",
    "fatal_signal",
    "spawn_process_signal",
    "k8s_container_signal_exit",
)


def explain_exit_status(finding: Finding, incident: Incident, scans: Sequence[FileScan] = ()) -> None:
    """A worker's end reported only as an exit status or signal: say what that signal means and what to check
    (knowledge/signals.py), and take the signal's kind for a bare crash (a SIGBUS is the container's /dev/shm, a
    configuration problem; a SIGKILL the OOM killer's; a SIGABRT after training steps c10d's watchdog's)."""
    from scope.analyzers.diagnose.knowledge import kill_senders, signals

    if finding.metrics.get("code") not in EXIT_REPORTS and not _child_process_error(finding):
        return
    found, lead = None, ""
    for a in incident.anomalies:
        d = a.details
        code = d.get("exitcode", d.get("exit_code"))
        said = signals.status_in_line(str(d.get("line_text") or _line_quoted(a)))  # never the row's own prose
        found = signals.meaning(code, d.get("signal")) or (said[1] if said else None)
        if found is None:
            continue
        if signals.meaning(code) is found:
            lead = f"The exit status {code} in the log is signal {found.number}, {found.name}. "
        elif said and said[1] is found and said[0] != found.name:
            lead = f"The log's '{said[0]}' is signal {found.number}, {found.name}. "
        break
    if found is None:
        return
    finding.summary += f" {found.name} is {found.meaning}."
    sender = _other_sender(incident, scans) if found.name == "SIGKILL" else None
    # a SIGKILL the log shows another sender of (knowledge/kill_senders.py): that sender's check, not the OOM's
    check = kill_senders.sender_check(sender) if sender is not None else found.check
    own = _own_abort(incident, scans) if found.kind_mid_run else None
    if own is not None and kill_senders.NO_ACTIVE_EXCEPTION in own[1]:
        check = f"{kill_senders.NO_ACTIVE_EXCEPTION_CHECK} {check}"
    starting = _native_init(incident, scans) if found.name == "SIGSEGV" else None
    if starting is not None:  # a library's start-up lines just before the fault name whose install to check
        line, text, row = starting
        check = f"It crashed while {row.library} was starting (line {line}: '{text[:120]}'): {row.check}. {check}"
    if check not in finding.suggestion:
        finding.suggestion = f"{lead}{check} {finding.suggestion}"
    finding.metrics["signal"] = {"name": found.name, "number": found.number}
    kind = found.kind
    if sender is not None:
        kind = "crash"
        finding.summary += f" The log shows {sender}, not an out-of-memory kill."
        finding.metrics["signal"]["killed_by"] = sender
    stepped = _stepped_before(incident, scans) if found.kind_mid_run else None
    if own is not None:
        finding.summary += f" The rank printed its own abort before it (line {own[0]}: '{own[1]}')."
        if kill_senders.NO_ACTIVE_EXCEPTION in own[1]:
            finding.summary += f" That line is {kill_senders.NO_ACTIVE_EXCEPTION_MEANS}."
        finding.metrics["signal"]["own_abort"] = own[0]
    if stepped is not None:
        kind = found.kind_mid_run
        finding.summary += " " + found.mid_run.format(line=stepped[0], text=stepped[1])
        finding.metrics["signal"]["after_step"] = stepped[0]
        if found.check_mid_run and found.check_mid_run not in finding.suggestion:
            finding.suggestion = f"{found.check_mid_run} {finding.suggestion}"
    if finding.kind == "crash":
        finding.kind = kind


def _child_process_error(finding: Finding) -> bool:
    """Python's CalledProcessError: a wrapper (accelerate's simple_launcher, a training CLI) reporting its child's
    end, 'died with <Signals.SIGKILL: 9>' for a signal (Lib/subprocess.py) - an exit report like a launcher's."""
    details = finding.metrics.get("details")
    return isinstance(details, dict) and str(details.get("exception", "")).endswith("CalledProcessError")


def _stepped_before(incident: Incident, scans: Sequence[FileScan]) -> tuple[int, str] | None:
    """The last training-step line of the file that reports the end, when it comes before that report, in a job
    that runs collectives and with no abort the rank printed itself after that step (a glibc assertion, a
    'terminate called'): only then is the watchdog the likely sender (knowledge/kill_senders.py)."""
    first = incident.first
    for s in scans:
        if s.path != first.file or not s.stepped or s.stepped[0] >= first.line:
            continue
        if s.collectives and (s.own_abort is None or s.own_abort[0] > first.line):
            return s.stepped
    return None


def _own_abort(incident: Incident, scans: Sequence[FileScan]) -> tuple[int, str] | None:
    first = incident.first
    own = next((s.own_abort for s in scans if s.path == first.file and s.own_abort), None)
    return own if own is not None and own[0] < first.line else None


def _native_init(incident: Incident, scans: Sequence[FileScan]) -> Any:
    first = incident.first
    return next((s.native_init for s in scans if s.path == first.file and s.native_init), None)


def _other_sender(incident: Incident, scans: Sequence[FileScan]) -> str | None:
    first = incident.first
    return next((s.kill_sender for s in scans if s.path == first.file and s.kill_sender), None)


SYSTEM_ERROR_CODES = ("nccl_test_failure", "nccl_system_error", "nccl_error_return")


def single_host_system_error(finding: Finding, hosts: int) -> None:
    """NCCL's 'unhandled system error' on one host: the system call that fails there is most often the
    container's /dev/shm (the SHM transport), not the network the generic advice looks at. One host known: the
    ranks the log names all run there."""
    if hosts != 1 or finding.metrics.get("code") not in SYSTEM_ERROR_CODES or "system error" not in finding.summary:
        return
    finding.suggestion = (
        "On one host the system call that fails is most often /dev/shm too small in a container (NCCL's SHM "
        "transport): run it with --shm-size=16g or --ipc=host (Kubernetes: an emptyDir with medium: Memory at "
        "/dev/shm); NCCL_SHM_DISABLE=1 confirms it; then the locked-memory limit (ulimit -l). " + finding.suggestion
    )


def name_the_setting(finding: Finding, incident: Incident, scans: list[FileScan]) -> None:
    """The failing step reads a variable the log shows set: name it and its value first in the remedy."""
    from scope.analyzers.diagnose.knowledge.env_settings import NET_PLUGIN, action, plugin_topology_advice, read_by

    first = incident.first
    env = next((s.env for s in scans if s.path == first.file and s.env), None)
    if not env or finding.severity == "info":
        return
    reads = read_by(_line_quoted(first))
    plugin = env.get(NET_PLUGIN)
    if plugin and "NCCL_TOPO_FILE" in reads and not any(v in env for v in reads):
        finding.suggestion = (
            f"This log loads the net plugin {plugin[0]} (line {plugin[1]}): {plugin_topology_advice(plugin[0])}. "
            + finding.suggestion
        )
        finding.metrics["net_plugin"] = plugin[0]
        return
    named = [v for v in reads if v in env]
    if not named:
        return
    var = named[0]
    value, line = env[var]
    finding.suggestion = (
        f"The environment sets {var}={value} (line {line}) and the failing step reads it: {action(var, value)} "
        + finding.suggestion
    )
    finding.metrics["setting"] = {"variable": var, "value": value, "line": line}


def _line_quoted(first: Anomaly) -> str:
    """The log line a signature's anomaly quotes after its meaning: scope's own prose ('rail-only topology')
    must not decide which variables the failing step reads."""
    meaning = first.details.get("meaning")
    if isinstance(meaning, str) and first.message.startswith(meaning):
        return first.message[len(meaning) :]
    return first.message


def _stack(finding: Finding, details: dict[str, Any], stack_of: dict[int, Anomaly]) -> str:
    frames = finding.metrics.get("traceback") or details.get("frames") or []
    if frames:
        return f"the stack ends in {frames[-1]}"
    for r in finding.ranks:
        a = stack_of.get(r)
        if a is not None and a.details.get("frame"):
            return f"rank {r}'s stack ({a.evidence}) is at {a.details['frame']}"
    return "the log holds no stack of it (rerun with PYTHONFAULTHANDLER=1 to get one)"


# A line NCCL printed about its own failure (a WARN, an error return, a failed test call)
_FROM_NCCL = re.compile(
    r"NCCL WARN|NCCL error|NCCL failure|nccl(?:Internal|System|UnhandledCuda|InvalidUsage)Error|\bbootstrap\.cc|"
    r"transport(?:/\w+)?\.cc|proxy\.cc|enqueue\.cc|init\.cc"
)
_NAMES_RELEASE = re.compile(r"(?i)NCCL (?:release|version)|newer NCCL|upgrade NCCL|NCCL \d\.\d")
_VERSION_IN = re.compile(r"NCCL version (\d+\.\d+\.\d+)")


def _nccl_version(lines: Sequence[Anomaly], version: str | None) -> str | None:
    """The NCCL version the log's scan read, else the first one these lines name."""
    if version is not None:
        return version
    m = next((m for a in lines if (m := _VERSION_IN.search(a.message))), None)
    return m.group(1) if m else None


def name_the_nccl_release(finding: Finding, incident: Incident, version: str | None, rccl: str | None = None) -> None:
    """An NCCL failure that no setting in the log explains: the release itself is the next suspect (an NCCL
    bug fixed, or brought, by a release), named with the version the log runs (RCCL's where the log runs RCCL).
    Another collective library's failure (HCCL, oneCCL: knowledge/other_collectives.py) is not NCCL's."""
    from scope.analyzers.diagnose.knowledge.other_collectives import library_of, release_fix

    first = incident.first
    if finding.severity == "info" or finding.kind not in ("nccl_error", "config_error", "crash"):
        return
    if library_of(first.details.get("signature")):
        return
    if finding.kind != "nccl_error" and not (
        first.details.get("cause") == "nccl_bug" or _FROM_NCCL.search(first.message)
    ):
        return
    if first.details.get("cause") == "configuration" and first.details.get("confidence") == "high":
        return  # a setting the line names is the cause
    if _NAMES_RELEASE.search(finding.suggestion or ""):
        return
    from scope.analyzers.diagnose.knowledge.nccl_own_topology import runs_nccl

    version = _nccl_version(incident.anomalies, version)
    runs = runs_nccl(version)
    finding.metrics["nccl_version"] = version
    if first.details.get("nccl_result") == "internal" and not network_explains(incident):
        # nothing else in the incident explains the internal error: the release is its first suspect
        finding.suggestion = (
            f"{'RCCL' if rccl else 'NCCL'} returned an internal error: {release_fix(runs, rccl, 'first')}, the same "
            f"version on every node. {finding.suggestion}"
        ).strip()
        return
    finding.suggestion = f"{finding.suggestion} If the settings check out, {release_fix(runs, rccl)}.".strip()


def nccl_own_topology(finding: Finding, incident: Incident, scans: Sequence[FileScan], version: str | None) -> None:
    """A topology WARN that is NCCL's own failure (knowledge/nccl_own_topology.py): its fix built from what the log
    shows, in place of the reader's (which knew neither): the release the log runs against the one that fixed it,
    and a topology the user supplied (NCCL_TOPO_FILE / NCCL_GRAPH_FILE set, or a net plugin that hands NCCL its
    own), which makes it a configuration error named by name_the_setting."""
    from scope.analyzers.diagnose.knowledge.env_settings import NET_PLUGIN
    from scope.analyzers.diagnose.knowledge.nccl_own_topology import USER_TOPOLOGY_VARIABLES, remedy, row_of

    first = incident.first
    row = row_of(str(first.details.get("own_topology") or ""))
    if row is None or finding.kind != "nccl_error":
        return
    env = next((s.env for s in scans if s.path == first.file and s.env), None) or {}
    handed = [f"the net plugin {env[NET_PLUGIN][0]}"] if NET_PLUGIN in env else []
    supplied = " / ".join(handed + [v for v in USER_TOPOLOGY_VARIABLES if v in env])
    if supplied:
        finding.kind = "config_error"
        finding.metrics["cause"] = "configuration"
    version = _nccl_version((*incident.anomalies, *incident.cascade), version)
    if version:
        finding.metrics["nccl_version"] = version
    before, after = str(first.details.get("remedy") or ""), remedy(row, version, supplied)
    suggestion = finding.suggestion or ""
    finding.suggestion = suggestion.replace(before, after) if before and before in suggestion else after


# Sequence numbers count a process group's collectives from 1: a timeout at one of the first means the ranks
# never completed a data transfer together (not one rank's late work, which the log would show).
EARLY_SEQ = 10


def explain_early_timeout(finding: Finding, incident: Incident) -> None:
    """A timeout at one of a group's first collectives that no late work explains: the GPU-to-GPU path
    itself is the first suspect (PCIe peer-to-peer through ACS / an IOMMU, a driver's P2P bug), before a
    missing rank. Sources: NVIDIA/nccl#1439 and #1509, huggingface/accelerate#314 (NCCL_P2P_DISABLE=1 or a
    driver change fixed them), RLHFlow/Online-RLHF#22 (NCCL_P2P_DISABLE=1 with NCCL_IB_DISABLE=1: tried one at a
    time here, so a passing run names the path),
    determined-ai/determined#8915 (NCCL_SHM_DISABLE=1), NCCL's troubleshooting page (PCI ACS)."""
    if finding.kind != "timeout" or "late_work" in finding.metrics or finding.severity == "info":
        return
    seqs = [s for a in incident.anomalies if isinstance(s := a.details.get("seq"), int)]
    if not seqs or max(seqs) > EARLY_SEQ:
        return
    seq = max(seqs)
    hosts = {a.host for a in incident.anomalies if a.host}
    # one setting per rerun, so a run that passes names the path that failed; IB only where nodes talk
    across = (
        "; across nodes, NCCL_IB_DISABLE=1 as a rerun of its own (it moves the job onto TCP sockets)"
        if len(hosts) != 1
        else ""
    )
    finding.suggestion = (
        f"The timeout hit collective #{seq}, one of the group's first: the ranks never finished a transfer "
        "together. Change one setting per rerun: NCCL_P2P_DISABLE=1 first (the GPU-to-GPU path), then "
        f"NCCL_SHM_DISABLE=1{across}. If P2P off runs: on GeForce / consumer cards or a driver known to "
        "misreport P2P keep it off (or change the driver); on servers fix the path instead (disable PCI ACS in "
        "the BIOS, boot with iommu=pt) - NCCL_DEBUG=INFO shows the transport (P2P/IPC, SHM, NET) each channel "
        "uses. " + (finding.suggestion or "")
    ).strip()
    finding.metrics["early_collective"] = seq


def explain_exit_hang(finding: Finding, incident: Incident, scans: list[FileScan]) -> None:
    """The work finished before this hang or timeout (a log line saying so): the job hung in teardown,
    destroying its communicators (NCCL >= 2.23 waits there for every rank: NVIDIA/Fuser#3055)."""
    if finding.kind not in ("hang", "timeout") or finding.severity == "info" or "late_work" in finding.metrics:
        return
    done = _finished_in_logs(incident, scans)
    if done is None:
        return
    line, text = done
    finding.summary = f"The work finished ({line}: '{text[:100]}') and the job hung after it, in teardown: " + (
        finding.summary
    )
    finding.suggestion = (
        "The results are complete: check that the last checkpoint was written. At exit, destroy the process "
        "groups once, on every rank, in the same order (sub-groups first, then dist.destroy_process_group()), "
        "after the last collective and not from garbage collection or atexit in a rank-dependent order: NCCL "
        ">= 2.23 waits in communicator teardown until every rank tears the same communicator down, and a "
        "collective one rank never finished blocks it too. " + (finding.suggestion or "")
    ).strip()
    finding.metrics["after_training"] = {"finished": line, "teardown": "hang"}


def lead_with_own_advice(finding: Finding, incident: Incident) -> None:
    """The fix the root cause's own message names (knowledge/own_advice.py, read per line by
    reasoning/file_reading.py) goes first, quoted and marked as the message's, before scope's checklist: the
    first of the incident's lines (in causal order) that carries one."""
    lines = sorted(incident.anomalies, key=lambda a: a.sort_key()) + [a for m in incident.merged for a in m.anomalies]
    advice = next((str(a.details["_own_advice"]) for a in lines if a.details.get("_own_advice")), None)
    checklist = finding.suggestion or ""
    # an instruction the checklist says already (DDP's find_unused_parameters=True, the allocator's variable) is
    # not said twice; own_advice joins a message's two instructions with ' ... '
    said = [
        q for q in (advice or "").split(" ... ") if q not in checklist and not _names_the_same_setting(q, checklist)
    ]
    advice = " ... ".join(said)
    if not advice:
        return
    if incident.code in _ADVICE_AFTER:
        finding.suggestion = f'{checklist} The error message\'s own advice: "{advice}".'.strip()
    else:
        finding.suggestion = f'The error message\'s own advice: "{advice}". Then: {checklist}'.rstrip()


# Classes whose checklist's first step is the fix and the message's advice a condition on it: the allocator's
# 'If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=...' comes after 'Lower the
# micro-batch size ...', not ahead of it.
_ADVICE_AFTER = frozenset({"cuda_oom"})
# A setting an instruction names: an environment variable or keyword set ('NCCL_MNNVL_ENABLE=0',
# 'find_unused_parameters=True'), or a backticked identifier ('`RAY_memory_usage_threshold`')
_SETTING = re.compile(r"\b([A-Za-z_]\w{3,})=|`([A-Za-z_][\w.]{3,})`")


def _names_the_same_setting(advice: str, checklist: str) -> bool:
    """The instruction sets a setting the checklist already names (the same VAR= or backticked identifier)."""
    settings = {(a or b).rsplit(".", 1)[-1] for a, b in _SETTING.findall(advice)}
    return any(re.search(rf"\b{re.escape(name)}\b", checklist) for name in settings)
