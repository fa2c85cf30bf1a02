"""Which NCCL variables a failing step reads, so that a variable the log shows set is named in the remedy.

NCCL echoes each variable it takes from the environment ('NCCL INFO NCCL_GRAPH_FILE set by environment to
/opt/.../graph.xml', src/misc/param.cc / init.cc). When the step that failed reads one of those variables,
the setting is the first suspect: the remedy names it and its value (a graph file imported by
graph/search.cc is NCCL_GRAPH_FILE's, not NCCL_TOPO_FILE's). Rows: a pattern on the failing line (its
source file or words) and the variables that step reads (NCCL env documentation:
https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html).
"""

from __future__ import annotations

import re

STEP_VARIABLES: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = (
    (re.compile(r"XML Import Channel|graph/search\.cc|ncclTopoGetGraphFromXml|graph file"), ("NCCL_GRAPH_FILE",)),
    (re.compile(r"graph/xml\.cc|graph/topo\.cc|XML|topology|ncclTopo"), ("NCCL_TOPO_FILE", "NCCL_GRAPH_FILE")),
    (re.compile(r"NET/IB|net_ib|ibv_|GID|RoCE"), ("NCCL_IB_HCA", "NCCL_IB_GID_INDEX", "NCCL_IB_ROCE_VERSION_NUM")),
    (re.compile(r"socket|Socket|bootstrap|Bootstrap"), ("NCCL_SOCKET_IFNAME", "NCCL_COMM_ID")),
    (re.compile(r"NVLS|nvls"), ("NCCL_NVLS_ENABLE",)),
    (re.compile(r"CollNet|collnet|SHARP"), ("NCCL_COLLNET_ENABLE",)),
    (re.compile(r"\bRAS\b|ras\.cc"), ("NCCL_RAS_ENABLE",)),
    (re.compile(r"NET/Plugin|net plugin|libnccl-net"), ("NCCL_NET_PLUGIN", "NCCL_NET")),
)
# What to do with a variable the log shows set, once the step that failed reads it: a file variable is unset or
# pointed at a matching file (NVIDIA/nccl#1240), the others are checked against the host (NCCL env documentation
# above; NCCL_SOCKET_IFNAME=lo on two nodes: pytorch/pytorch#52916; a per-node RoCE GID: NVIDIA/nccl#718; an
# unusable HCA left out with '^': NVIDIA/nccl#799). {var} and {value} are filled from the echo.
FILE_ACTION = (
    "unset {var} (the environment, /etc/nccl.conf or the image's defaults) or point it at a file that matches "
    "this machine, then rerun."
)
VARIABLE_ACTIONS: dict[str, str] = {
    "NCCL_SOCKET_IFNAME": "check on every host that {value} names an interface that is up and carries the "
    "address the other hosts reach (ip -br addr; never lo or docker0 across nodes), or unset it and let NCCL "
    "choose.",
    "NCCL_IB_HCA": "check that each HCA it names is up on every node (ibstat, ibv_devinfo); leave an unusable one "
    "out with NCCL_IB_HCA=^<name>.",
    "NCCL_IB_GID_INDEX": "check that GID index {value} is the RoCEv2 GID of the routable address on every node "
    "(show_gids; it can differ per node: set it per node, e.g. in /etc/nccl.conf).",
    "NCCL_IB_ROCE_VERSION_NUM": "set the GID explicitly instead (NCCL_IB_GID_INDEX from show_gids) and rerun.",
    "NCCL_NVLS_ENABLE": "rerun with NCCL_NVLS_ENABLE=0 to confirm the NVLink SHARP path.",
    "NCCL_COLLNET_ENABLE": "rerun with NCCL_COLLNET_ENABLE=0: the fabric may not support CollNet / SHARP.",
    "NCCL_RAS_ENABLE": "rerun with NCCL_RAS_ENABLE=0 to confirm.",
    "NCCL_COMM_ID": "check that {value} is reachable from every rank, or unset it.",
    # a transport name (IB, Socket, or a plugin's own), not a file
    "NCCL_NET": "it forces the {value} transport: check that it is available on every node (IB: ibstat; a "
    "plugin's: its NET/Plugin lines), or unset it and let NCCL choose.",
    # the plugin library NCCL loads, libnccl-net-<value>.so (src/plugin/net.cc)
    "NCCL_NET_PLUGIN": "it names the net plugin NCCL loads (libnccl-net-{value}.so): check that it is installed "
    "on every node and built for this NCCL, or set NCCL_NET_PLUGIN=none to run once without it.",
}
# A list variable whose value starts with '^' leaves the names out (NCCL env documentation: NCCL_SOCKET_IFNAME
# '^docker', NCCL_IB_HCA '^=mlx5_1'); its names are not the ones in use, so the check is on what is left.
EXCLUDING_ACTIONS: dict[str, str] = {
    "NCCL_SOCKET_IFNAME": "it leaves out {value}, and NCCL takes another interface that is up, which need not "
    "carry the address the other hosts reach: name the routable interface instead (ip -br addr on every host), "
    "or unset it.",
    "NCCL_IB_HCA": "it leaves out {value} and NCCL uses every other HCA: check that those are up on every node "
    "(ibstat, ibv_devinfo) and leave out any other unusable one too.",
}


