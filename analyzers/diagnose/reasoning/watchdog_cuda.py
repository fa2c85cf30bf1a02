"""A kernel's CUDA fault that surfaced first in ProcessGroupNCCL's watchdog: one report stays a crash, several ranks'
reports together an NCCL error, led by its transports.

The cuda_illegal_memory_access row reads every line that names the fault as a crash ('find the kernel'). Where the
file's first such line is the watchdog's (its exit line, or an error whose C++ stack shows the watchdog's
work-status check: knowledge/watchdog_cuda.WATCHDOG_MARKS), no compute op raised the error before it. The watchdog
polls every few hundred ms and meets any kernel's sticky fault, so one process's report (its line, the what() echo,
its other groups' watchdogs) keeps the crash, the kernel search first and the transports added as the next step.
Where several ranks report it together (a compute fault on one rank leaves its peers waiting, not faulting), the
collectives' kernels are the suspects, and on one node NCCL's peer transports are a known cause: the file's lines of
the fault become one nccl_error whose remedy bisects the transports (the ones the log shows NCCL used first),
keeping the kernel search after it; a main thread that meets the sticky error later (a Python exception after the
watchdog's line) tells nothing of the kernel. A first line that a compute op raised (a Python exception naming the
fault, a stack without the watchdog's frames) keeps them all a crash. A real earlier root (an Xid, an OOM, another
exception) still outranks it: an nccl_error is a communication error, below a hardware fault and an application's
own error.
"""

from __future__ import annotations

import re

from scope.analyzers.diagnose.knowledge import watchdog_cuda as wd
from scope.analyzers.diagnose.knowledge.c10d_groups import DEFAULT_GROUP_ID, GROUP_RANK, group_fields, group_key
from scope.analyzers.diagnose.model import COMM_ERROR, Anomaly

CODE = "cuda_illegal_memory_access"  # the signature row whose lines are read here
_GLOBAL_RANK = re.compile(r"^\s*\[rank(\d+)\]:")  # c10 logging's prefix: the global rank


def seen_by_watchdog_first(anomalies: list[Anomaly], text: str) -> None:
    """Re-read the file's kernel-fault lines as an NCCL error where the watchdog reported the fault first."""
    faults = [a for a in anomalies if a.code == CODE and a.severity != "info" and a.line > 0]
    if not faults or "atchdog" not in text:
        return
    lines = text.split("\n")
    if not _watchdog_saw(lines, min(a.line for a in faults) - 1):
        return  # a compute op raised it first (or its line says nothing of who saw it): the kernel search leads
    faults.sort(key=lambda a: a.line)
    watchdogs = [a for a in faults if _watchdog_saw(lines, a.line - 1)]
    reporters = {k for a in watchdogs if (k := _reporter(a, lines[a.line - 1])) is not None}
    ranks = sorted(r for space, r in reporters if space == "")
    others = _other_stacks(lines, faults)
    # One rank's line and its what() echo are one report, and so are one process's groups' watchdogs (each group's
    # meets the same sticky fault). The watchdog polls every few hundred ms and reports any kernel's sticky fault,
    # so one report is no evidence of a collective's kernel (a compute fault on one rank leaves its peers waiting,
    # not faulting): only several ranks faulting together point at NCCL's kernels.
    if not _several(reporters) and not others:
        _note_transports(faults, ranks, text)
        return
    fields = {
        "cuda_error": _fault_named([faults[0].message, *_tail(lines, faults[0].line - 1)]),
        "seen": _seen(ranks, others),
        "settings": _settings(text),
        "gpus": _gpus(text, ranks),
    }
    remedy = wd.REMEDY.format(**fields)
    for a in faults:
        old = str(a.details.get("meaning", ""))
        a.code, a.kind, a.level = "nccl_watchdog_cuda_error", "nccl_error", COMM_ERROR
        a.message = wd.MEANING + a.message[len(old) :] if old and a.message.startswith(old) else a.message
        a.details.update(
            signature="nccl_watchdog_cuda_error",
            cause="nccl_bug",
            meaning=wd.MEANING,
            remedy=remedy,
            reference=wd.REFERENCE,
            confidence="medium",  # several ranks at once: a compute fault hits one
            cuda_error=fields["cuda_error"],
            watchdog_ranks=ranks,
        )


