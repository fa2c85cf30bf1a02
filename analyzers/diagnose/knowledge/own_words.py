"""scope's own words: lines the hook, the counter sidecar and `scope run` write, known by their prefix
wherever they end up (a rank's stderr.log, a sidecar.log copied out of its run directory, a Slurm output
file). They are scope's problems, never evidence of the job's failure, so the scan never sees them.

Sources: collectors/hook/__init__.py and hooklog.py ("[scope hook] ..."), collectors/sidecar/base.py
OWN_PREFIX ("[scope sidecar] ..."), the launcher's stderr lines ("scope: ...").
"""

from __future__ import annotations

import re

OWN_PREFIXES = ("[scope hook]", "[scope sidecar]", "scope: ")
# Before the prefix a line may carry a launcher's tag ("[default0]:", "[rank3]:") or a timestamp.
_LEAD = r"(?:\[[^\]\n]{1,40}\]:?[ \t]*|\d{4}-\d\d-\d\d[T ][\d:.,]+Z?[ \t]+)?"
_OWN_LINE = re.compile(r"(?m)^" + _LEAD + "(?:" + "|".join(re.escape(p) for p in OWN_PREFIXES) + ").*$")
# A sidecar.log, by its first line, also as older scope versions wrote it (no prefix, "sidecar started").
SIDECAR_HEAD = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d (?:\[scope sidecar\] |sidecar started: )")


def blank_own_lines(text: str) -> str:
    """TEXT with scope's own lines emptied (line numbers of the rest unchanged)."""
    if not any(p in text for p in OWN_PREFIXES):
        return text
    return _OWN_LINE.sub("", text)


# Why scope dumped a rank's stacks, as its dump headers say ("# scope stack dump: reason=...", collectors/hook/
# dumps.py; "# py-spy dump --pid ...; reason: ...", collectors/sidecar/attach.py). These dumps are taken on demand
# of a running job (`scope attach`'s request, SIGUSR2 from the user, SIGTERM at a stop, the API's default): a
# record of where the ranks were, never a report that they were stuck. Only a dump scope took because it saw the
# job stall (reason "hang", attach's "hang (scope attach)") says that.
ON_DEMAND_DUMP_REASONS = frozenset({"request", "sigusr2", "sigterm", "manual"})
