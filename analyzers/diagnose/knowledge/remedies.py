"""Remedy sentences more than one table or reading gives, written once (each user adds its own context).

LARGER_SHM: docker's /dev/shm default is 64 MB (docs.docker.com/reference/cli/docker/container/run, --shm-size);
Kubernetes has no shm option, an emptyDir with medium: Memory mounted at /dev/shm is the documented way
(kubernetes.io/docs/concepts/storage/volumes/#emptydir). NCCL_DEBUG_RERUN: NCCL's environment variables
(docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html, NCCL_DEBUG / NCCL_DEBUG_SUBSYS). PEERMEM: the
nvidia-peermem module must match the driver and MOFED (docs.nvidia.com/cuda/gpudirect-rdma).
"""

from __future__ import annotations

import re

LARGER_SHM = (
    "Give the container a larger /dev/shm (docker --shm-size=16g or --ipc=host; Kubernetes: an emptyDir with "
    "medium: Memory mounted at /dev/shm)"
)

NCCL_DEBUG_RERUN = "Rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET"

# An NCCL call failing with an unhandled CUDA error where the log shows two CUDA versions: an NCCL built for
# the CUDA version in use (NVIDIA/caffe#492: libnccl2 for CUDA 9 under a CUDA 8 build; PaddlePaddle/Paddle#8195:
# an NCCL matching the driver's CUDA; NVIDIA/nccl-tests#5: rebuilt against an NCCL matching the CUDA version),
# before a faulty GPU (vllm-project/vllm#7896: one node removed).
NCCL_BUILD_FOR_CUDA = (
    "Install the NCCL build made for the CUDA version the framework was built with and the driver supports "
    "(libnccl2=VERSION+cudaX.Y, the nvidia-nccl-cuXX wheel of that CUDA, or the NCCL bundled with the framework's "
    "own build)"
)

PEERMEM = "reload nvidia-peermem and check that it matches the driver and MOFED"

# GPU peer-to-peer that does not work: the fixes its threads confirmed, in their order - NCCL_P2P_DISABLE=1 to
# confirm (Lightning-AI/pytorch-lightning#19425, vllm-project/vllm#1801); on GeForce / consumer cards and drivers
# that misreport P2P it stays the fix (NVIDIA/nccl-tests#117: two RTX 4090; tinygrad/open-gpu-kernel-modules#45;
# vllm-project/vllm#1801: driver 545), on servers ACS off (NVIDIA/nccl#85, #104; NVIDIA/nccl-tests#252) or the
# IOMMU in pass-through / off (ROCm/rccl#1129: iommu=pt; NVIDIA/nccl#257: intel_iommu=off; stas00/ml-engineering:
# amd_iommu=off); NCCL's troubleshooting page (PCI ACS).
P2P_BLOCKED = (
    "GPU peer-to-peer that does not work: rerun with NCCL_P2P_DISABLE=1 to confirm; if that runs, on GeForce / "
    "consumer cards or a driver known to misreport P2P keep NCCL_P2P_DISABLE=1 (or change the driver), and on "
    "servers fix the path PCIe ACS or the IOMMU redirects - disable ACS in the BIOS (or with setpci on the PCIe "
    "switches; `lspci -vvv | grep ACSCtl` shows SrcValid+ ReqRedir+ where it is on) or boot with iommu=pt "
    "(intel_iommu=off / amd_iommu=off)"
)

# A log that names a GeForce / consumer GPU (nccl-tests' banner 'device 0 [0x81] NVIDIA GeForce RTX 4090', NCCL's
# INFO lines): its peer-to-peer has no server path to fix, and keeping P2P off is the confirmed fix
# (NVIDIA/nccl-tests#117: two RTX 4090, NCCL_P2P_DISABLE=1).
CONSUMER_GPU = re.compile(r"NVIDIA GeForce|\bGeForce RTX\b|\bTITAN RTX\b")
CONSUMER_GPU_P2P = (
    "This log names GeForce / consumer GPUs, whose peer-to-peer NCCL often cannot use: run with "
    "NCCL_P2P_DISABLE=1 and keep it if the run passes (or change the driver)."
)