def _note_transports(faults: list[Anomaly], ranks: list[int], text: str) -> None:
    """One watchdog's report keeps the kernel search first; the transports are the next suspects if it recurs on
    every rank at once."""
    note = wd.ONE_REPORT_NOTE.format(seen=_seen(ranks, []), settings=_settings(text))
    for a in faults:
        remedy = str(a.details.get("remedy") or "")
        if note not in remedy:
            a.details["remedy"] = f"{remedy} {note}".strip()


def _watchdog_saw(lines: list[str], at: int) -> bool:
    """The error at line AT is the watchdog's: its own line says so, or the C++ stack printed under it does."""
    return bool(wd.WATCHDOG_SAW.search(lines[at])) or any(wd.WATCHDOG_SAW.search(ln) for ln in _tail(lines, at))


def _tail(lines: list[str], at: int) -> list[str]:
    """The lines of the error at line AT's C++ stack under it (CUDA's notes, 'Exception raised from', frames)."""
    out: list[str] = []
    for ln in lines[at + 1 : at + 1 + wd.TAIL_LINES]:
        if not wd.ERROR_TAIL.match(ln):
            break  # the error's stack ended: another line, another message
        out.append(ln)
    return out


def _other_stacks(lines: list[str], faults: list[Anomaly]) -> list[str]:
    """The watchdog loops named by rethrow stacks that are no fault line's own (another rank's report whose first
    line was cut away or lost among other output)."""
    own = {at for a in faults for at in range(a.line, a.line + len(_tail(lines, a.line - 1)))}
    return [m.group("loop") for at, ln in enumerate(lines) if at not in own and (m := wd.WATCHDOG_STACK.search(ln))]


def _reporter(a: Anomaly, line: str) -> tuple[str, int] | None:
    """Which process reported: ('', its global rank) where the line says it ('[rankN]:', or the default group's
    rank, the same number), else (the group, the rank within it): ProcessGroupNCCL's '[PG ... Rank R]' is the rank
    within that group (knowledge/c10d_groups.py), which only another rank of the same group can be told from. A
    '[Rank R]' naming no group (torch < 2.3) is taken as global, as that release's single-group jobs print it."""
    m = _GLOBAL_RANK.search(line)
    if m:
        return ("", int(m.group(1)))
    if a.rank is not None:
        return ("", a.rank)
    g = GROUP_RANK.search(line)
    if g is None:
        return None
    fields = group_fields(g)
    if not fields or fields["pg"] == DEFAULT_GROUP_ID or fields.get("pg_desc") == "default_pg":
        return ("", int(g.group(4)))
    return (group_key(fields) or f"per-process pg {fields['pg']}", int(g.group(4)))


def _several(reporters: set[tuple[str, int]]) -> bool:
    """Two processes reported: two ranks of one numbering (the global ranks, or one group's); ranks of two groups'
    numberings may be one process."""
    spaces = [space for space, _ in reporters]
    return any(spaces.count(space) > 1 for space in set(spaces))


def _fault_named(said: list[str]) -> str:
    """The CUDA error the fault's message names (the scanner's message joins std::terminate's what() line)."""
    m = next((m for s in said if (m := wd.KERNEL_FAULT.search(s))), None)
    return m.group("cuda_error") if m else "an illegal memory access was encountered"


def _seen(ranks: list[int], others: list[str]) -> str:
    said = f"rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))}" if ranks else "one process's watchdog"
    if others:
        n = len(others)
        said += f", and {n} more watchdog stack{'s' if n > 1 else ''} ('Exception raised from {others[0]}')"
    return said


def _settings(text: str) -> str:
    """The transports' settings, the ones the log shows NCCL used first."""
    used = [t for t in wd.TRANSPORTS if re.search(t.shown, text)]
    ordered = used + [t for t in wd.TRANSPORTS if t not in used]
    return ", ".join(
        f"{t.setting} ({t.what}{', which the log shows NCCL using' if t in used else ''})" for t in ordered
    )


def _gpus(text: str, ranks: list[int]) -> str:
    m = wd.GPU_COUNT.search(text)
    if m:
        return next(g for g in m.groups() if g is not None)
    return str(max(ranks) + 1) if len(ranks) > 1 else "<GPUs of the node>"
