"""Peel the prefixes and timestamps that launchers, loggers and the kernel put before a log message.

Seen in the wild, in any combination and order:
  [default3]:            torchrun --tee (local rank)
  [rank3]:               torch >= 2.2 per-rank prefix
  [1,3]<stdout>:         Open MPI --tag-output  /  [3]<stderr>:  horovodrun (gloo)
  3:  /  [155]           srun --label / launcher rank tags
  [2024-05-08 08:47:31,261]              Python logging (torchrun <= 2.3)
  E0801 13:23:20.000000 32974 file.py:874]  glog (torchrun >= 2.4)
  [E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607]  c10d (no year)  /  [E ProcessGroupNCCL.cpp:737]
  [ 1843.308145]  [  +0.000316]          dmesg monotonic / relative
  [Sun Feb 23 16:24:18 2025]             dmesg --ctime
  kern  :warn  : 2025-01-21T04:41:44,285060+00:00   dmesg --decode --time-format iso
  6,3973,227996636,-;                    /dev/kmsg records
  Dec  2 11:38:47 worker4 kernel:        syslog / journalctl (host named)
  [Feb 25 2025 13:59:45]                 Fabric Manager
  host:pid:tid [dev]                     NCCL_DEBUG lines (host named)
  (RayWorkerWrapper pid=11305)           Ray's worker-output prefix (also ', ip=10.0.0.2')
  ERROR 08-27 05:12:18 worker_base.py:382]   vLLM's logger (one space after the bracket: code keeps its indent)
Times without a zone are taken as UTC, consistently; year-less stamps borrow the file's year hint.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass

from scope.analyzers.diagnose.readers.nccl_prefix import read_prefix

MONTHS = {m: i for i, m in enumerate(calendar.month_abbr) if m}

_RANK = re.compile(r"\[rank(\d+)\]:\s?")
_DEFAULT = re.compile(r"\[default(\d+)\]:")
_MPI = re.compile(r"\[(?:\d+,)?(\d+)\]<(?:stdout|stderr)>:")
_SRUN = re.compile(r"(\d{1,6}): (?=\S)")
_TAG = re.compile(r"\[(\d{1,6})\] (?=\S)")
_PYLOG = re.compile(r"\[(\d{4})-(\d\d)-(\d\d)[ T_](\d\d):(\d\d):(\d\d)(?:[.,](\d+))?\]\s*")
_KERN_ISO = re.compile(
    r"[a-z]+\s*:\s*[a-z]+\s*: (\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:[.,](\d+))?"
    r"(?:([+-])(\d\d):?(\d\d)|Z)?\s+"
)
_CTIME = re.compile(r"\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ([A-Z][a-z]{2}) +(\d+) (\d\d):(\d\d):(\d\d) (\d{4})\]\s*")
_SYSLOG = re.compile(r"([A-Z][a-z]{2}) +(\d+) (\d\d):(\d\d):(\d\d) ([\w.\-]+) (?:kernel: )?")
_MONO = re.compile(r"\[\s*(\d+\.\d+)\]\s*")
_REL = re.compile(r"\[\s*\+(\d+\.\d+)\]\s*")
_KMSG = re.compile(r"\d+,\d+,(\d+),[^;]*;")
_GLOG = re.compile(r"[IWEF](\d{3,4}) (\d\d):(\d\d):(\d\d)\.(\d+)\s+\d+ \S+?:\d+\]\s*")
_C10D = re.compile(r"\[[IWEF](\d{3,4}) (\d\d):(\d\d):(\d\d)\.(\d+) [^\]]*\]\s*")
_C10D_OLD = re.compile(r"\[[IWEF] [\w.]+:\d+\]\s*")
_FM = re.compile(r"\[([A-Z][a-z]{2}) (\d+) (\d{4}) (\d\d):(\d\d):(\d\d)\]\s*")
_KERNEL = re.compile(r"kernel: ")
_RAY = re.compile(r"\((\w+) pid=(\d+)(?:, ip=[\d.]+)?\) ")
_VLLM = re.compile(r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (\d\d)-(\d\d) (\d\d):(\d\d):(\d\d) [\w.]+:\d+\] ")
_VLLM_LEVELS = ("DEBU", "INFO", "WARN", "ERRO", "CRIT")  # a cheap gate before the regex, on every line


@dataclass(slots=True)
class Parsed:
    text: str
    rank: int | None = None
    # the job's RANK (knowledge/c10d_groups.py): c10 logging's '[rankN]:', or a launcher's label of it (srun --label's
    # SLURM_PROCID, Open MPI's --tag-output rank in MPI_COMM_WORLD); never torchrun's local '[defaultN]:'
    global_rank: int | None = None
    local_rank: int | None = None
    host: str | None = None
    pid: int | None = None
    device: int | None = None
    time_ns: int | None = None
    mono_s: float | None = None
    indented: bool = False  # the message began with whitespace (traceback source lines, block fields)


def line_at(lines: list[str], number: int) -> str:
    """The text of 1-based line `number` of a file's lines ('' outside them: an anomaly with no line)."""
    return lines[number - 1] if 0 < number <= len(lines) else ""