# A checkpoint volume without room (databrickslabs/dolly#139, Sachini/ronin#51): signatures.checkpoint_disk_full
# and raising_frames' torch.save row.
ROOM_FOR_CHECKPOINTS = (
    "free space on the checkpoint volume or write checkpoints to a larger one (df -h on the checkpoint "
    "directory; keep fewer checkpoints: save_total_limit, a rotation; save less often: a larger save interval "
    "such as save_steps / save_checkpoint_freq)"
)

# The process-group timeout where each framework takes it: torch's init_process_group(timeout=...) (30 min by
# default, torch/distributed/constants.py), transformers' TrainingArguments.ddp_timeout, accelerate's
# InitProcessGroupKwargs, Lightning's DDPStrategy(timeout=...), deepspeed.init_distributed(timeout=...) and
# Megatron-LM's --distributed-timeout-minutes (megatron/training/arguments.py, 10 min by default).
TIMEOUT_KNOBS = (
    "init_process_group(timeout=timedelta(...)); HF Trainer --ddp_timeout; accelerate "
    "InitProcessGroupKwargs(timeout=...); Lightning DDPStrategy(timeout=...); "
    "deepspeed.init_distributed(timeout=...); Megatron-LM --distributed-timeout-minutes"
)

# A collective timeout no rank's own error explains (the c10d watchdog's line or its stack): the two usual causes,
# from the corpus' confirmed threads (jpata/particleflow#390, huggingface/accelerate#223 and #2000: one rank's own
# work; pytorch/pytorch#141069: uneven batches) and the PyTorch docs of Join (torch.distributed.algorithms.join).
WATCHDOG_USUAL_CAUSES = (
    "When no rank failed, the usual cause is one rank's own long work (often at an epoch end) while the others "
    "already wait in the next collective - test / evaluation, predictions, plots or dataset pre-processing on "
    "rank 0, a checkpoint save under `if rank == 0` / on the main process: run that work on every rank (each on "
    "its shard, gather the results) or once before the job, or keep the other ranks in a barrier and raise the "
    f"process-group timeout above its duration ({TIMEOUT_KNOBS}). The other usual "
    "cause is ranks with different numbers of batches (an uneven split: a rank that runs out leaves the loop "
    "while the others wait in the next allreduce): give every rank the same number (DistributedSampler, "
    "drop_last=True) or wrap the loop in torch.distributed.algorithms.join.Join."
)


# Each ncclResult_t code's class fix (NCCL's nccl.h: 1 unhandled CUDA, 2 system, 3 internal, 4 invalid argument,
# 5 invalid usage, 6 remote error), as the rows and advice of that class give it (words/advice.py
# nccl_cuda_error, words/nccl_internal.py, nccl_invalid_usage): the error-return row prints the one its chain
# ends in, the whole table only where it names none.
NCCL_RESULT_FIXES: dict[str, tuple[str, str]] = {
    "1": ("CUDA", "the GPU (Xid in dmesg, nvidia-smi -q), then the NCCL build made for the CUDA version in use"),
    "2": ("system", "the interface NCCL uses (NCCL_SOCKET_IFNAME) or /dev/shm in a container (--shm-size, --ipc=host)"),
    "3": (
        "internal",
        "the NCCL release (a newer one, the same on every node), or at communicator init an NCCL_TOPO_FILE / "
        "NCCL_GRAPH_FILE it cannot use",
    ),
    "4": ("invalid argument", "the program's use of NCCL (the same collectives, counts and dtypes on every rank)"),
    "5": ("invalid usage", "the program's use of NCCL (one GPU per rank, the same collectives on every rank)"),
    "6": ("remote", "the peer that failed first (its own log)"),
}
# A chain that runs through NCCL's socket or network code: whatever its code, the peer or the network first
# (modelscope/ms-swift#10183: 'misc/socket.cc:81 -> 3' after a peer rank failed; NVIDIA/nccl#1092).
NCCL_CHAIN_IN_NETWORK = (
    "the chain runs through NCCL's socket / network code: the peer that failed first (its own log), then the "
    "network (NCCL_SOCKET_IFNAME, firewalls)"
)

