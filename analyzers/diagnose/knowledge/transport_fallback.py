"""NCCL told to use InfiniBand / RoCE, running over TCP sockets instead: the lines that show each half.

NCCL echoes every variable it takes from the environment ('NCCL_IB_HCA set to mlx5_0:1,...',
'NCCL_IB_DISABLE set by environment to 0'), says when its IB transport found no usable HCA
('NET/IB : No device found.', transport/net_ib.cc: ncclIbInit) and which network it then chose
('Using network Socket', init.cc). A job that asked for IB and got sockets runs every inter-node
collective over TCP: it works, an order of magnitude slower, and nothing else in the log is an error.
Source: NVIDIA/nccl src/transport/net_ib.cc, src/init.cc (the INFO lines' wording, v2.7 to v2.28).
"""

from __future__ import annotations

import re

# Each: (what the line shows, pattern). The job asked for the IB transport.
IB_REQUESTED = (
    ("NCCL_IB_HCA names the HCAs to use", re.compile(r"NCCL_IB_HCA set (?:by environment )?to (\S+)")),
    ("NCCL_IB_DISABLE set to 0", re.compile(r"NCCL_IB_DISABLE set by environment to (0)\b")),
    ("NCCL_IB_GID_INDEX set (RoCE)", re.compile(r"NCCL_IB_GID_INDEX set by environment to (\d+)")),
    ("NCCL_NET asks for IB", re.compile(r"NCCL_NET set by environment to (IB)\b")),
)
# NCCL's IB transport found nothing usable.
IB_NOT_FOUND = re.compile(r"NET/IB ?: No device found")
# The network NCCL chose instead, and the interface its sockets use.
SOCKET_CHOSEN = re.compile(r"Using network Socket\b")
# The job ran on one node, where NCCL never uses the network: its comm line says 'nNodes 1', or every
# channel it set up goes 'via P2P/...' or 'via SHM/...' and none 'via NET/...' (src/init.cc, transport/*.cc).
ONE_NODE = re.compile(r"\bnNodes 1\b")
CHANNEL_VIA = re.compile(r" via (NET|P2P|SHM|CollNet|NVLS)\b")
SOCKET_INTERFACE = re.compile(r"NET/Socket ?: Using (?:\[\d+\])?([\w.\-]+):")

REMEDY = (
    "NCCL was asked for InfiniBand/RoCE ({asked}) but its IB transport found no usable device, so every "
    "inter-node collective runs over TCP sockets{iface}. Check the RDMA stack on each node: `ibv_devices` and "
    "`ibstat` list the HCAs and their ports Active (rdma-core / MOFED drivers loaded); in a container, pass "
    "/dev/infiniband and IPC_LOCK (or run privileged) and mount the host's libibverbs providers; then confirm "
    "with nccl-tests (all_reduce_perf across two nodes: NCCL INFO must say 'Using network IB')."
)
