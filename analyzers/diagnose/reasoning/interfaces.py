"""NCCL sockets on interfaces the other hosts cannot reach: container bridges, veth pairs, loopback.

Unless NCCL_SOCKET_IFNAME says otherwise, NCCL's bootstrap and socket transport use every interface
but lo and docker* (NCCL's environment-variable docs). On a container or VM host that includes
bridges and veth ends that exist on that host only: connections to their addresses are refused or
time out, and the job dies with a socket or system error that reads like a network fault. When a
file's INFO lines show NCCL using such an interface and the same file has a network failure, the
failure is that configuration's consequence: it is reported as a config_error naming the interfaces.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from scope.analyzers.diagnose.knowledge.addresses import DOCKER_BRIDGE_ADDR, DOCKER_BRIDGE_REMEDY
from scope.analyzers.diagnose.model import APPLICATION, Anomaly


@dataclass(frozen=True)
class VirtualInterface:
    prefix: str  # the interface name starts with it ("lo": the whole name)
    what: str
    source: str


VIRTUAL_INTERFACES: tuple[VirtualInterface, ...] = (
    VirtualInterface("docker", "Docker's default bridge", "https://docs.docker.com/engine/network/drivers/bridge/"),
    VirtualInterface("br-", "a Docker user-defined bridge", "https://docs.docker.com/engine/network/drivers/bridge/"),
    VirtualInterface(
        "veth", "a container's virtual Ethernet pair", "https://man7.org/linux/man-pages/man4/veth.4.html"
    ),
    VirtualInterface("virbr", "a libvirt NAT bridge", "https://wiki.libvirt.org/VirtualNetworking.html"),
    VirtualInterface("cni", "a Kubernetes CNI bridge", "https://www.cni.dev/plugins/current/main/bridge/"),
    VirtualInterface("flannel", "a flannel overlay device", "https://github.com/flannel-io/flannel"),
    VirtualInterface("cali", "a Calico pod interface", "https://docs.tigera.io/calico/latest/networking/"),
    VirtualInterface(
        "lo", "the loopback interface", "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"
    ),
)

# '[0]bond0:192.168.1.161<0>' in a 'NET/Socket : Using' list, or 'Bootstrap : Using eth0:10.0.0.1<0>'.
_ENTRY = re.compile(r"(?:\[\d+\]|Using )([A-Za-z][\w.\-@]*):[0-9A-Fa-f:.]+(?:%[\w.\-@]+)?<\d+>")
_LISTS = ("Socket : Using", "Bootstrap : Using", "Socket: Using", "Bootstrap: Using")
_NETWORK_WORDS = re.compile(r"(?i)system|socket|connect|remote|net\b|net/|network")


def socket_interfaces(text: str) -> list[str]:
    """Every interface NCCL's INFO lines say it uses, in first-seen order."""
    if not any(marker in text for marker in _LISTS):
        return []
    return list(dict.fromkeys(_ENTRY.findall(text)))


def virtual_kind(name: str) -> VirtualInterface | None:
    for kind in VIRTUAL_INTERFACES:
        if name == kind.prefix if kind.prefix == "lo" else name.startswith(kind.prefix):
            return kind
    return None


def blame_virtual_interfaces(anomalies: list[Anomaly], text: str) -> None:
    """Network failures in a file whose NCCL uses unreachable interfaces become that config_error."""
    failures = [a for a in anomalies if a.severity != "info" and _is_network_failure(a)]
    if not failures:
        return
    used = socket_interfaces(text)
    virtual = {name: kind for name in used if (kind := virtual_kind(name)) is not None}
    if not virtual:
        return
    said, remedy = _describe(virtual, [name for name in used if name not in virtual])
    for a in failures:
        a.kind, a.level = "config_error", APPLICATION  # a configuration's consequence ranks as its cause
        a.message = f"NCCL's sockets use {said}; then: {a.message}"
        a.details.update(interfaces=list(virtual), remedy=remedy, cause="configuration")


