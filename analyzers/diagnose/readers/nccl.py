"""NCCL lines: INFO facts (version, ranks, hosts, transports, channels, Init COMPLETE) and WARN / error
lines (IB completion errors, socket failures, system errors, /dev/shm, signals inside NCCL). The 'host:pid:tid
[dev]' prefix of NCCL's lines is read by readers/nccl_prefix.py (lines.py sets a Parsed line's host from it)."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NamedTuple

from scope.analyzers.diagnose.knowledge import emitters
from scope.analyzers.diagnose.knowledge.native_libraries import (
    ABORT_PATH_FRAME,
    NCCL_SYMBOL,
    NET_PLUGIN,
    NET_PLUGIN_CALLER,
)
from scope.analyzers.diagnose.knowledge.nccl_own_topology import own_topology_failure, remedy
from scope.analyzers.diagnose.knowledge.other_collectives import RCCL_BANNER
from scope.analyzers.diagnose.model import APPLICATION, COMM_ERROR, HARDWARE, MISMATCH, PEER_LOST, TEARDOWN
from scope.analyzers.diagnose.readers import signature_scan
from scope.analyzers.diagnose.readers.lines import Parsed

if TYPE_CHECKING:
    from scope.analyzers.diagnose.readers.scan import Scanner

# ---- INFO facts ---------------------------------------------------------------------------------

_VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+)")
_COMM_INIT = re.compile(r"\bcomm 0x[0-9a-f]+ rank (\d+) nranks (\d+) .*Init (START|COMPLETE)")
_INIT_TIMINGS = re.compile(r"Init timings: rank (\d+) nranks (\d+)")
_USING_NETWORK = re.compile(r"Using network (\w[\w ]*)")
_OFI_PROVIDER = re.compile(r"NET/OFI Selected Provider is (\w+)")
_NET_DEVICES = re.compile(r"NET/(IB|Socket)\s*: Using (.*)")
_VIA = re.compile(r" via ([A-Za-z0-9_]+/[A-Za-z][\w ]*?|[A-Z]{2,}\w*)(?:/\w+)*\s*$")
_CHANNELS = re.compile(r"(\d+) coll channels")
_BANNER = re.compile(r"#\s+Rank\s+(\d+) (?:Group\s+\d+ )?Pid\s+\d+ on\s+(\S+) device")

NETWORK_LABELS = {"aws libfabric": "OFI", "ib": "IB", "socket": "Socket"}


_VIA_ALL = re.compile(r" via ([A-Za-z0-9_]+/[A-Za-z][\w ]*?|[A-Z]{2,}\w*)(?:/\w+)*[ \t]*\r?$", re.M)


def transports(sc: Scanner, text: str) -> None:
    """Channel set-up lines ('... via NET/IB/0') are many: one pass over the whole text."""
    sc.result.nccl.transports.update(m.strip() for m in _VIA_ALL.findall(text))


def handle_info(sc: Scanner, p: Parsed) -> bool:
    """Facts from a healthy NCCL_DEBUG=INFO log; never an anomaly."""
    text = p.text
    if _OLD_INFO.search(text):  # read as the INFO line it is, and consumed: no error rule may read its words
        handle_info(sc, replace(p, text=text.replace(" INFO ", " NCCL INFO ", 1)))
        return True
    info = sc.result.nccl
    if p.host and ("NCCL INFO" in text or "NCCL WARN" in text):
        info.hosts.add(p.host)
        if p.rank is not None:
            info.rank_hosts[p.rank] = p.host
    m = _BANNER.search(text)
    if m:
        rank, host = int(m.group(1)), m.group(2)
        info.rank_hosts[rank] = host
        info.hosts.add(host)
        sc.result.rank_hosts.setdefault(rank, host)
        return True
    if "RCCL version" in text and (m := RCCL_BANNER.search(text)):
        info.rccl = info.rccl or m.group(1)
        return True
    if ("NCCL" not in text and " via " not in text) or "NCCL WARN" in text:
        return False  # a WARN is never an INFO fact ('... not initialized via NCCL_CONFIG_INITIALIZER')
    m = _VERSION.search(text)
    if m:
        info.version = info.version or m.group(1)
    m = _COMM_INIT.search(text) or _INIT_TIMINGS.search(text)
    if m:
        rank = int(m.group(1))
        info.nranks = max(info.nranks or 0, int(m.group(2)))
        info.ranks.add(rank)
        if m.re is _COMM_INIT and m.group(3) == "COMPLETE":
            info.init_complete.add(rank)
        if p.host:
            info.rank_hosts[rank] = p.host
            sc.result.rank_hosts.setdefault(rank, p.host)
        return True
    m = _USING_NETWORK.search(text)
    if m:
        info.networks.add(NETWORK_LABELS.get(m.group(1).strip().lower(), m.group(1).strip()))
        return True
    m = _OFI_PROVIDER.search(text)
    if m:
        info.networks.update(("OFI", m.group(1).upper()))
        return True
    m = _NET_DEVICES.search(text)
    if m:
        kind = m.group(1)
        info.networks.add("RoCE" if "/RoCE" in m.group(2) else kind)
        return True
    m = _VIA.search(text)
    if m:
        info.transports.add(m.group(1).strip())
        return True
    m = _CHANNELS.search(text)
    if m:
        info.channels = max(info.channels or 0, int(m.group(1)))
        return True
    return bool(m)


# ---- WARN and error lines -----------------------------------------------------------------------

# NCCL >= 2.12 names the peer ('Got completion from peer 10.0.0.2<4242> with status=12'); older releases
# do not ('NET/IB : Got completion with error 12, opcode 1, len 0, vendor err 129').
# NCCL 2.27+ names the status: 'with status=IBV_WC_RETRY_EXC_ERR(12) opcode=... vendor_err=129'
_IB_COMPLETION = re.compile(r"Got completion (?:from peer ([^<\s]+)<(\d+)> )?with (?:status=(?:\w+\()?|error )(\d+)")
_VENDOR_ERR = re.compile(r"vendor[ _]err[ =](\d+)")
_LOCAL_GID = re.compile(r"localGid ?(\S+)")
_REMOTE_GID = re.compile(r"remoteGid ?(\S+)")
_SOCKET_CONNECT = re.compile(r"(?:(?:socketStartConnect: )?Connect to (\S+)|Call to connect) failed ?: (.+)")
_OLD_WARN = re.compile(r"\[\d+\] [\w/.]+\.(?:h|cc|cu|cpp):\d+ WARN ")
# ... and its INFO lines as 'host:pid:tid [dev] INFO msg' ('[0] INFO NET/IB : Using interface ib0 for sideband
# communication', NCCL 2.2): information, whose 'NET/IB' names no failing subsystem. The host is a name that starts
# with a letter, so another logger's 'HH:MM:SS [n] INFO' (a timestamp, an ISO 'T10:00:00') is not taken for it.
_OLD_INFO = re.compile(r"(?<![\w.-])[A-Za-z][\w.-]*:\d+:\d+ \[\d+\] INFO ")
_SOCKET_CLOSED = re.compile(r"Connection closed by remote peer|Socket recv failed|socketProgress")
_PROXY_FAIL = re.compile(r"Proxy Service \d+\] Failed to execute operation (\w+)")
_SIGNAL = re.compile(r"Caught signal (\d+) \(([^)]*)\)")
_NCCL_ERR = re.compile(
    r"NCCL error|ncclSystemError|ncclInternalError|ncclRemoteError|ncclInvalidUsage|ncclInvalidArgument"
    r"|ncclUnhandledCudaError|unhandled system error|unhandled cuda error|internal error - please report"
    r"|remote process exited or there was a network error|NET/IB|NET/IBP"
)
IB_STATUS = {
    12: "transport retry counter exceeded",
    5: "work request flushed",
    13: "RNR retry counter exceeded",
    4: "local protection error",
    10: "remote access error",
    11: "remote operation error",
}


def is_nccl_error(text: str) -> bool:
    return bool(_NCCL_ERR.search(text))


def handle_warn(sc: Scanner, p: Parsed, idx: int) -> int:
    """NCCL WARN / error lines not wrapped in a Python exception; -1 when not ours."""
    text = p.text
    if _IB_COMPLETION.search(text):
        _ib_completion(sc, p, text, idx, {})
        return 0
    m = _SIGNAL.search(text)
    if m:
        return _signal(sc, p, idx, int(m.group(1)), m.group(2))
    if _OMPI_SIGNAL in text:
        return _ompi_signal(sc, p, idx)
    if signature_scan.is_benign(text):
        return 0  # a warning NCCL recovers from (no verbs library: it uses sockets)
    if _OLD_WARN.search(text):  # NCCL <= 2.3 wrote 'file.h:NNN WARN ...' without the NCCL token
        text = _OLD_WARN.sub(lambda m: m.group(0).replace(" WARN ", " NCCL WARN "), text, count=1)
    if "NCCL WARN" in text or is_nccl_error(text) or "socketStartConnect" in text:
        classify_nccl_error(sc, p, text, idx, {})
        return 0
    return -1


def classify_nccl_error(sc: Scanner, p: Parsed, text: str, idx: int, extra: dict[str, Any]) -> None:
    """One NCCL failure line, read together with a 'Last error:' detail that may follow it."""
    detail = _last_error(sc, idx)
    full = f"{text} {detail}" if detail else text
    known = signature_scan.match_text(detail) if detail else None
    if known:  # the 'Last error:' detail names the cause the generic first line does not
        signature_scan.emit_signature(sc, p, known, idx, full, **extra)
        return
    if _IB_COMPLETION.search(full):  # its status names the cause, in every NCCL release's wording
        _ib_completion(sc, p, full, idx, extra)
        return
    if detail and _by_emitter(sc, p, f"NCCL WARN {detail}", full, idx, extra):
        return  # the detail is an NCCL WARN message class ('Mismatched NCCL version detected ...')
    m = _SOCKET_CONNECT.search(full)
    if m:
        sc.emit(
            p,
            "nccl_socket_connect",
            "network_fault",
            COMM_ERROR,
            f"NCCL could not connect to {m.group(1) or 'a peer'}: {m.group(2).strip()}",
            lineno=idx + 1,
            peer=m.group(1),
            reason=m.group(2).strip(),
            subsystem="socket",  # names its cause: a generic 'unhandled system error' beside it is its result
            **extra,
        )
    elif _SOCKET_CLOSED.search(full) or _PROXY_FAIL.search(full) or "remote process exited" in full:
        sc.emit(
            p, "nccl_peer_lost", "network_fault", PEER_LOST, _cut(full), lineno=idx + 1, severity="warning", **extra
        )
    elif _by_emitter(sc, p, text, full, idx, extra):
        return
    elif "ncclUnhandledCudaError" in full or "unhandled cuda error" in full:
        # NCCL passing on a failed CUDA call: at the level of NCCL errors, so a WARN naming the call explains it
        sc.emit(p, "nccl_cuda_error", "nccl_error", COMM_ERROR, _cut(full), lineno=idx + 1, **extra)
    elif (
        "ncclInvalidUsage" in full
        or "invalid usage" in full
        or "ncclInvalidArgument" in full
        or (
            ", invalid argument" in full  # ncclInvalidArgument's text in c10d's 'NCCL error in: FILE:LINE, ...'
        )
    ):
        sc.emit(p, "nccl_invalid_usage", "config_error", APPLICATION, _cut(full), lineno=idx + 1, **extra)
    elif "NCCL WARN" in full and not is_nccl_error(full.replace("NCCL WARN", "")):
        sc.emit(p, "nccl_warn", "nccl_error", COMM_ERROR, _cut(full), lineno=idx + 1, severity="warning", **extra)
    else:
        # ncclInternalError keeps the system error's place in the incident; its remedy differs (words/advice.py)
        if "ncclInternalError" in full or "internal error" in full:
            extra = {**extra, "nccl_result": "internal"}
        sc.emit(p, "nccl_system_error", "nccl_error", COMM_ERROR, _cut(full), lineno=idx + 1, **extra)


_LEVEL_OF_KIND = {
    "network_fault": COMM_ERROR,
    "nccl_error": COMM_ERROR,
    "collective_mismatch": MISMATCH,
    "config_error": APPLICATION,
    "crash": APPLICATION,
    "oom": APPLICATION,
    "hardware_fault": HARDWARE,
}


def _by_emitter(sc: Scanner, p: Parsed, text: str, full: str, idx: int, extra: dict[str, Any]) -> bool:
    """A WARN classified by the NCCL source that prints it (knowledge/emitters.py): its message class, else the
    subsystem of its file or NET/ prefix. NCCL-internal classes fall through to the generic NCCL error."""
    hit = emitters.classify_warn(text)
    if hit is None or hit.subsystem == "internal":
        return False
    sub = hit.meaning
    mc = hit.message_class
    details: dict[str, Any] = {
        "subsystem": hit.subsystem,
        "cause": sub.cause,
        "remedy": sub.remedy,
        "emitter": mc.site if mc else hit.source,
        # its message class says what failed; only its file or NET/ prefix: the subsystem, less surely
        "confidence": "medium" if mc else "low",
        **({"message_class": mc.format} if mc else {}),
        **extra,
    }
    if hit.kind == "info":
        sc.emit(
            p, "nccl_warn_recovered", "config_error", TEARDOWN, _cut(full), lineno=idx + 1, severity="info", **details
        )
        return True
    if hit.subsystem == "peer_lost":  # the peer went away: a symptom of its own failure, read with the others
        sc.emit(
            p, "nccl_peer_lost", "network_fault", PEER_LOST, _cut(full), lineno=idx + 1, severity="warning", **details
        )
        return True
    kind = hit.kind
    own = own_topology_failure(full) if hit.subsystem == "topology" else None
    if own is not None:  # NCCL's own search or dictionary failed (knowledge/nccl_own_topology.py): its bug
        kind = "nccl_error"
        details.update(cause="nccl_bug", remedy=remedy(own, None), reference=own.source, own_topology=own.id)
    level = _LEVEL_OF_KIND.get(kind, COMM_ERROR)
    sc.emit(p, f"nccl_{hit.subsystem}_error", kind, level, f"{_cut(full)} ({sub.what})", lineno=idx + 1, **details)
    return True


def _ib_completion(sc: Scanner, p: Parsed, text: str, idx: int, extra: dict[str, Any]) -> None:
    m = _IB_COMPLETION.search(text)
    assert m is not None
    status = int(m.group(3))
    gid_m, vendor_m = _LOCAL_GID.search(text), _VENDOR_ERR.search(text)
    gid = gid_m.group(1) if gid_m else None
    remote_m = _REMOTE_GID.search(text)
    remote_gid = remote_m.group(1) if remote_m else None
    roce = bool(gid and (gid.startswith("::ffff:") or ":" in gid))
    meaning = IB_STATUS.get(status, f"status {status}")
    # A flushed work request is the aftermath of an earlier error on the same queue pair.
    level = PEER_LOST if status == 5 else COMM_ERROR
    sc.emit(
        p,
        "nccl_ib_completion_error",
        "network_fault",
        level,
        f"InfiniBand completion error{' from peer ' + m.group(1) if m.group(1) else ''}: {meaning} (status {status})",
        lineno=idx + 1,
        severity="warning" if status == 5 else "critical",
        peer=m.group(1),
        ib_status=status,
        ib_meaning=meaning,
        vendor_err=int(vendor_m.group(1)) if vendor_m else None,
        roce=roce,
        local_gid=gid,
        remote_gid=remote_gid,
        **extra,
    )


def _signal(sc: Scanner, p: Parsed, idx: int, signum: int, name: str) -> int:
    """UCX-style 'Caught signal N' with a backtrace: the library its faulting frame runs in (faulting_frame)."""
    frames: list[str] = []
    consumed = 0
    for j in range(idx + 1, min(idx + 30, len(sc.lines))):
        line = sc.lines[j].strip()
        if not line or not (line.startswith(("=", "#")) or line[:1].isdigit()):
            break
        frames.append(line)
        consumed += 1
    emit_signal(sc, p, idx, signum, name, [f for f in frames if not f.startswith("=")], "UCX's signal handler")
    return consumed


# Open MPI's (and PMIx / PRRTE's) signal handler, opal/util/stacktrace.c: a block of lines with the process's
# '[host:pid] ' prefix: '*** Process received signal ***', 'Signal: Segmentation fault (11)', 'Signal code: ...',
# 'Failing at address: 0x...', backtrace frames '[ 0] /lib/x86_64-linux-gnu/libpthread.so.0(+0x12730)[0x...]',
# '*** End of error message ***' (https://github.com/open-mpi/ompi/blob/main/opal/util/stacktrace.c).
_OMPI_SIGNAL = "*** Process received signal ***"
_OMPI_END = "*** End of error message ***"
_OMPI_SIGNAL_NAME = re.compile(r"Signal: (.+?) \((\d+)\)")
_OMPI_FRAME = re.compile(r"\[\s*\d+\] (.+)")
# the library a frame runs in: NCCL itself or a net plugin it loaded (libnccl-net.so, aws-ofi-nccl's)
_NCCL_LIBRARY = re.compile(r"(lib\w*nccl[\w.+-]*?\.so(?:\.\d+)*)")
_LIBRARY = re.compile(r"([\w.+-]+\.so(?:\.\d+)*)")
# Frames of the signal's delivery, not of the fault: the handler's own (UCX's libucs, Open MPI's libopen-pal), the
# C library's and pthread's trampolines, and the libc symbols UCX resolves them to without a path ('__sigaction()',
# 'killpg()', '__funlockfile()': the kernel's return into the handler).
_DELIVERY_FRAME = re.compile(
    r"lib(?:c|pthread)[.-]|ld-linux|linux-vdso|libucs\.|\bucs_\w+\(|libopen-pal|\bopal_\w+|libpmix|"
    r"\b(?:__sigaction|__restore_rt|killpg|__funlockfile|__nss_database_lookup|raise|abort)\(\)"
)
_OMPI_BLOCK_LINES = 64


class Fault(NamedTuple):
    at: int | None  # the faulting frame's position in the block (None: every frame is the handler's)
    library: str | None  # the library it runs in, as the frame names it (None when it names none)
    in_nccl: bool  # the library is NCCL or its net plugin


def faulting_frame(frames: list[str], aborted: bool = False) -> Fault:
    """The frame a signal-handler block's fault happened in, innermost first as the handlers print them: the first
    frame that is not the signal's delivery (handler, libc, pthread; for an abort also the path from abort() as gdb
    names it). A crash in libcuda.so.1 called from NCCL is the driver's, not NCCL's: the frames above the faulting
    one are its callers."""

    def delivery(f: str) -> bool:
        return bool(_DELIVERY_FRAME.search(f) or (aborted and ABORT_PATH_FRAME.search(f)))

    k = next((k for k, f in enumerate(frames) if not delivery(f)), None)
    if k is None:
        return Fault(None, None, False)
    nccl = _NCCL_LIBRARY.search(frames[k])
    if nccl:
        return Fault(k, nccl.group(1), True)
    if NCCL_SYMBOL.search(frames[k]):
        return Fault(k, "NCCL", True)
    if k + 1 < len(frames) and NET_PLUGIN_CALLER.search(frames[k + 1]):
        return Fault(k, NET_PLUGIN, True)
    other = _LIBRARY.search(frames[k])
    return Fault(k, other.group(1) if other else None, False)


def emit_signal(sc: Scanner, p: Parsed, idx: int, signum: int, name: str, frames: list[str], handler: str) -> None:
    """One finding for a signal-handler block, whichever handler printed it: a fault in NCCL or its net plugin is
    NCCL's failure (nccl_error; a bus error there is /dev/shm, nccl_crash_signal's advice: a crash); any other a
    crash, naming the library that faulted."""
    fault = faulting_frame(frames, aborted=signum == 6)
    # outermost first, as a Python traceback, ending at the faulting frame (the ones below it are the handler's)
    shown = list(reversed(frames[fault.at or 0 :]))
    said = f"signal {signum} ({name})" if signum else "a signal (the log ends before the handler names it)"
    where = f" inside {fault.library}" if fault.library else ""
    # an abort outside NCCL after an error this log already reported (c10d's watchdog after a timeout, a failed
    # check) is how the process ended: that error is the cause, as for 'Fatal Python error: Aborted' (readers/logs.py)
    aborted = signum == 6 and not fault.in_nccl and any(a.severity != "info" for a in sc.result.anomalies)
    sc.emit(
        p,
        "nccl_crash_signal" if fault.in_nccl else "fatal_signal",
        "nccl_error" if fault.in_nccl and signum != 7 else "crash",
        TEARDOWN if aborted else APPLICATION,
        f"process died of {said}{where} ({handler})",
        lineno=idx + 1,
        signum=signum or None,
        signal_text=name or None,
        frames=shown[-8:],
        library=fault.library,
        bus_error=signum == 7,
    )


def _ompi_signal(sc: Scanner, p: Parsed, idx: int) -> int:
    """Open MPI's signal-handler block: the signal, and the library its faulting frame runs in."""
    from scope.analyzers.diagnose.readers.lines import parse_line

    signum, name, frames = 0, "", []
    for j in range(idx + 1, min(idx + _OMPI_BLOCK_LINES, len(sc.lines))):
        text = parse_line(sc.lines[j], sc.year).text
        if _OMPI_END in text or _OMPI_SIGNAL in text:
            break
        m = _OMPI_SIGNAL_NAME.search(text)
        if m and not signum:
            name, signum = m.group(1), int(m.group(2))
        f = _OMPI_FRAME.search(text)
        if f:
            frames.append(f.group(1).strip())
    emit_signal(sc, p, idx, signum, name, frames, "Open MPI's signal handler")
    return 0


def _last_error(sc: Scanner, idx: int) -> str:
    """NCCL prints 'Last error:' and the detail on the next line (both with the same prefixes)."""
    from scope.analyzers.diagnose.readers.lines import parse_line

    for j in range(idx + 1, min(idx + 4, len(sc.lines))):
        text = parse_line(sc.lines[j], sc.year).text
        if text.startswith("Last error:"):
            # The detail line belongs to this error: keep it from being reported a second time.
            sc.skip_lines.update((j, j + 1))
            rest = text[len("Last error:") :].strip()
            if rest:
                return rest
            if j + 1 < len(sc.lines):
                return parse_line(sc.lines[j + 1], sc.year).text
    return ""


def _cut(text: str, limit: int = 300) -> str:
    from scope.analyzers.diagnose.readers.quote import shorten

    return shorten(text, limit)