# A crash in the network plugin NCCL loaded (libnccl-net.so: nccl-rdma-sharp-plugins, aws-ofi-nccl, a vendor's):
# the plugin is a library of its own, loaded from LD_LIBRARY_PATH or named by NCCL_NET_PLUGIN (NCCL's ext-net
# docs: libnccl-net-${NCCL_NET_PLUGIN}.so), so running without it tells its bug from NCCL's; IB transports keep
# their devices in a fixed table (MAX_IB_DEVS, 16 in older plugin and NCCL releases, 32 in newer), so a host with
# more NICs than it holds breaks the plugin's init (NVIDIA/nccl#1091: more than 16 NICs, one taken down fixed it).
NET_PLUGIN_CRASH = (
    "The crash is inside the network plugin NCCL loaded (libnccl-net.so), in the function the backtrace names: run "
    "once without it as a test (take libnccl-net.so off LD_LIBRARY_PATH, or set NCCL_NET_PLUGIN to a name no "
    "library has, so NCCL uses its own IB / socket transport), then install the plugin release built for this NCCL. "
    "A crash in the plugin's init, where it enumerates the NICs, is often more IB devices than its fixed device "
    "table holds (16 in older releases): limit the devices it sees (NCCL_IB_HCA, or take the unused NICs down) or "
    "use a newer plugin."
)

# A collective timeout that rank 0 alone reports (its watchdog's lines, no other rank's): the usual cause is code
# run on rank 0 only that itself issues a collective, so rank 0 waits in it while the others never enter it:
# model.state_dict() under FSDP all-gathers the shards (torch/distributed/fsdp: FULL_STATE_DICT), PEFT's and
# transformers' save_pretrained call it (huggingface/transformers#35234: saving on the main process alone hung in
# _ALLGATHER_BASE until the watchdog fired; the fix gathers the state dict on every rank and passes it to
# save_pretrained), and a metric synced across ranks inside `if rank == 0` (the long work on rank 0 that makes the
# others time out is WATCHDOG_USUAL_CAUSES', which follows it).
RANK_ZERO_ALONE = (
    "Only rank 0 reported this timeout: the usual cause is code that runs on rank 0 alone and itself issues a "
    "collective{gather}, so rank 0 waits in it while the other ranks never enter it - the save's model.state_dict() "
    "or save_pretrained under FSDP / ZeRO-3 (it gathers the shards), or a metric synced across ranks (sync_dist=True, "
    "a torchmetrics compute()) in a rank-0 branch. Call state_dict on every rank (FSDP's get_state_dict / "
    "state_dict_type with rank0_only, then save on rank 0; pass state_dict= to save_pretrained) or gather before "
    "the rank-0 branch. To check, "
)
# The same cause where no line shows a rank-0-only point: one more of the usual causes, after them, not the lead
RANK_ZERO_GATHER_CAUSE = (
    " A gather ({named}) is also what a save's model.state_dict() or save_pretrained issues under FSDP / ZeRO-3: if "
    "rank 0 alone ran one (a save in a rank-0 branch), call state_dict on every rank and save on rank 0."
)
# The words of a point where code runs on rank 0 alone, in the lines a rank printed just before its watchdog's
# timeout: a checkpoint save (Lightning's 'Saving checkpoint', transformers' 'Saving model checkpoint to', a
# state_dict / save_pretrained call in a traceback), an evaluation or validation, metrics logged. Only there does
# rank 0's gather lead the remedy; an ordinary step's timeout in rank 0's output is the usual causes' (a5, a4 of
# the second review of diag57: torchrun's first watchdog abort kills the other ranks, so their silence is normal).
RANK_ZERO_POINT = re.compile(
    r"(?i)\bsav(?:e|ing)\b[^\n]{0,40}\b(?:checkpoint|model|state)|\bstate_dict\b|\bsave_pretrained\b|"
    r"\bevaluat(?:e|ing|ion)\b|\bvalidat(?:e|ing|ion)\b|\brunning eval|\blogging metrics\b|\blog_metrics\b"
)
RANK_ZERO_POINT_LINES = 5  # the non-empty lines before the timeout's line that are read for it
# the operations model.state_dict() issues under FSDP (an all-gather of each flat parameter)
GATHER_OPS = ("all_gather", "allgather", "_allgather_base", "all_gather_into_tensor", "gather")
