"""Remedy sentences more than one table or reading gives, written once (each user adds its own context).

LARGER_SHM: docker's /dev/shm default is 64 MB (docs.docker.com/reference/cli/docker/container/run, --shm-size);
Kubernetes has no shm option, an emptyDir with medium: Memory mounted at /dev/shm is the documented way
(kubernetes.io/docs/concepts/storage/volumes/#emptydir). NCCL_DEBUG_RERUN: NCCL's environment variables
(docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html, NCCL_DEBUG / NCCL_DEBUG_SUBSYS). PEERMEM: the
nvidia-peermem module must match the driver and MOFED (docs.nvidia.com/cuda/gpudirect-rdma).
"""

from __future__ import annotations

LARGER_SHM = (
    "Give the container a larger /dev/shm (docker --shm-size=16g or --ipc=host; Kubernetes: an emptyDir with "
    "medium: Memory mounted at /dev/shm)"
)

NCCL_DEBUG_RERUN = "Rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET"

PEERMEM = "reload nvidia-peermem and check that it matches the driver and MOFED"
