"""PyTorch-side log lines: c10d watchdog (every format era), gloo, torchrun reports, Python tracebacks.

Formats handled (see ../shared/data/failure_log_samples.txt for real examples):
  Watchdog caught collective operation timeout: WorkNCCL(SeqNum=N, OpType=OP[, NumelIn=a, NumelOut=b],
      Timeout(ms)=T) ran for M milliseconds before timing out.      (torch 1.10 ... 2.7+)
  Work WorkNCCL(...) timed out in blocking wait.
  [PG 1 Rank 0] / [PG ID 0 PG GUID 0(default_pg) Rank 1] / [PG 0 (default_pg) Rank 7] ... detected by
      watchdog at work: W, last enqueued NCCL work: E, last completed NCCL work: C   (and the 2.7 wording)
  Heartbeat monitor timed out / watchdog got stuck for N seconds / Terminating ... after dump
  gloo: Timed out waiting Nms for recv|send operation; Connection reset/closed by peer; size mismatch
(torchrun's own lines: torchrun.py)
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from scope.analyzers.diagnose.knowledge.c10d_groups import GROUP_RANK, group_fields
from scope.analyzers.diagnose.model import APPLICATION, MISMATCH, PEER_LOST, STALL, TEARDOWN
from scope.analyzers.diagnose.readers import nccl, signature_scan
from scope.analyzers.diagnose.readers.lines import Parsed

from scope.op_names import canonical_op
from scope.units import clip

QUOTE_CHARS = 300  # characters of a message kept in its anomaly

if TYPE_CHECKING:
    from scope.analyzers.diagnose.model import Anomaly
    from scope.analyzers.diagnose.readers.scan import Scanner

# torch <= 1.9 printed no SeqNum and sometimes a TensorShape=[...] field.
_WORK = (
    r"Work(?:NCCL|Gloo|XCCL)?\((?:SeqNum=(\d+), )?OpType=(\w+)(?:, NumelIn=(\d+), NumelOut=(\d+))?"
    r"(?:, \w++=(?>\[[^\]]*\]|[^,)]*))*?,\s*Timeout\(ms\)=(\d+)\)"
)
_WATCHDOG = re.compile(r"(?:Watchdog c|C)aught collective operation timeout: " + _WORK + r" ran for (\d+) milliseconds")
_BLOCKING = re.compile(_WORK + r" timed out in blocking wait")
# The same message cut before its end (a pasted log cut mid-line, a what() line clipped by the launcher)
_WATCHDOG_CUT = re.compile(
    r"(?:Watchdog c|C)aught collective operation timeout: Work(?:NCCL|Gloo|XCCL)?\((?:SeqNum=(\d+), )?OpType=(\w+)"
    r"(?:.*?Timeout\(ms\)=(\d+))?"
)
_WORK_START = re.compile(r"aught collective operation timeout|Work(?:NCCL)?\((?:SeqNum|OpType)=")
_PG_STATUS = re.compile(
    r"(?:detected by watchdog at work(?: sequence id)?:|Timeout at NCCL work:) (\d+),?\s*(?:PG status: )?"
    r"last enqueued (?:NCCL )?work: (-?\d+), last completed (?:NCCL )?work: (-?\d+)"
)
# ProcessGroupNCCL's heartbeat monitor ends a process with "Terminating the process after attempting to dump debug
# info, due to <reason>": "ProcessGroupNCCL watchdog hang" is the watchdog stuck (a hang of its own), while
# "collective timeout or exception" follows every ordinary watchdog timeout once the debug dump is on: that one is
# the timeout's teardown, not a stuck watchdog.
_HEARTBEAT = re.compile(
    r"Heartbeat monitor timed out|watchdog got stuck for (\d+) seconds|detected no heartbeat of its watchdog"
    r"|Terminating the process after attempting to dump debug info(?!, due to collective timeout or exception)"
)
_TAKEDOWN = re.compile(
    r"Some NCCL operations have failed or timed out|taking the entire process down|preparing to dump debug info"
    r"|FlightRecorder is disabled|watchdog thread terminated with exception"
)
_GLOO_TIMEOUT = re.compile(r"Timed out waiting (\d+)ms for (recv|send) operation to complete")
_PEER_GONE = re.compile(r"Connection (?:reset|closed) by (?:remote )?peer|Broken pipe|remote process exited")
_GLOO_MISMATCH = re.compile(r"doesn't match expected size|op\.preamble\.length <= op\.nbytes\. (\d+) vs (\d+)")
_TORCH_MISMATCH = re.compile(r"Detected mismatch between collectives on ranks")
# TORCH_DISTRIBUTED_DEBUG=DETAIL's fingerprints of both ranks' calls: the ops the remedy names. Two forms of
# torch/csrc/distributed/c10d/ProcessGroupWrapper.cpp: torch 1.10's 'Rank 0 is running inconsistent collective:
# CollectiveFingerPrint(OpType=X, ...)' and torch 2.x's (to the current source, commit 017943b7) 'Rank 0 is
# running collective: CollectiveFingerPrint(SequenceNumber=N, OpType=X, TensorShape=[..], ...), but Rank 1 is
# running collective: CollectiveFingerPrint(SequenceNumber=NOpType=Y)' (no ', ' where the call has no
# tensors). A terminal-wrapped copy puts spaces inside words (pytorch/pytorch#100214: 'collecti     ve').
_RANK_FINGERPRINT = re.compile(
    r"Rank (\d+) is running (?:inconsistent )?collecti\s*ve:\s*CollectiveFingerPrint\("
    r"(?:SequenceNumber=\s*\d+,?\s*)?OpType=\s*(\w+)(?:,\s*TensorShape\s*=\s*(\[[^\]]*\]))?"
)
# ... and its diff of the two (compute_collective_diff): 'Op type: ALLREDUCEvs REDUCE', 'Tensor Tensor shapes:
# 195812480vs 51123456' (modelscope/ms-swift#9443)
_DIFF_SHAPES = re.compile(r"Tensor shapes: (\[?[\d, ]*\]?)\s*vs (\[?[\d, ]*\]?)")


def handle_c10d(sc: Scanner, p: Parsed, idx: int) -> int:
    """Watchdog, heartbeat and PG-status lines; returns lines consumed (-1 when not ours)."""
    text = p.text
    consumed = 0
    if _WORK_START.search(text) and not (_WATCHDOG.search(text) or _BLOCKING.search(text)):
        text, consumed = _join_wrapped(sc, idx, text)
    rank, group, group_rank = _rank_and_group(sc, p, text)
    process = _process(sc, p)
    m = _WATCHDOG.search(text) or _BLOCKING.search(text)
    if m:
        seq, op, numel_in, numel_out, timeout_ms = m.group(1, 2, 3, 4, 5)
        details: dict[str, Any] = {"op": canonical_op(op), "op_raw": op, "timeout_ms": int(timeout_ms)}
        if seq:
            details["seq"] = int(seq)
        if numel_in:
            details.update(numel_in=int(numel_in), numel_out=int(numel_out))
        details.update(group)
        blocking = m.re is _BLOCKING
        message = f"{op}{f' (SeqNum {seq})' if seq else ''} timed out after {int(timeout_ms) / 1000:g} s" + (
            " in blocking wait" if blocking else ""
        )
        timeout = sc.emit(p, "c10d_watchdog_timeout", "timeout", STALL, message, rank=rank, lineno=idx + 1, **details)
        _pair_with_status(sc, timeout, process, group_rank)
        return consumed
    m = _WATCHDOG_CUT.search(text)
    if m:
        seq, op, timeout_ms = m.group(1, 2, 3)
        cut: dict[str, Any] = {"op": canonical_op(op), "op_raw": op, "cut": True}
        cut.update({"seq": int(seq)} if seq else {})
        cut.update({"timeout_ms": int(timeout_ms)} if timeout_ms else {})
        cut.update(group)
        message = f"{op}{f' (SeqNum {seq})' if seq else ''} timed out (the line is cut before its duration)"
        timeout = sc.emit(p, "c10d_watchdog_timeout", "timeout", STALL, message, rank=rank, lineno=idx + 1, **cut)
        _pair_with_status(sc, timeout, process, group_rank)
        return consumed
    m = _PG_STATUS.search(text)
    if m:
        status = sc.emit(
            p,
            "c10d_pg_status",
            "timeout",
            STALL,
            f"watchdog failure at work {m.group(1)}: last enqueued {m.group(2)}, last completed {m.group(3)}",
            rank=rank,
            lineno=idx + 1,
            seq=int(m.group(1)),
            last_enqueued=int(m.group(2)),
            last_completed=int(m.group(3)),
            **group,
        )
        _pair_with_status(sc, status, process, group_rank)
        return consumed
    m = _HEARTBEAT.search(text)
    if m:
        stuck = int(m.group(1)) if m.group(1) else None
        stuck_s: dict[str, Any] = {"stuck_s": stuck} if stuck else {}
        sc.emit(
            p,
            "c10d_heartbeat_monitor",
            "hang",
            STALL,
            "the NCCL watchdog itself stopped making progress (a CUDA/NCCL call is hanging)"
            + (f" for {stuck} s" if stuck else ""),
            rank=rank,
            lineno=idx + 1,
            **stuck_s,
        )
        return consumed
    if _TAKEDOWN.search(text):
        sc.emit(p, "c10d_teardown", "timeout", TEARDOWN, text[:200], rank=rank, severity="info", lineno=idx + 1)
        return consumed
    return -1


def _rank_and_group(sc: Scanner, p: Parsed, text: str) -> tuple[int | None, dict[str, Any], int | None]:
    """The line's rank and the process group it names (knowledge/c10d_groups.py): the job's global rank where the
    log shows it (c10 logging's '[rankN]:' before the line, else the rank a per-rank file is named for), with
    c10d's own '[Rank R]', the rank within the group, kept as 'group_rank' where the two differ. Where neither
    shows it the group's rank is all there is: the line's rank, marked 'rank_in_group'. Third: the group's rank
    ('[Rank R]'), None where the line prints none."""
    found = GROUP_RANK.search(text)
    group: dict[str, Any] = dict(group_fields(found))
    group_rank = int(found.group(4)) if found else None
    known = p.global_rank if p.global_rank is not None else sc.rank
    if known is None:
        if group_rank is not None:
            group["rank_in_group"] = True
        return group_rank, group, group_rank
    if group_rank is not None and group_rank != known:
        group["group_rank"] = group_rank
    return known, group, group_rank


# sc.state's keys for the lines of one process and SeqNum that wait for their partner: a timeout that names no group
# for the status line that names it, and a status line for its timeout (a newest-first export puts it first)
UNNAMED_TIMEOUTS = "c10d_unnamed_timeouts"
UNPAIRED_STATUS = "c10d_unpaired_status"
# The details that name a group, which a status line gives its timeout
GROUP_DETAILS = ("pg", "pg_guid", "pg_desc")


def _process(sc: Scanner, p: Parsed) -> tuple[object, ...]:
    """Which process printed a line of this file: its global rank where the log shows it, else its host and pid where
    shown. Never the rank within a group: every group has a rank 0."""
    known = p.global_rank if p.global_rank is not None else sc.rank
    return ("rank", known) if known is not None else ("host and pid", p.host, p.pid)


def _pair_with_status(sc: Scanner, line: Anomaly, process: tuple[object, ...], group_rank: int | None) -> None:
    """A status line names the group of ONE timeout of its process at its SeqNum (torch <= 2.5 names no group on the
    timeout line), and a timeout takes the group of one status line: the two are paired in whichever order they
    come, by process and SeqNum over the whole file, never a window of lines (an 8-GPU node's watchdogs fire
    together and print their lines interleaved or in batches). Two groups of one process may time out at the same
    SeqNum (tensor and context parallel in step): the group rank each line prints ('[Rank R]') tells them apart."""
    seq = line.details.get("seq")
    is_status = line.code == "c10d_pg_status"
    if seq is None or ("pg" in line.details) != is_status:
        return  # a status line that names no group, or a timeout that names its own
    mine, theirs = (UNPAIRED_STATUS, UNNAMED_TIMEOUTS) if is_status else (UNNAMED_TIMEOUTS, UNPAIRED_STATUS)
    waiting = sc.state.setdefault(theirs, {}).get((process, seq), [])
    partner = _partner(waiting, group_rank)
    if partner is None:
        sc.state.setdefault(mine, {}).setdefault((process, seq), []).append((line, group_rank))
        return
    waiting.remove(partner)
    status, timeout = (line, partner[0]) if is_status else (partner[0], line)
    timeout.details.update({k: status.details[k] for k in GROUP_DETAILS if k in status.details})


def _partner(waiting: list[tuple[Anomaly, int | None]], group_rank: int | None) -> tuple[Anomaly, int | None] | None:
    """The first waiting line of the same group rank, else the first: the timeout line and the status line of one
    group print the same '[Rank R]' as a rule, but not always (a real torch 2.5 log: a timeout's 'Rank 1', its status
    line's 'Rank 0'), so a differing rank only loses to an equal one."""
    return next((w for w in waiting if w[1] == group_rank), waiting[0] if waiting else None)


_FINGERPRINT = re.compile(
    r"\[Rank (\d+)\] Running collective: CollectiveFingerPrint\(SequenceNumber=(\d+), OpType=(\w+)"
    r"(?:, TensorShape=(\[[^\]]*\]))?(?:, TensorDtypes=(\w+))?"
)


def fingerprint_ops(text: str) -> dict[str, Any]:
    """What torch's mismatch message says each rank ran: {'op': the first rank's op, 'rank_ops': [[rank, op,
    shape], ...], 'shapes': [this, other]} (empty where the message carries no fingerprint)."""
    found = [
        [int(m.group(1)), m.group(2), re.sub(r"\s+", " ", m.group(3) or "")] for m in _RANK_FINGERPRINT.finditer(text)
    ]
    if not found:
        return {}
    named: dict[str, Any] = {"op": found[0][1], "rank_ops": found}
    shapes = _DIFF_SHAPES.search(text)
    if shapes:
        named["shapes"] = [shapes.group(1).strip(), shapes.group(2).strip()]
    return named


def odd_fingerprint_ranks(lines: list[str]) -> list[int]:
    """The ranks whose last collective fingerprint (TORCH_DISTRIBUTED_DEBUG=DETAIL's 'Running collective'
    lines) differs from what a strict majority of the ranks ran: the side of the desync that is out of step."""
    last: dict[int, tuple[str | None, ...]] = {}
    for line in lines:
        if "CollectiveFingerPrint" in line:
            f = _FINGERPRINT.search(line)
            if f:
                last[int(f.group(1))] = f.group(2, 3, 4, 5)
    if len(last) < 3:
        return []  # two ranks that disagree: nothing says which one is out of step
    common, n = Counter(last.values()).most_common(1)[0]
    if n * 2 <= len(last):
        return []
    return sorted(r for r, fp in last.items() if fp != common)


def _join_wrapped(sc: Scanner, idx: int, text: str) -> tuple[str, int]:
    """A terminal hard-wrapped the watchdog line: glue up to two following lines back on."""
    from scope.analyzers.diagnose.readers.lines import parse_line

    joined = text
    for extra in (1, 2):
        if idx + extra >= len(sc.lines):
            break
        joined += parse_line(sc.lines[idx + extra], sc.year).text
        if _WATCHDOG.search(joined) or _BLOCKING.search(joined):
            return joined, extra
    return text, 0


def handle_gloo(sc: Scanner, p: Parsed, idx: int, text: str | None = None) -> int:
    text = p.text if text is None else text
    m = _GLOO_TIMEOUT.search(text)
    if m:
        op = sc.current_op(p)
        named_op: dict[str, Any] = {"op": op} if op else {}
        sc.emit(
            p,
            "gloo_timeout",
            "timeout",
            STALL,
            f"gloo timed out after {int(m.group(1)) / 1000:g} s waiting for a {m.group(2)}"
            + (f" in {op}" if op else ""),
            timeout_ms=int(m.group(1)),
            direction=m.group(2),
            **named_op,
        )
        return 0
    m = _GLOO_MISMATCH.search(text)
    if m or _TORCH_MISMATCH.search(text):
        sizes = f" ({m.group(1)} bytes instead of {m.group(2)})" if m and m.group(1) else ""
        odd: list[int | None] = [] if m else [*odd_fingerprint_ranks(sc.lines[:idx])]
        named = fingerprint_ops(text)
        for rank in odd or [None]:
            sc.emit(
                p,
                "collective_mismatch_detected",
                "collective_mismatch",
                MISMATCH,
                f"received data of another size than it expected{sizes}: ranks called different collectives "
                "or sizes (desync)"
                if m
                else text[:300],
                rank=rank,
                **named,
            )
        return 0
    if (
        _PEER_GONE.search(text)
        and not nccl.is_nccl_error(text)
        and ("gloo" in text or "Read error" in text or "peer" in text)
    ):
        sc.emit(p, "peer_connection_lost", "network_fault", PEER_LOST, text[:300], severity="warning")
        return 0
    return -1


# ---- Python exceptions -------------------------------------------------------------------------

_EXC_LINE = re.compile(r"^((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Interrupt))(?::\s?(.*))?$")
# The line that closes a traceback names its exception whatever the class is called: torch.compile's
# torch._dynamo.exc.BackendCompilerFailed / Unsupported / InvalidBackend, elastic's RendezvousClosed... A dotted
# module path or a CamelCase name (not an all-caps logger level such as 'WARNING: ...' interleaved from another
# process), right after the traceback's frames.
_TB_CLOSING = re.compile(r"^((?:[A-Za-z_]\w*\.)+[A-Z]\w*|[A-Z][a-z]+[A-Z]\w*)(?::\s(.*))?$")
# Two ranks' lines interleaved on one console line repeat the opening words: the type is in the last quotes.
_TERMINATE = re.compile(
    r"terminate called after throwing an instance of '(?:terminate called after throwing an instance of ')?"
    r"([^']+)'\s*(?:what\(\):\s*(.*))?"
)
# c10d's watchdog throws DistBackendError (torch 2.2+; std::runtime_error before, ProcessGroupNCCL's
# WorkNCCL::handleException) to end the process after a timeout it has reported.
_WATCHDOG_THROWS = ("DistBackendError", "std::runtime_error")
_WATCHDOG_ENDS = ("c10d_watchdog_timeout", "c10d_watchdog_timeout_stack", "c10d_pg_status")
_FATAL_PY = re.compile(r"Fatal Python error: (.*)")
_NAN = re.compile(
    r"\b(?:nan|NaN|inf|Inf)\b.*\b(?:loss|grad|gradient|value|output|tensor)s?\b"
    r"|\b(?:loss|grad\w*)\b[^\n]{0,40}\b(?:is|=|:|became|contains?)\s*(?:nan|NaN|inf|Inf|-inf)\b"
    r"|returned (?:nan|NaN|inf) values|non-finite|FloatingPointError|anomaly detected"
)
# What the signature table (port in use, store unreachable, rendezvous incomplete) did not claim.
_STORE = re.compile(r"DistStoreError|DistNetworkError|TCPStore")
_ABORTED = re.compile(r"communicator was aborted|has been aborted|ProcessGroup\w* is (?:aborted|shut ?down)")
_SKIP_EXC = ("ChildFailedError", "KeyboardInterrupt", "SystemExit")
_CUDA_ERROR = re.compile(r"\bCUDA error: (.+)")


def handle_exception(sc: Scanner, p: Parsed, idx: int) -> int:
    text = p.text
    m = _TERMINATE.search(text)
    if m:
        what = m.group(2)
        if what is None and idx + 1 < len(sc.lines) and "what()" in sc.lines[idx + 1]:
            what = sc.lines[idx + 1].split("what():", 1)[1].strip()
            sc.skip_lines.add(idx + 1)
        if m.group(1).endswith(_WATCHDOG_THROWS) and not what and _timed_out(sc):
            # the watchdog's own exception ending the process after the timeout this file already reports
            sc.emit(p, "abort", "crash", TEARDOWN, f"process ended by c10d's {m.group(1)}", severity="info")
            return 0
        classify_exception(sc, p, m.group(1), what or "", idx)
        return 0
    if "terminate called without an active exception" in text:
        sc.emit(
            p,
            "abort",
            "crash",
            TEARDOWN,
            "process aborted (terminate called without an active exception)",
            severity="info",
        )
        return 0
    m = _FATAL_PY.search(text)
    if m:
        # An abort is how a process ends after an error it already reported (c10d, gloo, terminate):
        # the error is the cause. A segfault or bus error is a cause of its own.
        aborted = "Aborted" in m.group(1)
        sc.emit(
            p,
            "fatal_signal",
            "crash",
            TEARDOWN if aborted else APPLICATION,
            f"Fatal Python error: {m.group(1)}",
            severity="info" if aborted else "critical",
            detail=m.group(1),
        )
        return 0
    m = _EXC_LINE.match(text)
    if m and m.group(1).endswith(_SKIP_EXC):
        sc.take_traceback(p)  # the launcher's own traceback ends here; its report follows
        return 0
    if m and not text.startswith(("Traceback",)):
        classify_exception(sc, p, m.group(1), m.group(2) or "", idx)
        return 0
    if m is None and not p.indented and sc.open_frames(p) and (closing := _TB_CLOSING.match(text)):
        if closing.group(1).endswith(_SKIP_EXC):
            sc.take_traceback(p)  # SystemExit: the program chose to exit; its status says the rest
        else:
            classify_exception(sc, p, closing.group(1), closing.group(2) or "", idx)
        return 0
    m = _CUDA_ERROR.search(text)
    if m:  # a CUDA error quoted without its exception type
        classify_exception(sc, p, "CUDA error", m.group(1), idx)
        return 0
    if _NAN.search(text):
        sc.emit(p, "nan_inf", "crash", APPLICATION, f"non-finite values: {text[:200]}", severity="warning")
        return 0
    return -1


def _timed_out(sc: Scanner) -> bool:
    return any(a.code in _WATCHDOG_ENDS for a in sc.result.anomalies)


# Exception text -> (code, finding kind, level, severity, advice), after the signature table had its look
# (knowledge/signatures.py holds OOM, ECC, NVLink and the configuration classes). First match wins.
_LATE_CLASSES: list[tuple[re.Pattern[str], str, str, int, str, str]] = [
    (_PEER_GONE, "peer_connection_lost", "network_fault", PEER_LOST, "warning", ""),
    (_ABORTED, "peer_connection_lost", "network_fault", PEER_LOST, "warning", ""),
    (_NAN, "nan_inf", "crash", APPLICATION, "critical", ""),
]


def classify_exception(sc: Scanner, p: Parsed, exc_type: str, message: str, idx: int) -> None:
    """Give one exception its class: OOM, hardware, NCCL, gloo, desync, NaN, or a plain crash."""
    full = f"{exc_type}: {message}"
    frames = sc.take_traceback(p)
    op = sc.current_op(p, frames)
    extra: dict[str, Any] = {"exception": exc_type, "frames": frames[-6:]} if frames else {"exception": exc_type}
    if op:
        extra["op"] = op
    if _WATCHDOG.search(message) or _PG_STATUS.search(message) or _WATCHDOG_CUT.search(message):
        if not any(a.code in ("c10d_watchdog_timeout", "c10d_pg_status") for a in sc.result.anomalies):
            handle_c10d(sc, replace(p, text=message), idx)  # its own watchdog line is not in this log
        return  # the same timeout is reported by its own watchdog line
    known = signature_scan.match_text(full)
    if known:
        signature_scan.emit_signature(sc, p, known, idx, full, **extra)
        return
    if nccl.is_nccl_error(full):
        nccl.classify_nccl_error(sc, p, full, idx, extra)
    elif _GLOO_TIMEOUT.search(full) or _GLOO_MISMATCH.search(full) or _TORCH_MISMATCH.search(full):
        handle_gloo(sc, p, idx, full)
    elif _emit_class(sc, p, full, idx, extra, _LATE_CLASSES):
        return
    elif _STORE.search(full):
        sc.emit(p, "rendezvous_error", "config_error", APPLICATION, clip(full, QUOTE_CHARS), lineno=idx + 1, **extra)
    else:
        sc.emit(p, "python_exception", "crash", APPLICATION, clip(full, QUOTE_CHARS), lineno=idx + 1, **extra)


def _emit_class(
    sc: Scanner,
    p: Parsed,
    full: str,
    idx: int,
    extra: dict[str, Any],
    classes: list[tuple[re.Pattern[str], str, str, int, str, str]],
) -> bool:
    for pattern, code, kind, level, severity, action in classes:
        if pattern.search(full):
            more: dict[str, Any] = {}
            if action:
                more["action"] = action
            sc.emit(p, code, kind, level, clip(full, QUOTE_CHARS), lineno=idx + 1, severity=severity, **extra, **more)
            return True
    return False
