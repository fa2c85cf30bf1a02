"""What the network between nodes gives a GPU class, as a floor for nccl-tests' inter-node bus bandwidth.

GPUs of these classes are sold in nodes with an RDMA NIC per GPU or two (H100 / H200: 8x 400 Gb/s NDR;
GH200 systems: one 200 Gb/s Slingshot or NDR NIC per superchip; B200 / GB200: 400-800 Gb/s a GPU), i.e.
25-100 GB/s a GPU. An all_reduce across such nodes at 32 MB and more reaches a bus bandwidth well above
10 GB/s on any of them (NVIDIA's DGX reference figures; the CSCS Alps GH200 reference run: ~123 GB/s at
128 MB on 2 nodes). Under FLOOR_GBPS at the largest sizes is a path without RDMA: TCP sockets (NCCL's
fallback when its IB / libfabric plugin is missing or off), a container without the fabric's hook, the
wrong NIC. Older, PCIe and some cloud GPUs sit on plain Ethernet, where a few GB/s is healthy: they are
not listed (DGX / HGX A100 have 8x 200 Gb/s HDR, but not every A100 cloud VM has RDMA).
Sources: NVIDIA DGX A100 / H100 / GH200 user guides (network ports per node); nccl-tests doc/PERFORMANCE.md
(busbw); https://github.com/eth-cscs/cscs-docs docs/software/communication/nccl.md (reference runs).
"""

from __future__ import annotations

import re

# nccl-tests banner GPU names of the classes above (SXM / Hopper / Grace-Hopper / Blackwell)
# A100 nodes are left out: GCP's a2 VMs pair them with a 100 Gb/s network without RDMA, healthy at a few GB/s.
# H100 PCIe / NVL cards sit in ordinary servers. Every cloud's and vendor's H100 SXM node and later has a
# fabric of 200 Gb/s a GPU or more (AWS p5 EFA, Azure ND H100 IB, GCP A3 GPUDirect-TCPX, DGX/HGX).
RDMA_CLASS_GPUS = re.compile(r"\b(?:H100(?! PCIe| NVL)|H800|H200|GH200|B200|GB200|B300|GB300)\b")
FLOOR_GBPS = 8.0
MIN_BYTES = 32 * 2**20  # rows from this size on: past latency, at the link's rate
REMEDY = (
    "Find the path NCCL took between the nodes: rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET and read "
    "'Using network ...' and the NET/ line: 'Socket' means no RDMA (IB: ibv_devices / ibstat on each node, "
    "NCCL_IB_HCA; AWS EFA / HPE Slingshot: the aws-ofi-nccl / libfabric plugin on LD_LIBRARY_PATH, in a "
    "container the fabric's hook or the host's plugin mounted, FI_PROVIDER); then check NCCL_SOCKET_IFNAME / "
    "NCCL_IB_HCA select the fast NICs."
)
