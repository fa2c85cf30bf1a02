"""Kernel-log lines that matter for GPU jobs (Xid, NVRM, AER, mlx5, segfaults, OOM kills).

Reads `/dev/kmsg` without blocking (one record per read: `prio,seq,usec,flags;message`); where it
is not readable, polls `dmesg -r` every few seconds instead (`<prio>[secs] message`). Kept lines go
to the `events` table and, as `dmesg --decode --time-format iso` prints them, to
`RUN/hosts/<host>/kmsg.log`. Kernel timestamps count from boot; they are put on the wall clock
with the boot time measured at start (`time_ns() - CLOCK_MONOTONIC`), good to a few ms. On start the
ring buffer's last `backlog_s` seconds are read too, so an Xid just before an attach is kept.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pyarrow as pa
from scope.collectors.sidecar.base import EVENTS_SCHEMA, Row, Rows, SourceContext

KMSG_RE = re.compile(r"^(\d+),(\d+),(\d+),[^;]*;(.*)$")
DMESG_RAW_RE = re.compile(r"^<(\d+)>\[\s*(\d+)\.(\d+)\]\s?(.*)$")
XID_RE = re.compile(r"NVRM: Xid \((?:PCI:)?([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.\d)?)\): (\d+)")
PCI_RE = re.compile(r"\b([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\b")
# Ordered: the first class that matches names the line.
CLASSES = (
    ("xid", re.compile(r"NVRM: Xid")),
    ("peermem", re.compile(r"nvidia-peermem")),
    ("nvswitch", re.compile(r"nvidia-nvswitch|NVSwitch", re.I)),
    ("nvrm", re.compile(r"NVRM")),
    ("aer", re.compile(r"\bAER\b|PCIe Bus Error")),
    ("mlx5", re.compile(r"mlx5")),
    ("segfault", re.compile(r"segfault at|general protection fault|traps: ")),
    ("oom", re.compile(r"Out of memory|oom-kill|Killed process|invoked oom-killer")),
)
ALWAYS_KEPT = frozenset({"xid", "aer", "segfault", "oom"})
# Lines of the chatty classes (NVRM, mlx5, NVSwitch) are kept at warning level or worse, or when
# they say something went wrong.
TROUBLE_RE = re.compile(r"error|fail|fatal|timeout|timed out|down|lost|reset|abort|unrecover", re.I)
WARNING_LEVEL = 4
FACILITIES = ("kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news")
LEVELS = ("emerg", "alert", "crit", "err", "warn", "notice", "info", "debug")


@dataclass(frozen=True)
class KernelRecord:
    prio: int
    usec: int  # since boot
    message: str

    @property
    def level(self) -> int:
        return self.prio & 7


def parse_record(line: str) -> KernelRecord | None:
    """A /dev/kmsg record or a `dmesg -r` line; None for continuation or foreign lines."""
    match = KMSG_RE.match(line)
    if match:
        return KernelRecord(int(match.group(1)), int(match.group(3)), match.group(4))
    match = DMESG_RAW_RE.match(line)
    if match:
        usec = int(match.group(2)) * 1_000_000 + int(match.group(3).ljust(6, "0")[:6])
        return KernelRecord(int(match.group(1)), usec, match.group(4))
    return None


def classify(message: str, level: int = WARNING_LEVEL) -> tuple[str, int, str | None] | None:
    """(kind, Xid code or -1, PCI address or None) for a line worth keeping, else None."""
    for kind, pattern in CLASSES:
        if not pattern.search(message):
            continue
        if kind not in ALWAYS_KEPT and level > WARNING_LEVEL and not TROUBLE_RE.search(message):
            return None
        xid = XID_RE.search(message)
        if xid:
            return kind, int(xid.group(2)), xid.group(1)
        pci = PCI_RE.search(message)
        return kind, -1, pci.group(1) if pci else None
    return None


def format_iso_line(prio: int, ts_ns: int, message: str) -> str:
    """One line as `dmesg --decode --time-format iso` prints it."""
    facility = FACILITIES[prio >> 3] if prio >> 3 < len(FACILITIES) else str(prio >> 3)
    stamp = dt.datetime.fromtimestamp(ts_ns / 1e9).astimezone().isoformat(timespec="microseconds")
    stamp = stamp.replace(".", ",", 1)
    return f"{facility:<6}:{LEVELS[prio & 7]:<6}: {stamp} {message}"


class KmsgSource:
    """Kernel-log lines about GPUs, NICs and PCIe; unavailable when neither kmsg nor dmesg reads."""

    name = "kmsg"
    tables: ClassVar[dict[str, pa.Schema]] = {"events": EVENTS_SCHEMA}

    def __init__(
        self,
        path: Path | str = "/dev/kmsg",
        backlog_s: float | None = 3600.0,
        max_records_per_tick: int = 2000,
        dmesg_cmd: str = "dmesg",
        dmesg_interval_s: float = 10.0,
    ) -> None:
        self.path = Path(path)
        self.backlog_s = backlog_s
        self.max_records = max_records_per_tick
        self.dmesg_cmd = dmesg_cmd
        self.dmesg_interval_s = dmesg_interval_s
        self.fd: int | None = None
        self.mode = ""
        self.boot_ns = 0
        self.cutoff_ns = 0
        self.log_path: Path | None = None
        self._partial = b""
        self._last_dmesg_usec = -1
        self._last_poll = 0.0

    def open(self, ctx: SourceContext) -> str | None:
        self.log_path = ctx.host_dir / "kmsg.log"
        self.boot_ns = time.time_ns() - time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        self.cutoff_ns = 0 if self.backlog_s is None else time.time_ns() - int(self.backlog_s * 1e9)
        try:
            self.fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
            self.mode = "kmsg"
            return None
        except OSError as exc:
            kmsg_problem = f"{self.path} not readable ({exc.strerror})"
        dmesg_problem = self._try_dmesg()
        if dmesg_problem is None:
            self.mode = "dmesg"
            ctx.notify(f"{kmsg_problem}; polling `{self.dmesg_cmd} -r` every {self.dmesg_interval_s:g} s")
            return None
        return f"{kmsg_problem}, and {dmesg_problem}"

    def _try_dmesg(self) -> str | None:
        if shutil.which(self.dmesg_cmd) is None:
            return f"no {self.dmesg_cmd} command"
        try:
            proc = subprocess.run([self.dmesg_cmd, "-r"], capture_output=True, timeout=5, check=False)
        except (OSError, subprocess.SubprocessError) as exc:
            return f"{self.dmesg_cmd} -r failed ({exc})"
        if proc.returncode != 0:
            return f"{self.dmesg_cmd} -r failed ({proc.stderr.decode(errors='replace').strip()[:200]})"
        return None

    def sample(self, ts_ns: int) -> Rows:
        lines = self._read_kmsg() if self.mode == "kmsg" else self._poll_dmesg()
        rows: list[Row] = []
        log_lines = []
        for line in lines:
            record = parse_record(line)
            if record is None:
                continue
            wall_ns = self.boot_ns + record.usec * 1000
            if wall_ns < self.cutoff_ns:
                continue
            found = classify(record.message, record.level)
            if found is None:
                continue
            kind, code, pci = found
            rows.append(
                {
                    "ts_ns": wall_ns,
                    "source": "kmsg",
                    "kind": kind,
                    "gpu": -1,
                    "pci": pci,
                    "code": code,
                    "message": record.message,
                }
            )
            log_lines.append(format_iso_line(record.prio, wall_ns, record.message))
        if log_lines and self.log_path is not None:
            with open(self.log_path, "a") as fh:
                fh.write("\n".join(log_lines) + "\n")
        return {"events": rows}

    def _read_kmsg(self) -> list[str]:
        """Up to max_records records; /dev/kmsg returns one per read, a plain file many."""
        lines: list[str] = []
        for _ in range(self.max_records):
            try:
                data = os.read(self.fd, 65536)  # type: ignore[arg-type]
            except BlockingIOError:
                break
            except OSError as exc:
                if exc.errno == errno.EPIPE:  # records overwritten before we read them: go on
                    continue
                raise
            if not data:
                break
            data = self._partial + data
            *complete, self._partial = data.split(b"\n")
            # Continuation lines (" KEY=value") carry device metadata, not messages.
            lines.extend(c.decode(errors="replace") for c in complete if c and not c.startswith(b" "))
            if len(lines) >= self.max_records:
                break
        return lines

    def _poll_dmesg(self) -> list[str]:
        if time.monotonic() - self._last_poll < self.dmesg_interval_s:
            return []
        self._last_poll = time.monotonic()
        try:
            proc = subprocess.run([self.dmesg_cmd, "-r"], capture_output=True, timeout=5, check=False)
        except (OSError, subprocess.SubprocessError):
            return []
        lines = []
        for line in proc.stdout.decode(errors="replace").splitlines():
            record = parse_record(line)
            if record is not None and record.usec > self._last_dmesg_usec:
                lines.append(line)
                self._last_dmesg_usec = record.usec
        return lines[-self.max_records :]

    def close(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None
