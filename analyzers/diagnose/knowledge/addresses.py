"""How logs name a peer's address and a loopback one, and which interface NCCL bootstraps on, as data.

Each pattern says where the text comes from. reasoning/symptoms.py reads the peer a lost connection names
(same host or loopback: the process at the other end exited, not the fabric); reasoning/stages.py reads the
interface NCCL's bootstrap chose (loopback on a job whose log stops connecting: the peer cannot reach it).
"""

from __future__ import annotations

import re

# The peer NCCL names in 'Connection closed by remote peer HOST<port>', 'recv from HOST<port> failed',
# 'Connect to HOST<port> failed' (NCCL src/misc/socket.cc, socketProgress / socketConnect; 2.12 and later).
PEER_ADDR = re.compile(r"(?:remote peer|from|to) \[?([\w.:%-]+?)\]?<\d+>")
PEER_ADDR_SOURCE = "NCCL src/misc/socket.cc (socketProgress, socketConnect, socketFinalizeAccept)"

# A loopback address or name (RFC 1122 127/8, RFC 4291 ::1, 'localhost').
LOOPBACK = re.compile(r"^(?:127\.|::1$|localhost\b)")

# The interface NCCL's bootstrap (and its socket transport) uses: 'NCCL INFO Bootstrap : Using [0]lo:127.0.0.1<0>',
# 'Bootstrap: Using lo:127.0.0.1<0>', 'NET/Socket : Using [0]lo:127.0.0.1<0>' (NCCL src/bootstrap.cc bootstrapNetInit,
# src/transport/net_socket.cc; the bracketed index was dropped in 2.19).
BOOTSTRAP_IFACE = re.compile(r"NCCL INFO (?:Bootstrap ?|NET/Socket ?): Using (?:\[\d+\])?([\w.\-]+):([\w.:%]+)<\d+>")
BOOTSTRAP_IFACE_SOURCE = "NCCL src/bootstrap.cc (bootstrapNetInit), src/transport/net_socket.cc (ncclNetSocketInit)"


def loopback_bootstrap(text: str) -> str | None:
    """The interface:address NCCL bootstrapped on when it is loopback ('lo:127.0.0.1'), else None."""
    for m in BOOTSTRAP_IFACE.finditer(text):
        iface, addr = m.groups()
        if iface == "lo" or LOOPBACK.match(addr):
            return f"{iface}:{addr}"
    return None


# Docker's default bridge network (docker0, 172.17.0.0/16: docs.docker.com/engine/network/drivers/bridge/): a
# container on it advertises this address for its store or NCCL bootstrap, and hosts other than its own cannot
# reach it (OpenRLHF/OpenRLHF#265: a Ray worker on 10.0.1.75 timing out on the store at 172.17.0.2).
DOCKER_BRIDGE_ADDR = re.compile(r"(?<![\d.])172\.17\.\d{1,3}\.\d{1,3}(?![\d.])")
DOCKER_BRIDGE_REMEDY = (
    "The address {addr} is in Docker's default bridge network (172.17.0.0/16): a container on bridge networking "
    "advertised its internal address, which other hosts cannot reach. Run the containers with host networking "
    "(docker run --network=host, hostNetwork: true on Kubernetes) or pin the interface every rank advertises to the "
    "routable NIC (NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME, plus the store's MASTER_ADDR / the Ray node IP)."
)