def action(var: str, value: str) -> str:
    """What to do with the set variable VAR=VALUE that the failing step reads. A list variable's '^' (exclude)
    and '=' (exact names, not prefixes) are read as NCCL reads them, never as part of a name."""
    names = value.lstrip("^").lstrip("=")
    if value.startswith("^") and var in EXCLUDING_ACTIONS:
        return EXCLUDING_ACTIONS[var].format(var=var, value=", ".join(n for n in names.split(",") if n))
    return VARIABLE_ACTIONS.get(var, FILE_ACTION).format(var=var, value=names)


ECHO = re.compile(r"NCCL INFO (NCCL_[A-Z0-9_]+) set by environment to (\S+)")
# The external net plugin NCCL loaded ('NET/Plugin: Loaded net plugin AWS Libfabric (v7)', src/plugin/net.cc),
# kept under this key beside the variables.
NET_PLUGIN = "net plugin"
_LOADED = re.compile(r"NET/Plugin: Loaded net plugin ([^\n(]+?) \((v\d+)\)")

# A net plugin can hand NCCL its own topology: a failure to model the node is then the plugin's. Rows: the
# plugin's name as NCCL prints it, and what to do (source: aws/aws-ofi-nccl#785, where the maintainer traced a
# topology failure to the plugin's fixed per-instance XML; aws-ofi-nccl 1.11 builds it for the devices seen).
PLUGIN_TOPOLOGY: dict[str, str] = {
    "AWS Libfabric": "aws-ofi-nccl before 1.11 hands NCCL a fixed topology file for the whole instance type "
    "(p4d / p5), which no longer matches when only some GPUs are visible to the job: upgrade aws-ofi-nccl "
    "(1.11+ builds the topology for the devices NCCL sees)",
}
PLUGIN_TOPOLOGY_OTHER = (
    "a net plugin may hand NCCL its own topology: upgrade the plugin to a release that matches this NCCL, or "
    "run once without it (NCCL_NET_PLUGIN=none) to confirm"
)


def settings(text: str) -> dict[str, tuple[str, int]]:
    """NCCL variable -> (value, line) for each 'set by environment' echo of the log, and the net plugin loaded."""
    found: dict[str, tuple[str, int]] = {}
    if "set by environment" in text:
        found = {m.group(1): (m.group(2), text.count("\n", 0, m.start()) + 1) for m in ECHO.finditer(text)}
    loaded = _LOADED.search(text) if "Loaded net plugin" in text else None
    if loaded:
        found[NET_PLUGIN] = (f"{loaded.group(1)} ({loaded.group(2)})", text.count("\n", 0, loaded.start()) + 1)
    return found


def plugin_topology_advice(plugin: str) -> str:
    """What to do when NCCL could not model the node while this net plugin was loaded."""
    return next((v for k, v in PLUGIN_TOPOLOGY.items() if plugin.startswith(k)), PLUGIN_TOPOLOGY_OTHER)


def read_by(line: str) -> tuple[str, ...]:
    """The variables the failing step reads (first row that matches the line)."""
    return next((names for pattern, names in STEP_VARIABLES if pattern.search(line)), ())
