"""Scan one text file: cheap trigger words pick the lines worth parsing, then each parser family
(torchrun, c10d, gloo, NCCL, kernel, Python exceptions) gets a look. Multi-line constructs
(tracebacks, ChildFailedError blocks, wrapped NVRM messages, NCCL 'Last error:' details) are
followed with a small amount of state and look-ahead."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from scope.analyzers.diagnose.knowledge import env_settings, exit_codes, signals
from scope.analyzers.diagnose.knowledge.own_words import blank_own_lines
from scope.analyzers.diagnose.model import STALL, Anomaly, FileScan
from scope.analyzers.diagnose.readers import (
    infolines,
    kmsg,
    logs,
    nccl,
    signature_scan,
    stacks,
    torchrun,
)
from scope.analyzers.diagnose.readers.collector_prefix import srun_streams, strip_collector_prefix
from scope.analyzers.diagnose.readers.gdb_crash import gdb_crash
from scope.analyzers.diagnose.readers.lines import Parsed, parse_line

from scope.collective_calls import PY_CALLS
from scope.escapes import strip_escapes_keep_lines
from scope.op_names import canonical_op

# Words that mark a line worth parsing. Plain substrings: str.find over the whole text runs at memory
# speed, where one regex alternation of them all would try every word at every character.
TRIGGER_WORDS = (
    "Watchdog",
    "watchdog",
    "Timeout at NCCL work",  # torch 2.3's status line of a timed-out group (readers/logs.py's _PG_STATUS)
    "blocking wait",
    "aught collective operation timeout",
    "Heartbeat",
    "heartbeat",
    "dump debug info",
    "taking the entire process",
    "FlightRecorder",
    "Timed out",
    "timed out",
    "Connection reset",
    "Connection closed",
    "Broken pipe",
    "preamble",
    "expected size",
    "mismatch",
    "Traceback (most recent",
    "Error",
    "Exception",
    "terminate called",
    "what()",
    "Fatal Python",
    "exitcode",
    "Failures:",
    "Root Cause",
    "closing signal",
    "NCCL WARN",
    " WARN ",
    "NCCL version",
    "RCCL version",  # AMD's RCCL banner (knowledge/other_collectives.py RCCL_BANNER)
    "Init COMPLETE",
    "Init START",
    "Init timings",
    "Using network",
    "NET/OFI Selected",
    "Got completion",
    "coll channels",
    "ncclSystem",
    "ncclRemote",
    "ncclInternal",
    "ncclInvalid",
    "ncclUnhandled",
    "socketStartConnect",
    "Caught signal",
    "Process received signal",
    "Last error",
    "CUDA error",
    "NVRM",
    "Xid",
    "AER",
    "PCIe Bus Error",
    "nvidia-peermem",
    "segfault",
    "Out of memory",
    "oom-kill",
    "NVSwitch",
    "fallen off the bus",
    "device handle",
    "mlx5",
)
# Patterns that need a regex, each behind a word that must be in the text first.
GATED_TRIGGERS = (
    (("NET/",), re.compile(r"NET/\w+ ?: Using")),
    (("Rank",), re.compile(r"#\s+Rank\s+\d")),
    (("nan", "NaN", "inf", "Inf"), re.compile(r"\b(?:nan|NaN|inf|Inf)\b")),
    (
        ("exitcode",),
        re.compile(r"^[ \t]*\[\d+\]:[ \t]*\r?$|^[ \t]*(?:time|host|rank|error_file|traceback)[ \t]+:", re.M),
    ),
    (("Link ", "GPU "), re.compile(r"^[ \t]*Link \d+:|^GPU \d+: ", re.M)),
)
_TB_START = "Traceback (most recent call last):"
_TB_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+), in (\S+)')
_MAX_TB_LINES = 400
_FRAME_IN_LINE = re.compile(r'\bFile "[^"]+", line \d+, in \S+')
_EXCEPTION_LINE = re.compile(r"^[\w.]+(?:Error|Exception|Interrupt|Exit|Warning)\b")


class Scanner:
    """Parses one file's lines; parsers call `emit` and may read `lines` ahead."""

    def __init__(self, display: str, rank: int | None = None, host: str | None = None, year: int = 1970) -> None:
        self.display = display
        self.rank = rank
        self.host = host
        self.year = year
        self.lines: list[str] = []
        self.text = ""
        self.index = 0
        self.skip_lines: set[int] = set()
        self.state: dict[str, Any] = {}
        self.tracebacks: dict[Any, dict[str, Any]] = {}
        self.result = FileScan(path=display)

    # ---- used by the parsers ---------------------------------------------------------------------
    def emit(
        self,
        p: Parsed,
        code: str,
        kind: str,
        level: int,
        message: str,
        *,
        rank: int | None = None,
        host: str | None = None,
        severity: str = "critical",
        lineno: int | None = None,
        **details: Any,
    ) -> Anomaly:
        if rank is None:
            rank = p.rank if p.rank is not None else (self.rank if self.rank is not None else p.local_rank)
        anomaly = Anomaly(
            code=code,
            kind=kind,
            level=level,
            message=message,
            file=self.display,
            line=lineno or self.index + 1,
            rank=rank,
            host=host or p.host or self.host,
            time_ns=p.time_ns,
            mono_s=p.mono_s,
            details=details,
            severity=severity,
        )
        self.result.anomalies.append(anomaly)
        if rank is not None:
            self.result.ranks_seen.add(rank)
        return anomaly

    def _tb_key(self, p: Parsed) -> Any:
        return p.rank if p.rank is not None else p.local_rank

    def take_traceback(self, p: Parsed) -> list[str]:
        tb = self.tracebacks.pop(self._tb_key(p), None)
        return [f"{f}:{n} in {fn}" for fn, f, n in tb["frames"]] if tb else []

    def traceback_text(self, p: Parsed) -> str:
        """The open traceback of P's rank as printed (its frames and source lines, prefixes off, one a line)."""
        tb = self.tracebacks.get(self._tb_key(p))
        return "\n".join(tb.get("lines", ())) if tb else ""

    def open_frames(self, p: Parsed) -> int:
        """Frames of the traceback open on P's rank (0: none open): the line that closes one is its exception."""
        tb = self.tracebacks.get(self._tb_key(p))
        return len(tb["frames"]) if tb else 0

    def current_op(self, p: Parsed, frames: list[str] | None = None) -> str | None:
        """The collective the traceback was in (innermost torch.distributed frame)."""
        if frames is None:
            tb = self.tracebacks.get(self._tb_key(p))
            frames = [f"{f}:{n} in {fn}" for fn, f, n in tb["frames"]] if tb else []
        for frame in reversed(frames):
            func = frame.rsplit(" in ", 1)[-1]
            if func in PY_CALLS and "distributed" in frame:
                return canonical_op(func)
        return None

    # ---- the scan loop ---------------------------------------------------------------------------
    def scan(self, text: str) -> FileScan:
        # colour codes and other escapes out first (a coloured `[rank3]:` still names rank 3), then scope's
        # own words, which are never the job's failure
        text = blank_own_lines(strip_escapes_keep_lines(text))
        self.lines = text.split("\n")
        candidates = _trigger_lines(text)
        n = len(self.lines)
        i = 0
        while i < n:
            if i in self.skip_lines or (not self.tracebacks and i not in candidates):
                i += 1
                continue
            self.index = i
            p = parse_line(self.lines[i], self.year)
            i += 1 + max(0, self._dispatch(p, i))
        if " via " in text:
            nccl.transports(self, text)
        # the readers of the whole text see the program's own line starts (a dump's frames, a banner, env echoes)
        plain = strip_collector_prefix(text)
        streams = srun_streams(text) if stacks.has_stacks(plain) else {}
        for task, stream in streams.items():  # interleaved tasks' dumps read apart, the label as rank
            if stacks.has_stacks(stream):
                self._stacks(stream, task)
        if not streams and stacks.has_stacks(plain):
            self._stacks(plain)
        signature_scan.quiet_echoes(self.result.anomalies)
        exit_codes.read_benchmark_exits(
            self.result.anomalies, self.lines if plain is text else plain.split("\n"), plain
        )
        self.result.env = env_settings.settings(plain)
        # faulthandler's frame for a native crash while Python finalized; the same frame in a stack written on
        # SIGTERM (the hook's stacks/sigterm.txt) is only where the rank stood when it was stopped
        self.result.finalizing = "Garbage-collecting" in text and "Fatal Python error" in text
        if "opCount" in text:
            self.result.coll_calls = infolines.collective_calls(plain, self.display)
        self.text = text  # as read: escapes and scope's own lines out (reasoning/file_reading.py reads it)
        return self.result

    def _dispatch(self, p: Parsed, idx: int) -> int:
        if p.rank is not None:
            self.result.ranks_seen.add(p.rank)
        if self._traceback(p):
            return 0
        used = signature_scan.handle_signature(self, p, idx)  # a known signature says more than any generic rule
        if used >= 0:
            return used
        if nccl.handle_info(self, p):
            return 0
        for handler in (
            torchrun.handle_torchrun,
            logs.handle_c10d,
            logs.handle_gloo,
            nccl.handle_warn,
            kmsg.handle_kmsg,
            logs.handle_exception,
        ):
            used = handler(self, p, idx)
            if used >= 0:
                return used
        return 0

    def _traceback(self, p: Parsed) -> bool:
        """Collect frames of an open traceback; the exception line itself goes to the parsers."""
        key = self._tb_key(p)
        if p.text == _TB_START:
            self.tracebacks[key] = {"frames": [], "start": self.index}
            return True
        tb = self.tracebacks.get(key)
        if tb is None:
            return self._cut_frame_source(p)
        m = _TB_FRAME.match(p.text)
        if m:
            tb["frames"].append((m.group(3), m.group(1), int(m.group(2))))
            tb.setdefault("lines", []).append(p.text.strip())
            return True
        if self.index - tb["start"] > _MAX_TB_LINES:
            self.tracebacks.pop(key, None)
            return False
        # source lines, carets and blank lines inside the traceback (kept: a row's traceback_re reads the code)
        inside = p.indented or not p.text or p.text[:1] in "^~"
        if inside and p.text.strip():
            tb.setdefault("lines", []).append(p.text.strip())
        return inside

    def _cut_frame_source(self, p: Parsed) -> bool:
        """An excerpt that starts inside a traceback: a line right after a frame line is a source line, the
        program's code (`raise RuntimeError(f"NCCL error: {error_str}")`), not an error it printed."""
        if not p.indented or self.index == 0 or _EXCEPTION_LINE.match(p.text):
            return False
        return bool(_FRAME_IN_LINE.search(self.lines[self.index - 1]))

    def _stacks(self, text: str, task: int | None = None) -> None:
        lines = text.splitlines()
        for dump in stacks.parse_stacks(text):
            if dump.form == "gdb" and self._gdb_crash(lines, dump.first_line):
                continue  # a core dump's backtrace: the signal, not a place the process waits
            if dump.signal:
                self._lldb_crash(lines, dump)
                continue  # lldb stopped on a fault or abort: the signal, as gdb's crash backtrace
            where = stacks.where(dump)
            if where["state"] == "unknown" or dump.reason in ("exception", "exit"):
                continue  # after the rank's own exception its stack says nothing about a hang
            in_coll = where["state"] == "in_collective"
            message = (
                f"main thread waits in {where['op']}"
                if in_coll
                else f"main thread is outside any collective, at {where['frame']}"
            )
            rank = self.rank if self.rank is not None else task if task is not None else dump.rank
            anomaly = Anomaly(
                code="stack_" + str(where["state"]),
                kind="hang",
                level=STALL,
                message=message,
                file=self.display,
                line=dump.first_line,
                rank=rank,
                host=self.host,
                time_ns=dump.time_ns,
                severity="info",
                details={**where, "pid": dump.pid, "reason": dump.reason},
            )
            self.result.anomalies.append(anomaly)

    def _lldb_crash(self, lines: list[str], dump: stacks.StackDump) -> None:
        """An lldb backtrace of a process stopped by a fault or an abort: emitted as that signal."""
        sig = signals.meaning(signal_name=dump.signal)
        idx = dump.signal_line - 1
        p = parse_line(lines[idx], self.year)
        number, name = (sig.number, sig.name) if sig is not None else (0, dump.signal)
        nccl.emit_signal(self, p, idx, number, name, stacks.crash_frames(dump), "lldb's backtrace")

    def _gdb_crash(self, lines: list[str], first_line: int) -> bool:
        """A gdb backtrace whose frame 0 only a crash shows: emitted as the signal, with its faulting library."""
        crash = gdb_crash(lines, first_line)
        if crash is None:
            return False
        p = parse_line(lines[crash.line], self.year)
        nccl.emit_signal(self, p, crash.line, crash.signum, crash.signal, crash.frames, "gdb's backtrace")
        return True


