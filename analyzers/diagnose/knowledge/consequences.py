"""Errors that are the consequence of another error printed before them, as data.

A rule says: an error line matching `effect`, printed after an incident of one of the `causes` codes in the
same file (or later in time), is that cause's consequence. The effect stays a finding of its own, linked
under its cause (caused_by / explains), instead of outranking it: the causal levels of model.py put an
application error (a CUDA fault) before a communication error, which is the right order only when nothing
says otherwise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Consequence:
    effect: re.Pattern[str]
    causes: tuple[str, ...]
    why: str
    source: str
    # The effect may also come up to this many lines before its cause in the same file (an error-return
    # chain that NCCL prints before the WARN line naming what failed).
    near: int = 0


CONSEQUENCES: tuple[Consequence, ...] = (
    Consequence(
        re.compile(r"out of memory|Failed to CUDA calloc"),
        ("nccl_rem_allocator_failed",),
        "the remote allocator asked for a size it read from a closed connection: random bytes, far beyond any GPU",
        "https://github.com/NVIDIA/nccl/issues/555 (maintainer sjeaugey)",
    ),
    Consequence(
        re.compile(r"bootstrap\.cc?u?:\d+ -> \d"),
        ("nccl_rem_allocator_failed",),
        "the bootstrap return chain is the remote allocator's own failed read, not an unreachable interface",
        "https://github.com/NVIDIA/nccl/issues/844",
        near=5,
    ),
    Consequence(
        re.compile(r"bootstrap\.cc?u?:\d+ -> \d"),
        ("nccl_ib_transport_failed",),
        "the bootstrap return chain carries the IB transport's error up (NCCL <= 2.3 bootstrapped over the "
        "selected network): the verbs stack failed, not the socket interface",
        "NVIDIA/nccl v2.2 src/bootstrap.cu (bootstrapInit over ncclNet); https://github.com/horovod/horovod/issues/147",
        near=5,
    ),
    Consequence(
        re.compile(r"Caught signal \d+|Segmentation fault|signal 11\b|SIGSEGV|SIGBUS|Bus error"),
        ("shm_too_small",),
        "a process whose shared-memory segment could not be made crashes where it first uses it (UCX unpacking a "
        "peer's address into the FIFO it never mapped): the signal is the short /dev/shm's",
        "https://github.com/NVIDIA/ai-cloud-validation/issues/643 (UCX's 'mm_iface failed to allocate receive "
        "FIFO', then SIGSEGV in ucp_address_unpack; a /dev/shm volume fixed it)",
    ),
    Consequence(
        re.compile(r"illegal memory access|unhandled cuda error|unspecified launch failure|illegal instruction"),
        ("nccl_ib_completion_error", "nccl_net_transport_failed", "ofi_completion_error", "nccl_remote_error"),
        "a network transport error aborts NCCL's communicator while its kernels still run: the CUDA fault at "
        "shutdown comes from the aborted kernels, not from the program",
        "https://github.com/NVIDIA/nccl-tests/issues/24 (the fix was the RoCE GID index; the illegal access went "
        "with the completion errors)",
    ),
    # srun's words for a step whose tasks never started, and slurmstepd's for a SPANK plugin that failed, after
    # the plugin's own line that says why (knowledge/slurm_step.py): mgr.c answers the launch with SLURM_ERROR,
    # which srun prints as 'task N launch failed: Unspecified error'
    Consequence(
        re.compile(
            r"launch failed: |aborted before step completely launched|timeout waiting for task launch|"
            r"spank: required plugin|Failed to invoke spank plugin stack"
        ),
        (
            "slurm_mpi_plugin_missing",
            "slurm_mpi_step_setup_failed",
            "slurm_spank_plugin_failed",
            "pyxis_image_import_failed",
            "pyxis_container_start_failed",
            "pyxis_mount_source_missing",
        ),
        "the step's plugin failed on the node first, so slurmstepd answered srun's launch with an error and no "
        "task started",
        "https://github.com/SchedMD/slurm/blob/master/src/slurmd/slurmstepd/mgr.c (spank_init, "
        "mpi_g_slurmstepd_prefork); https://github.com/SchedMD/slurm/blob/master/src/api/step_launch.c",
        near=10,
    ),
    # enroot's own log, which pyxis prints line by line under 'pyxis: printing enroot log file:' (its hooks' shell
    # errors, a missing path): the detail of the container's failure, not a failure of its own
    Consequence(
        re.compile(r"pyxis: {2,}|pyxis: printing enroot log"),
        ("pyxis_image_import_failed", "pyxis_container_start_failed", "pyxis_mount_source_missing"),
        "enroot's log, printed by pyxis below its failure: the detail of why the container did not start",
        "https://github.com/NVIDIA/pyxis/blob/master/common.c (pyxis: printing %s log file)",
        near=10,
    ),
)


def consequence_of(message: str, cause_codes: set[str]) -> Consequence | None:
    for c in CONSEQUENCES:
        if c.effect.search(message) and cause_codes & set(c.causes):
            return c
    return None
