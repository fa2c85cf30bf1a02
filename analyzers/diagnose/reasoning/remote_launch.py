"""An ssh host-key question is answered only for the host it asked about: ssh's 'Warning: Permanently added 'H,IP'
(TYPE) to the list of known hosts.' (sshconnect.c) names the host whose key it added, and another host's key
added says nothing of the one that failed (pdsh fans out to many hosts; a wrapper ssh-es to each node in turn).
The failed line's host is pdsh's 'node: ' prefix, the host its own words name, or the nearest 'The authenticity of
host 'H ...'' question above it (knowledge/remote_launch.py)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from scope.analyzers.diagnose.knowledge.remote_launch import KEY_ADDED
from scope.analyzers.diagnose.knowledge.signatures import by_id
from scope.analyzers.diagnose.readers.signature_scan import fill_remedy

if TYPE_CHECKING:
    from scope.analyzers.diagnose.model import Anomaly

HOST_KEY_CODE = "ssh_host_key_unknown"
# pdsh's prefix of a remote host's output ('gpu-b: Host key verification failed.', src/pdsh/main.c)
_PDSH_PREFIX = re.compile(r"^([\w.-]+): (?!Permanently)")
_ASKED = re.compile(r"authenticity of host '(?P<host>[^' ]+)|host key is known for (?P<known>\S+)")
_QUESTION_LINES = 6  # ssh's question spans the authenticity line, the fingerprint and the prompt


def mark_answered_host_keys(anomalies: list[Anomaly], text: str) -> None:
    """Each host-key finding's host, named in its remedy where its own line did not name it; those whose host's key
    ssh added on a later line went on past it (details went_on_past_it, read by
    reasoning/setting_refused.drop_went_past)."""
    asked = [a for a in anomalies if a.code == HOST_KEY_CODE]
    if not asked:
        return
    lines = text.split("\n")
    for a in asked:
        host = _host_of(lines, a.line, a.details.get("ssh_host"))
        if host and not a.details.get("ssh_host"):
            _name_host(a, host)
        if host and "Permanently added" in text and host in _added_after(lines, a.line):
            a.details["went_on_past_it"] = True


def _name_host(a: Anomaly, host: str) -> None:
    """The host a line that does not name it is about (pdsh's prefix, the question above it), in its remedy."""
    a.details["ssh_host"] = host
    a.details["remedy"] = fill_remedy(by_id()[HOST_KEY_CODE].remedy, a.details)
    slots = a.details.get("_remedy_slots")
    if isinstance(slots, dict):
        slots["ssh_host"] = host


def _host_of(lines: list[str], line: int, named: object) -> str:
    said = lines[line - 1] if 0 < line <= len(lines) else ""
    prefix = _PDSH_PREFIX.match(said)
    if prefix:
        return prefix.group(1)
    if named:
        return str(named)
    for above in reversed(lines[max(0, line - _QUESTION_LINES) : line - 1]):
        m = _ASKED.search(above)
        if m:
            return m.group("host") or m.group("known")
    return ""


def _added_after(lines: list[str], line: int) -> set[str]:
    """Every host name and address a later 'Permanently added' line names ('gpu-c,10.0.0.3', '[h]:2222')."""
    added: set[str] = set()
    for later in lines[line:]:
        m = KEY_ADDED.search(later)
        if m:
            added.update(re.sub(r"^\[(.*)\]:\d+$", r"\1", h.strip()) for h in m.group("hosts").split(","))
            prefix = _PDSH_PREFIX.match(later)
            if prefix:
                added.add(prefix.group(1))
    return added