@functools.cache
def _extra_needles() -> tuple[str, ...]:
    """Signature needles a trigger word does not already cover (a needle holding a shorter one is redundant)."""
    words = (*TRIGGER_WORDS, *signature_scan.needles())
    holds_another = _holds_another(words)
    kept = [n for n in signature_scan.needles() if not any(w in n for w in TRIGGER_WORDS) and not holds_another(n)]
    # rows match needles case-insensitively; a message starts a sentence with the word or not
    return tuple(dict.fromkeys(v for n in kept for v in (n, n.lower(), n[:1].upper() + n[1:])))


def _holds_another(words: tuple[str, ...]) -> Callable[[str], bool]:
    """Whether a needle holds another word: by looking its substrings of the words' lengths up in a set,
    not by testing every pair (40,000 user rows made the pairwise test take minutes)."""
    known = set(words)
    lengths = sorted({len(w) for w in known})

    def holds(n: str) -> bool:
        for size in lengths:
            if size >= len(n):
                return False
            if any(n[i : i + size] in known for i in range(len(n) - size + 1)):
                return True
        return False

    return holds


@functools.cache
def _lower_needles() -> tuple[str, ...]:
    """The needles for the lowered text: each pass costs the whole log, so a needle that holds another one once both
    are lowered ('hccl function error' holds 'hccl') is left out: its lines are the other's already."""
    lowered = tuple(dict.fromkeys(n.lower() for n in _extra_needles()))
    holds_another = _holds_another(lowered)
    return tuple(n for n in lowered if not holds_another(n))


