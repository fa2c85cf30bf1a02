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
from scope.analyzers.diagnose.readers.lines import line_at
from scope.analyzers.diagnose.readers.signature_scan import fill_remedy
from scope.analyzers.diagnose.reasoning.setting_refused import launch_host

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
    # read once: a pdsh fan-out has thousands of host-key lines
    added = _last_added(lines) if "Permanently added" in text else {}
    for a in asked:
        host = _host_of(lines, a.line, a.details.get("ssh_host"))
        if host and not a.details.get("ssh_host"):
            _name_host(a, host)
        if host and added.get(host, 0) > a.line:
            a.details["went_on_past_it"] = True


def _name_host(a: Anomaly, host: str) -> None:
    """The host a line that does not name it is about (pdsh's prefix, the question above it), in its remedy."""
    a.details["ssh_host"] = host
    a.details["remedy"] = fill_remedy(by_id()[HOST_KEY_CODE].remedy, a.details)
    slots = a.details.get("_remedy_slots")
    if isinstance(slots, dict):
        slots["ssh_host"] = host


def _host_of(lines: list[str], line: int, named: object) -> str:
    said = line_at(lines, line)
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


def _last_added(lines: list[str]) -> dict[str, int]:
    """The last line (1-based) naming each host name and address a 'Permanently added' line names ('gpu-c,10.0.0.3',
    '[h]:2222'), pdsh's prefix of that line included."""
    added: dict[str, int] = {}
    for idx, later in enumerate(lines, 1):
        m = KEY_ADDED.search(later)
        if m:
            for h in m.group("hosts").split(","):
                added[re.sub(r"^\[(.*)\]:\d+$", r"\1", h.strip())] = idx
            prefix = _PDSH_PREFIX.match(later)
            if prefix:
                added[prefix.group(1)] = idx
    return added


HOSTS_NAMED = 4  # a fan-out's failed hosts a finding names before their count


def collapse_fan_out(anomalies: list[Anomaly], text: str) -> None:
    """One finding per ssh/pdsh row for a fan-out (pdsh -w gpu-[0-3999]): its first host's line, with every failed
    host listed in its remedy (the first few and their count), not one finding and one remedy per host. One pass
    over the findings."""
    lines: list[str] | None = None
    first: dict[str, Anomaly] = {}
    hosts: dict[str, dict[str, None]] = {}  # an ordered set: the hosts in the order they failed
    kept: list[Anomaly] = []
    for a in anomalies:
        if a.severity == "info" or not a.code.startswith(("ssh_", "pdsh_")):
            kept.append(a)
            continue
        if lines is None:
            lines = text.split("\n")
        host = launch_host(lines, a)
        if a.code not in first:
            first[a.code], hosts[a.code] = a, dict.fromkeys([host] if host else [])
            kept.append(a)
        elif host:
            hosts[a.code][host] = None
        else:
            kept.append(a)  # a line with no host: its own finding
    for code, failed in hosts.items():
        named = list(failed)
        if len(named) > 1:
            a = first[code]
            shown = ", ".join(named[:HOSTS_NAMED])
            more = f" and {len(named) - HOSTS_NAMED} more" if len(named) > HOSTS_NAMED else ""
            a.details["hosts_failed"] = len(named)
            a.details["remedy"] = (
                f"{a.details.get('remedy') or ''} The same failed on {len(named)} hosts: {shown}{more}.".strip()
            )
    if len(kept) != len(anomalies):
        anomalies[:] = kept


GO_DIAL_CODE = "go_dial_failed"
_GO_DIAL_OPENING = "A Go client could not reach the address the line names (no connection):"


def word_go_dial_errors(anomalies: list[Anomaly]) -> None:
    """A Go dial's remedy opens with what failed where the line is not a connect's error: the name that did not
    resolve (the resolver's DNSError: 'lookup H ...: no such host') or a TLS handshake that timed out (the TCP
    connect answered), not 'the address the line names (no connection)'."""
    for a in anomalies:
        remedy = a.details.get("remedy")
        if a.code != GO_DIAL_CODE or not isinstance(remedy, str) or not remedy.startswith(_GO_DIAL_OPENING):
            continue
        if a.details.get("lookup"):
            opening = f"A Go client could not resolve {a.details['lookup']} ({a.details.get('dns_error') or 'DNS'}):"
        elif a.details.get("tls_error"):
            opening = "A Go client's TLS handshake timed out (the TCP connect answered, TLS did not):"
        else:
            continue
        a.details["remedy"] = opening + remedy[len(_GO_DIAL_OPENING) :]
