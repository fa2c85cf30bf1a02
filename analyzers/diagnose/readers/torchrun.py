"""torchrun's side of a failure: per-child exit lines, SIGTERMs it sends, and ChildFailedError reports.

failed (exitcode: 1) local_rank: 3 (pid: 33054) of binary: ...      (both logging formats)
Sending process 33051 closing signal SIGTERM
ChildFailedError: ... Failures: [1]: time/host/rank/exitcode/error_file/traceback ...
                      Root Cause (first observed failure): [0]: ...
"""

from __future__ import annotations

import re
import signal
from typing import TYPE_CHECKING

from scope.analyzers.diagnose.model import TEARDOWN
from scope.analyzers.diagnose.readers.lines import Parsed, epoch_ns

if TYPE_CHECKING:
    from scope.analyzers.diagnose.readers.scan import Scanner

_ELASTIC_FAILED = re.compile(r"failed \(exitcode: (-?\d+)\) local_rank: (\d+) \(pid: (\d+)\)")
_CLOSING = re.compile(r"Sending process (\d+) closing signal (SIG\w+)")
_FIELD = re.compile(r"^\s*(time|host|rank|exitcode|error_file|traceback)\s*:\s*(.*)$")
_BLOCK_ENTRY = re.compile(r"^\s*\[(\d+)\]:\s*$")
_RANK_FIELD = re.compile(r"(\d+)(?: \(local_rank: (\d+)\))?")
_EXIT_FIELD = re.compile(r"(-?\d+)(?: \(pid: (\d+)\))?")
_TORCHRUN_TIME = re.compile(r"(\d{4})-(\d\d)-(\d\d)_(\d\d):(\d\d):(\d\d)")


def signal_name(exitcode: int) -> str | None:
    if exitcode >= 0:
        return None
    try:
        return signal.Signals(-exitcode).name
    except ValueError:
        return f"signal {-exitcode}"


def handle_torchrun(sc: Scanner, p: Parsed, idx: int) -> int:
    text = p.text
    m = _ELASTIC_FAILED.search(text)
    if m:
        code = int(m.group(1))
        sc.emit(
            p,
            "child_exit",
            "crash",
            TEARDOWN,
            f"local rank {m.group(2)} (pid {m.group(3)}) exited with {code}",
            severity="info",
            exitcode=code,
            signal=signal_name(code),
            local_rank=int(m.group(2)),
            pid=int(m.group(3)),
            launcher=True,
        )
        return 0
    m = _CLOSING.search(text)
    if m:
        sc.emit(
            p,
            "launcher_sigterm",
            "crash",
            TEARDOWN,
            f"launcher sent {m.group(2)} to pid {m.group(1)}",
            severity="info",
            pid=int(m.group(1)),
            signal=m.group(2),
            launcher=True,
        )
        return 0
    return _torchrun_block(sc, p, idx)


def _torchrun_block(sc: Scanner, p: Parsed, idx: int) -> int:
    """ChildFailedError report: one entry per failed rank; the 'Root Cause' section names the first."""
    text = p.text
    block = sc.state.setdefault("child", {"root": False, "entry": {}})
    if "Root Cause (first observed failure)" in text:
        block.update(root=True, entry={})
        return 0
    if text.startswith("Failures:"):
        block.update(root=False, entry={})
        return 0
    if _BLOCK_ENTRY.match(text):
        block["entry"] = {}
        return 0
    m = _FIELD.match(text)
    if not m:
        return -1
    name, value = m.group(1), m.group(2).strip()
    entry = block["entry"]
    entry[name] = value
    if name == "exitcode":
        _emit_child(sc, p, idx, entry, block["root"])
    return 0


def _emit_child(sc: Scanner, p: Parsed, idx: int, entry: dict[str, str], root: bool) -> None:
    exit_m = _EXIT_FIELD.match(entry["exitcode"])
    if not exit_m:
        return
    code = int(exit_m.group(1))
    rank_m = _RANK_FIELD.match(entry.get("rank", ""))
    rank = int(rank_m.group(1)) if rank_m else None
    host = entry.get("host")
    if rank is not None and host:
        sc.result.rank_hosts[rank] = host
    time_m = _TORCHRUN_TIME.search(entry.get("time", ""))
    if time_m:
        year, month, day, hh, mm, ss = (int(x) for x in time_m.groups())
        p.time_ns = epoch_ns(year, month, day, hh, mm, ss)
    sig = signal_name(code)
    what = f"signal {sig}" if sig else f"exit code {code}"
    who = f"rank {rank}" if rank is not None else "a worker"
    sc.emit(
        p,
        "child_exit",
        "crash",
        TEARDOWN,
        f"{who} ended with {what}" + (" (torchrun's first failure)" if root else ""),
        rank=rank,
        host=host,
        severity="info",
        lineno=idx + 1,
        exitcode=code,
        signal=sig,
        torchrun_root=root,
        **({"pid": int(exit_m.group(2))} if exit_m.group(2) else {}),
    )
    entry.clear()
