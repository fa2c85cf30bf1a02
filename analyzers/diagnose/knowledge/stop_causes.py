"""A stage's known causes as the log can narrow them (knowledge/stages.STAGE_INFO holds the default order);
reasoning/stop_causes.py fits them to a log.

Communicator init: GPU peer-to-peer (ACS / the IOMMU) only applies where one host drives several GPUs; with one
GPU per host the bootstrap's inter-node TCP and a build that differs between nodes come first (dev50's
pytorch/pytorch#52916: NCCL on lo across two servers; NVIDIA/nccl#447: a driver that differed between nodes).
Rendezvous: where the log shows a real master port, port 0 (RLHFlow/Online-RLHF#11) is not the cause and a busy
port would have failed with EADDRINUSE (rank 0's TCPStore cannot bind) instead of stopping: the address first.
"""

from __future__ import annotations

import re

# NCCL channels over a GPU peer-to-peer path (or shared memory between a host's processes)
P2P_CHANNELS = re.compile(r"via P2P|P2P/IPC|P2P/CUMEM|via SHM")
# A port the log shows that is a real one (MASTER_PORT': '29500', --master_port 29500, main_process_port: 29500)
REAL_PORT = re.compile(r"(?i)(?:master_port|main_process_port)['\"]?\s*[:= ]\s*['\"]?[1-9]\d{1,4}\b")

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

# NCCL settings that force or forbid a transport path, shown set in the log before it stops ('NCCL INFO
# NCCL_P2P_LEVEL set by environment to NVL', or the shell's NCCL_SHM_DISABLE=1): the first thing to try removing,
# since NCCL picks the paths from the topology itself (NVIDIA/nccl#306, sjeaugey: "avoid setting NCCL environment
# variables unless you really need it"; lumi-ai-factory/laifs-container-recipes#30: jobs hang with
# NCCL_NET_GDR_LEVEL=PHB / SYS set and run once it is removed; NVIDIA/nccl#1608: a hang under P2P and SHM disabled).
# Read where the log shows the job set it: NCCL's echo, an `export`, an assignment before a command, mpirun's -x
# (never a sentence that merely names the variable, such as a poster's "NCCL_SHM_DISABLE=1 made no difference").
# Read from NCCL's echo (env_settings.settings), a shell line's settings (line_shapes.shell_settings) and mpirun's
# -x; a value that is NCCL's default (=0 for a *_DISABLE switch) forces nothing.
FORCED_NAMES = ("NCCL_P2P_LEVEL", "NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE", "NCCL_NET_GDR_LEVEL")
FORWARDED_SETTING = re.compile(rf"\s-x[ \t]++({'|'.join(FORCED_NAMES)})=['\"]?([\w.-]++)")
# The values that are NCCL's own default (src/transport/p2p.cc, shm.cc: NCCL_PARAM(P2pDisable / ShmDisable, 0)).
DEFAULT_VALUES = {"NCCL_P2P_DISABLE": "0", "NCCL_SHM_DISABLE": "0"}
FORCED_PATH_FIRST = (
    "The log shows {settings} set: NCCL chooses its peer-to-peer, shared-memory and GPU Direct paths from the "
    "topology, and a setting that forces or forbids one can leave a collective waiting on a path the machine "
    "does not give it; rerun without {names} first (the environment, the launch script, /etc/nccl.conf), then "
    "with it back to confirm."
)
