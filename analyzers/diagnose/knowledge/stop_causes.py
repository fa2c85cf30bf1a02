"""A stage's known causes fitted to what the log shows (knowledge/stages.STAGE_INFO holds the default order).

Communicator init: GPU peer-to-peer (ACS / the IOMMU) only applies where one host drives several GPUs; with one
GPU per host the bootstrap's inter-node TCP and a build that differs between nodes come first (dev50's
pytorch/pytorch#52916: NCCL on lo across two servers; NVIDIA/nccl#447: a driver that differed between nodes).
Rendezvous: where the log shows a real master port, port 0 (RLHFlow/Online-RLHF#11) is not the cause and a busy
port would have failed with EADDRINUSE (rank 0's TCPStore cannot bind) instead of stopping: the address first.
"""

from __future__ import annotations

import re

from scope.analyzers.diagnose.knowledge.stages import STAGE_INFO

# NCCL's INFO/WARN prefix: host:pid:tid [cuda device]
_NCCL_PREFIX = re.compile(r"^(\S+):\d+:\d+ \[(\d+)\] NCCL (?:INFO|WARN)", re.M)
_P2P_CHANNELS = re.compile(r"via P2P|P2P/IPC|P2P/CUMEM|via SHM")
# A port the log shows that is a real one (MASTER_PORT': '29500', --master_port 29500, main_process_port: 29500)
_REAL_PORT = re.compile(r"(?i)(?:master_port|main_process_port)['\"]?\s*[:= ]\s*['\"]?[1-9]\d{1,4}\b")

ONE_GPU_PER_HOST = (
    "the bootstrap's inter-node TCP blocked (a firewall or security group between the nodes, host security "
    "software, a service-mesh sidecar such as Istio's intercepting the pod's traffic); a driver / CUDA / NCCL "
    "build that differs between nodes (check `nvidia-smi` and torch.cuda.nccl.version() on each); a GPU-sharing "
    "layer preloaded in the container (HAMi's libvgpu.so: CUDA_DISABLE_CONTROL=true for whole-GPU pods); or a rank "
    "that never reached init"
)
RENDEZVOUS_REAL_PORT = (
    "MASTER_ADDR:MASTER_PORT not reachable from every node (firewall, wrong interface, an address only one node "
    "resolves); a rank that never started or died before init (its own output); or a world size larger than the "
    "ranks launched; check each node's launch command"
)


def one_gpu_per_host(text: str) -> bool:
    """NCCL's lines name hosts, each with one CUDA device, and no P2P/SHM channel: no GPU peer-to-peer path."""
    if _P2P_CHANNELS.search(text):
        return False
    devices: dict[str, set[str]] = {}
    for host, dev in _NCCL_PREFIX.findall(text):
        devices.setdefault(host, set()).add(dev)
    return bool(devices) and all(len(d) == 1 for d in devices.values())


def stop_causes(stage: str, text: str) -> str:
    """The known causes of a stop in `stage`, ordered by what `text` (the log) shows."""
    if stage == "comm_init" and text and one_gpu_per_host(text):
        return ONE_GPU_PER_HOST  # no "NCCL_SOCKET_IFNAME=lo to test": across nodes lo is the fault, not a test
    if stage == "rendezvous" and text and _REAL_PORT.search(text):
        return RENDEZVOUS_REAL_PORT
    return STAGE_INFO[stage].causes
