"""A distributed launch whose processes report rank -1 / world size -1: they never joined one process group
(knowledge/no_group_rank.py holds the shapes, the launchers' remedies and the sources).

The report counts only where the log shows several processes: a launch command that starts more than one, or the
same report printed more than once (each process prints it). A single process's -1 is the script's
not-distributed default, and a log that shows the group formed after all (a rank of 1 or more, NCCL's 'Init
COMPLETE') read its -1 before init: neither is a finding.
"""

from __future__ import annotations

import re

from scope.analyzers.diagnose.knowledge import no_group_rank as ng
from scope.analyzers.diagnose.model import APPLICATION, Anomaly

_QUOTE_CHARS = 120


def ranks_outside_group(text: str, display: str, completed: bool = False) -> Anomaly | None:
    """The finding for a launch whose processes all report rank -1 (or world size -1); None where the log shows
    one process only, or the group formed. A run that completed is still one of lone processes: a warning."""
    if "-1" not in text:
        return None
    reports = _reports(text)
    if not reports:
        return None
    launch = _launch(text)
    repeated = _repeated(reports, text)
    if (launch is None and not repeated) or _group_formed(text):
        return None
    _, lineno, line = repeated[0] if repeated else reports[0]
    quoted = " ".join(ng.PROCESS_PREFIX.sub("", line).split())[:_QUOTE_CHARS]
    if launch is not None:
        row, command, program = launch
        launcher = row.remedy.format(command=command, program=program)
        source = row.source
    else:
        launcher, command, source = (
            "Check what the launcher sets for each process: torchrun, deepspeed and accelerate set RANK / "
            "WORLD_SIZE / LOCAL_RANK; srun sets SLURM_PROCID / SLURM_NTASKS; mpirun sets OMPI_COMM_WORLD_RANK "
            "(Open MPI) or PMI_RANK, and with the MPI backend torch.distributed.is_mpi_available() must be True "
            "for the MPI that mpirun runs",
            "",
            "",
        )
    where = f" under '{command[:100]}'" if command else f" ({len(repeated)} processes)"
    return Anomaly(
        code="rank_outside_process_group",
        kind="config_error",
        level=APPLICATION,
        message=(
            f"The processes of a distributed launch{where} report rank / world size -1 ('{quoted}'): none of them "
            "joined one process group, so each ran alone"
        ),
        file=display,
        line=lineno,
        severity="warning" if completed else "critical",
        details={
            "confidence": "medium",
            "remedy": ng.REMEDY.format(line=quoted, launcher=launcher, generic=ng.GENERIC),
            "reference": ng.REFERENCE + (f"; {source}" if source else ""),
            "launcher": command,
        },
    )


Report = tuple[int, int, str]  # (offset of the line in the text, 1-based line number, the line)


def _reports(text: str) -> list[Report]:
    """Each line that is a process's own report of rank or world size -1. Found from the standalone '-1's (a literal
    scan), each tried against the words just before it: a big log costs one pass, not a regex per line."""
    found: list[Report] = []
    lineno, counted_to, last_start = 1, 0, -1
    for m in ng.MINUS_ONE.finditer(text):
        pos = m.start()
        if not ng.RANK_BEFORE.search(text, max(0, pos - ng.WORD_REACH), pos):
            continue
        start = text.rfind("\n", 0, pos) + 1
        if start == last_start:
            continue
        last_start = start
        end = text.find("\n", pos)
        line = text[start : end if end >= 0 else len(text)]
        if ng.NOT_A_REPORT.search(ng.PROCESS_PREFIX.sub("", line, count=1)):
            continue
        lineno += text.count("\n", counted_to, start)
        counted_to = start
        found.append((start, lineno, line.strip()))
    return found


def _repeated(reports: list[Report], text: str) -> list[Report]:
    """The reports whose text (past a per-process prefix: srun's '0: ', Open MPI's '[1,0]<stdout>:') was printed
    more than once by several processes: prefixes that name different processes, or copies with no training
    progress between them (one process printing its line again at a later epoch is one process)."""
    seen: dict[str, list[Report]] = {}
    for report in reports:
        seen.setdefault(ng.PROCESS_PREFIX.sub("", report[2]), []).append(report)
    many = [group for group in seen.values() if len(group) > 1 and _several_processes(group, text)]
    return max(many, key=len) if many else []


def _several_processes(copies: list[Report], text: str) -> bool:
    prefixes = {m.group(0).strip() for _, _, line in copies if (m := ng.PROCESS_PREFIX.match(line))}
    if len(prefixes) > 1:
        return True
    first, last = copies[0], copies[-1]
    return not ng.PROGRESS.search(text, first[0] + len(first[2]), last[0])


def _group_formed(text: str) -> bool:
    """Whether a line of the log shows the process group formed after all (knowledge/no_group_rank.GROUP_FORMED:
    patterns on the lower-cased log, each opening with a literal)."""
    low = "\n" + text.lower()
    return any(pattern.search(low) for pattern in _FORMED)


_FORMED = tuple(re.compile(pattern) for pattern, _ in ng.GROUP_FORMED)


def _launch(text: str) -> tuple[ng.Launch, str, str] | None:
    """The launcher row, the command line and its program, of a launch that starts more than one process."""
    for m in ng.COMMAND.finditer(text):
        name = m.group("launcher")
        row = next((r for r in ng.LAUNCHES if re.fullmatch(r.command, name)), None)
        if row is None:
            continue
        counts = [int(c) for c in re.findall(row.size_re, " " + m.group("args"))]
        many = max(counts) > 1 if counts else row.many_by_default
        if many:
            return row, " ".join(m.group(0).split()), " ".join(name.split())
    return None