def frac_ns(frac: str | None) -> int:
    return int(frac.ljust(9, "0")[:9]) if frac else 0


def epoch_ns(year: int, month: int, day: int, hh: int, mm: int, ss: int, frac: str | None = None) -> int | None:
    try:
        secs = calendar.timegm((year, month, day, hh, mm, ss, 0, 0, 0))
    except (ValueError, OverflowError):
        return None
    return secs * 1_000_000_000 + frac_ns(frac)


def _mmdd(digits: str) -> tuple[int, int]:
    """glog's month+day: 'E321' is March 21, 'E1206' December 6."""
    return (int(digits[:-2]), int(digits[-2:]))


def _strip_once(s: str, out: Parsed, year: int) -> str | None:
    """Remove one known prefix from the start of `s`; None when there is none."""
    m = _RANK.match(s)
    if m:
        out.rank = out.global_rank = int(m.group(1))
        return s[m.end() :]
    m = _DEFAULT.match(s)
    if m:
        out.local_rank = int(m.group(1))
        return s[m.end() :]
    m = _MPI.match(s)
    if m:
        out.rank = out.global_rank = int(m.group(1))
        return s[m.end() :]
    if s[:1] == "[":
        return _strip_bracket(s, out, year)
    if s[:1] == "(":
        m = _RAY.match(s)
        if m:
            out.pid = int(m.group(2))
            return s[m.end() :]
    m = _VLLM.match(s) if s[:4] in _VLLM_LEVELS else None
    if m:
        mon, day, hh, mm, ss = (int(x) for x in m.groups())
        out.time_ns = epoch_ns(year, mon, day, hh, mm, ss)
        return s[m.end() :]
    m = _KMSG.match(s)
    if m:
        out.mono_s = int(m.group(1)) / 1e6
        return s[m.end() :]
    m = _KERN_ISO.match(s)
    if m:
        g = m.groups()
        t = epoch_ns(int(g[0]), int(g[1]), int(g[2]), int(g[3]), int(g[4]), int(g[5]), g[6])
        if t is not None and g[7]:
            sign = 1 if g[7] == "+" else -1
            t -= sign * (int(g[8]) * 3600 + int(g[9]) * 60) * 1_000_000_000
        out.time_ns = t
        return s[m.end() :]
    m = _GLOG.match(s)
    if m:
        mon, day = _mmdd(m.group(1))
        out.time_ns = epoch_ns(year, mon, day, int(m.group(2)), int(m.group(3)), int(m.group(4)), m.group(5))
        return s[m.end() :]
    m = _SYSLOG.match(s)
    if m and m.group(1) in MONTHS:
        g = m.groups()
        out.time_ns = epoch_ns(year, MONTHS[g[0]], int(g[1]), int(g[2]), int(g[3]), int(g[4]))
        out.host = g[5]
        return s[m.end() :]
    m = _KERNEL.match(s) or _SRUN.match(s)
    if m:
        if m.re is _SRUN and out.rank is None:
            out.rank = out.global_rank = int(m.group(1))
        return s[m.end() :]
    return None


def _strip_bracket(s: str, out: Parsed, year: int) -> str | None:
    m = _C10D.match(s)
    if m:
        mon, day = _mmdd(m.group(1))
        out.time_ns = epoch_ns(year, mon, day, int(m.group(2)), int(m.group(3)), int(m.group(4)), m.group(5))
        return s[m.end() :]
    m = _C10D_OLD.match(s) or _REL.match(s)
    if m:
        return s[m.end() :]
    m = _MONO.match(s)
    if m:
        out.mono_s = float(m.group(1))
        return s[m.end() :]
    m = _PYLOG.match(s)
    if m:
        g = m.groups()
        out.time_ns = epoch_ns(int(g[0]), int(g[1]), int(g[2]), int(g[3]), int(g[4]), int(g[5]), g[6])
        return s[m.end() :]
    m = _CTIME.match(s)
    if m and m.group(1) in MONTHS:
        g = m.groups()
        out.time_ns = epoch_ns(int(g[5]), MONTHS[g[0]], int(g[1]), int(g[2]), int(g[3]), int(g[4]))
        return s[m.end() :]
    m = _FM.match(s)
    if m and m.group(1) in MONTHS:
        g = m.groups()
        out.time_ns = epoch_ns(int(g[2]), MONTHS[g[0]], int(g[1]), int(g[3]), int(g[4]), int(g[5]))
        return s[m.end() :]
    m = _TAG.match(s)
    if m:
        if out.rank is None:
            out.rank = int(m.group(1))
        return s[m.end() :]
    return None


def parse_line(raw: str, year: int) -> Parsed:
    """Strip every leading prefix of one line; what is left is the message."""
    out = Parsed(text="")
    s = raw.rstrip("\r\n")
    for _ in range(8):
        rest = _strip_once(s, out, year)
        if rest is None:
            break
        s = rest
    out.indented = s[:1].isspace()
    nccl = read_prefix(s)
    if nccl:
        out.host = out.host or nccl.host or None
        out.pid = nccl.pid
        out.device = nccl.device
    out.text = s.strip()
    return out
