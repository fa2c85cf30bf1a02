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
    if not reports or ng.GROUP_FORMED.search(text):
        return None
    launch = _launch(text)
    repeated = _repeated(reports)
    if launch is None and not repeated:
        return None
    lineno, line = repeated[0] if repeated else reports[0]
    quoted = " ".join(_PREFIX.sub("", line).split())[:_QUOTE_CHARS]
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


# How far before a '-1' its 'rank' / 'size' word may stand ('world_size:      -1', aligned columns)
_WORD_BEFORE = 40


def _reports(text: str) -> list[tuple[int, str]]:
    """(1-based line, line) of each line that is a process's own report of rank or world size -1. Read from each
    '-1' whose words before it name a rank or a size: a dated log has a '-1' on most lines ('2025-11-03'), and
    splitting a 50 MB log into lines to try the regex on each cost a second."""
    found: list[tuple[int, str]] = []
    counted = (0, 1)  # (offset, its 1-based line): lines counted on from the last report
    pos = text.find("-1")
    while pos >= 0:
        before = text[max(0, pos - _WORD_BEFORE) : pos].lower()
        if "rank" not in before and "size" not in before:
            pos = text.find("-1", pos + 2)
            continue
        start = text.rfind("\n", 0, pos) + 1
        end = text.find("\n", pos)
        line = text[start : len(text) if end < 0 else end]
        if ng.RANK_REPORT.search(line) and not ng.NOT_A_REPORT.search(line):
            counted = (start, counted[1] + text.count("\n", counted[0], start))
            found.append((counted[1], line.strip()))
        pos = -1 if end < 0 else text.find("-1", end)
    return found


_PREFIX = re.compile(r"^(?:\[\d+(?:,\d+)?\]<std(?:out|err)>:|\d+:|\[rank\d+\]:|[\w.-]+:\d+:)\s*")


def _repeated(reports: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The reports whose text (past a per-process prefix: srun's '0: ', Open MPI's '[1,0]<stdout>:') was printed
    more than once: the same print by several processes."""
    seen: dict[str, list[tuple[int, str]]] = {}
    for lineno, line in reports:
        seen.setdefault(_PREFIX.sub("", line), []).append((lineno, line))
    many = [group for group in seen.values() if len(group) > 1]
    return max(many, key=len) if many else []


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
