"""A setting the log shows made in the launching shell only, which Open MPI's mpirun does not carry to the ranks
on other hosts (knowledge/launcher_env.py holds the shapes, the sources and the remedy).

Two readings: the command line (settings before `mpirun`, or `export`ed above it, on a job over several hosts,
with no `-x NAME` for them), and NCCL's own echo ('NCCL INFO NCCL_SHM_DISABLE set by environment to 1') printed
by the processes of one host and not by another host's processes that went as far through init. A run that
completed is no finding: a setting that differed between hosts did not stop it.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from scope.analyzers.diagnose.knowledge import launcher_env as le
from scope.analyzers.diagnose.knowledge.env_settings import ECHO
from scope.analyzers.diagnose.model import APPLICATION, Anomaly
from scope.analyzers.diagnose.readers.nccl_prefix import nccl_lines
from scope.analyzers.diagnose.reasoning.excerpt import excerpted

# NCCL lines past the point where a process has read its transport settings (channel set-up, init's end): a
# process that printed one and no echo of a variable ran without it.
_PAST_SETTINGS = re.compile(r"Channel \d+|via (?:P2P|SHM|NET)|Connected all|Init COMPLETE")


class Unforwarded(NamedTuple):
    names: list[str]  # the variables the other hosts' ranks did not get
    line: int  # 1-based line of the command, or of the first echo
    what: str  # the finding's message
    command: str  # the launch line as the log shows it ('' when read from echoes)


def unexported_settings(text: str, display: str, completed: bool = False) -> Anomaly | None:
    """The finding for settings the launching shell made that ranks on other hosts never got; None where the
    log shows the run completed (`completed`: its last stage a clean end)."""
    if completed:
        return None
    found = _from_command(text) if ("mpirun" in text or "mpiexec" in text) else None
    if found is None and "set by environment" in text:
        found = _from_echoes(text)
    if found is None:
        return None
    flags = " ".join(f"-x {n}" for n in found.names)
    return Anomaly(
        code="launcher_env_not_forwarded",
        kind="config_error",
        level=APPLICATION,
        message=found.what,
        file=display,
        line=found.line,
        severity="critical",
        details={
            "confidence": "medium",
            "variables": found.names,
            "remedy": le.REMEDY.format(flags=flags, launch=le.launch_with_x(found.command)),
            "reference": "Open MPI mpirun(1) -x; NVIDIA/nccl#260, #626, #743",
        },
    )


def _from_command(text: str) -> Unforwarded | None:
    for m in le.COMMAND.finditer(text):
        args = m.group("args")
        if not le.OPEN_MPI.search(" " + args) or le.HYDRA.search(" " + args) or not le.HOSTS.search(" " + args):
            continue
        names = le.SETTING.findall(m.group("env")) + le.EXPORTED.findall(text, 0, m.start())
        forwarded = set(le.FORWARD.findall(" " + args))
        missing = list(dict.fromkeys(n for n in names if n not in forwarded and not le.PRINT_ONLY.match(n)))
        if not missing:
            continue
        cmd = m.group(0).strip()
        what = (
            f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} set in the launching shell only "
            f"('{cmd[:100]}'), and Open MPI's mpirun passes to ranks on other hosts only what -x names: the ranks "
            "on the other hosts ran without the setting"
        )
        return Unforwarded(missing, text.count("\n", 0, m.start()) + 1, what, cmd)
    return None


def _from_echoes(text: str) -> Unforwarded | None:
    """A variable echoed by one host's processes and not by another host's that went past reading it."""
    if excerpted(text):
        return None  # lines were left out: a missing echo may be among them
    echoed: dict[str, set[str]] = {}
    first_line: dict[str, int] = {}
    past: set[str] = set()
    for lineno, nccl in nccl_lines(text):
        if not nccl.host or nccl.level != "INFO":
            continue
        m = ECHO.search("NCCL INFO " + nccl.message)
        if m:
            echoed.setdefault(m.group(1), set()).add(nccl.host)
            first_line.setdefault(m.group(1), lineno)
        elif _PAST_SETTINGS.search(nccl.message):
            past.add(nccl.host)
    for var, hosts in echoed.items():
        without = sorted(past - hosts)
        if without and var.startswith(le.HOST_MISMATCH_PREFIXES):
            what = (
                f"{var} is set on {', '.join(sorted(hosts))} (NCCL echoes it there) but not on "
                f"{', '.join(without[:4])}, whose NCCL lines go past the point where it is read: the hosts run "
                "with different settings, as when the launcher does not pass the variable to other hosts"
            )
            return Unforwarded([var], first_line[var], what, "")
    return None