def _describe(virtual: dict[str, VirtualInterface], real: list[str]) -> tuple[str, str]:
    """What the interfaces are ('11 interfaces other hosts cannot reach: a Docker bridge br-05ab...') and the fix."""
    by_kind: dict[VirtualInterface, list[str]] = {}
    for name, kind in virtual.items():
        by_kind.setdefault(kind, []).append(name)
    parts = [
        f"{len(names)} × {kind.what} ({names[0]}{', …' if len(names) > 1 else ''})" for kind, names in by_kind.items()
    ]
    said = f"{len(virtual)} interface{'s' if len(virtual) > 1 else ''} other hosts cannot reach: " + "; ".join(parts)
    exclude = ",".join(kind.prefix for kind in by_kind)
    name_it = (
        f"NCCL_SOCKET_IFNAME={','.join(real)} (the routable NIC{'s' if len(real) > 1 else ''} listed)"
        if real
        else ("NCCL_SOCKET_IFNAME=<the NIC the hosts reach each other on> (ip -br addr)")
    )
    remedy = f"Set {name_it}, or exclude the others: NCCL_SOCKET_IFNAME=^{exclude}; and GLOO_SOCKET_IFNAME likewise."
    return said, remedy


def _is_network_failure(a: Anomaly) -> bool:
    if a.kind == "network_fault":
        return True
    return a.kind == "nccl_error" and bool(_NETWORK_WORDS.search(f"{a.code} {a.message}"))


# NCCL's bootstrap (bootstrap.cc, bootstrapNetInit): when NCCL_SOCKET_IFNAME matches no interface of the
# host it WARNs 'Bootstrap : no socket interface found' and returns ncclInternalError (NCCL <= 2.2x;
# ncclInvalidUsage in later releases). Without NCCL_DEBUG the WARN is not printed: the job shows only the
# result code. A set NCCL_SOCKET_IFNAME is then the first suspect, more so when only some hosts fail
# (interface names differ between hosts).
_IFNAME_SET = re.compile(r"NCCL_SOCKET_IFNAME(?:=| set by environment to )([^\s'\"]+)")
_INIT_RESULT = re.compile(r"internal error|ncclInternalError|invalid usage|ncclInvalidUsage")
BOOTSTRAP_SOURCE = "https://github.com/NVIDIA/nccl/blob/master/src/bootstrap.cc"


def blame_unmatched_ifname(anomalies: list[Anomaly], text: str) -> None:
    """An NCCL internal-error / invalid-usage result with no WARN explaining it, in a job that sets
    NCCL_SOCKET_IFNAME, before any interface was chosen: the setting names no interface of that host."""
    if "NCCL_SOCKET_IFNAME" not in text or "Bootstrap : Using" in text or "Bootstrap: Using" in text:
        return
    if "NCCL WARN" in text:
        return  # the WARN says what failed; its own row classifies it
    m = _IFNAME_SET.search(text)
    if m is None:
        return
    value = m.group(1)
    for a in anomalies:
        if a.severity == "info" or a.kind not in ("nccl_error", "crash") or not _INIT_RESULT.search(a.message):
            continue
        where = f" on {a.host}" if a.host else ""
        a.kind, a.level, a.code = "config_error", APPLICATION, "socket_ifname_unmatched"
        a.message = (
            f"NCCL returned '{_INIT_RESULT.search(a.message).group(0)}'{where} while NCCL_SOCKET_IFNAME={value} "  # type: ignore[union-attr]
            f"is set: NCCL's bootstrap returns this when the setting matches no interface of the host. "
            f"({a.message})"
        )
        a.details.update(
            cause="configuration",
            confidence="medium",
            ifname=value,
            reference=BOOTSTRAP_SOURCE,
            remedy=(
                f"Check NCCL_SOCKET_IFNAME={value} against each host's interfaces (ip -br addr): names can differ "
                "between hosts; list every name or a common prefix (NCCL_SOCKET_IFNAME=eth,enp matches by "
                "prefix), exclude instead (NCCL_SOCKET_IFNAME=^docker,lo), or set it per host in /etc/nccl.conf; "
                "rerun with NCCL_DEBUG=INFO to see 'Bootstrap : no socket interface found'."
            ),
        )


def blame_bridge_address(anomalies: list[Anomaly], text: str) -> None:
    """A failure to reach a peer or the store at a Docker bridge address: the containers' networking is the
    cause, whatever the failure's row says of the address."""
    for a in anomalies:
        if a.severity == "info" or not (_is_network_failure(a) or a.kind == "config_error"):
            continue
        m = DOCKER_BRIDGE_ADDR.search(a.message)
        if m is None:
            continue
        a.kind, a.level = "config_error", APPLICATION
        a.details.update(remedy=DOCKER_BRIDGE_REMEDY.format(addr=m.group(0)), cause="configuration")