signature_scan.clear_with_rows(_extra_needles.cache_clear)
signature_scan.clear_with_rows(_lower_needles.cache_clear)


def _trigger_lines(text: str) -> set[int]:
    """Indices of the lines a trigger appears on."""
    hits: list[int] = []
    for word in TRIGGER_WORDS:
        pos = text.find(word)
        while pos >= 0:
            hits.append(pos)
            nl = text.find("\n", pos)
            pos = text.find(word, nl) if nl >= 0 else -1
    # signature needles match case-insensitively: one pass per needle over the lowered text instead of one per
    # spelling. Its offsets are the text's where lowering kept one character for each (every ASCII text, and a
    # log with tqdm's '█' or CJK; 'İ' is the one character that lowers to two): the spellings' three passes a
    # needle are for the rest only
    hay = text.lower()
    needles = _lower_needles()
    if len(hay) != len(text):
        hay, needles = text, _extra_needles()
    for word in needles:
        pos = hay.find(word)
        while pos >= 0:
            hits.append(pos)
            nl = hay.find("\n", pos)
            pos = hay.find(word, nl) if nl >= 0 else -1
    for gates, pattern in GATED_TRIGGERS:
        if any(g in text for g in gates):
            hits.extend(m.start() for m in pattern.finditer(text))
    found: set[int] = set()
    line = last = 0
    for pos in sorted(hits):
        line += text.count("\n", last, pos)
        last = pos
        found.add(line)
    return found


def scan_text(text: str, display: str, rank: int | None = None, host: str | None = None, year: int = 1970) -> FileScan:
    return Scanner(display, rank, host, year).scan(text)
