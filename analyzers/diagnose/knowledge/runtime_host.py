"""Signature rows (knowledge/runtime_errors.py's third theme): the DataLoader's worker processes and the host's
limits (memory, open files) and file systems."""

from __future__ import annotations

from scope.analyzers.diagnose.knowledge.signature_row import Signature, row

HOST_SIGNATURES: tuple[Signature, ...] = (
    # ---- the DataLoader's worker processes and the host's limits ----------------------------------------
    row(
        "dataloader_worker_oom_killed",
        "killed by signal: killed",
        # the pid as posted, or elided by the poster ('(pid ...)')
        r"DataLoader worker \(pid [^)]*\) is killed by signal: Killed",
        era="all torch releases (torch/csrc/DataLoader.cpp)",
        kind="oom",
        cause="application",
        meaning="A DataLoader worker was killed with SIGKILL: the kernel's or the container's OOM killer took "
        "it for host memory.",
        remedy=(
            "Lower host memory in the data pipeline: fewer num_workers, a smaller prefetch_factor, no dataset "
            "held in Python lists per worker (numpy arrays or memory-mapped files instead; in mmcv / mmdet configs "
            "workers_per_gpu and samples_per_gpu); or more host RAM, or a higher container memory limit "
            "(dmesg -T | grep -i oom shows the kill)."
        ),
        reference="https://pytorch.org/docs/stable/data.html#multi-process-data-loading",
        confidence="medium",
    ),
    row(
        "dataloader_worker_crashed",
        "dataloader worker",
        (
            r"DataLoader worker \(pid \d+\) is killed by signal: (?:Segmentation fault|Aborted)",
            r"DataLoader worker \(pid\(s\) [\d, ]+\) exited unexpectedly",
        ),
        era="all torch releases (torch/utils/data/dataloader.py)",
        cause="application",
        meaning="A DataLoader worker process died; the loader reports it, not why.",
        remedy=(
            "Rerun with num_workers=0 to get the real error in the main process; a native crash in a worker is "
            "often a library not safe after fork (OpenCV: cv2.setNumThreads(0); multiprocessing_context='spawn'), "
            "a Killed worker is host memory and a Bus error is /dev/shm."
        ),
        reference="https://pytorch.org/docs/stable/data.html#multi-process-data-loading",
        confidence="medium",
    ),
    # CUDA IPC of memory from expandable segments (and torch's newer IPC path) passes a file descriptor between
    # processes with pidfd_getfd(2), which Yama's ptrace_scope (1 by default on Ubuntu) and containers without
    # CAP_SYS_PTRACE refuse: pytorch/pytorch#165685 (expandable_segments:True on the sender), #130890 (the IPC
    # support; youkaichao: the OS "disables ptrace"), HorizonRobotics/alf#1805 (PR_SET_PTRACER in the parent)
    row(
        "cuda_ipc_ptrace_blocked",
        ("pidfd_getfd", "Failed to receive CUDA IPC handle"),
        (r"pidfd_getfd: Operation not permitted", r"Failed to receive CUDA IPC handle"),
        era="torch >= 2.5 (CUDA IPC of expandable segments through pidfd_getfd), Linux >= 5.6",
        cause="configuration",
        meaning="A process could not import a CUDA tensor another process shared with it: the kernel refused "
        "pidfd_getfd, the file-descriptor passing CUDA IPC of expandable segments needs, because Yama's "
        "ptrace_scope or the container's missing CAP_SYS_PTRACE forbids it.",
        remedy=(
            "Allow it on the host: sudo sysctl kernel.yama.ptrace_scope=0 (kernel.yama.ptrace_scope = 0 in "
            "/etc/sysctl.d/ to keep it), or run the container with --cap-add SYS_PTRACE (Kubernetes: "
            "securityContext.capabilities.add: [SYS_PTRACE]); or keep the shared tensors out of expandable "
            "segments (no expandable_segments:True in PYTORCH_CUDA_ALLOC_CONF of the sending process)."
        ),
        reference="https://github.com/pytorch/pytorch/issues/165685; https://github.com/pytorch/pytorch/pull/130890; "
        "https://github.com/HorizonRobotics/alf/pull/1805; https://www.kernel.org/doc/Documentation/security/Yama.txt",
    ),
    row(
        "too_many_open_files",
        ("too many open files", "errno 24", "items of ancdata"),
        (r"Too many open files|\[Errno 24\]|EMFILE", r"received 0 items of ancdata"),
        era="all releases (Linux RLIMIT_NOFILE; tensors shared between processes by file descriptor)",
        cause="configuration",
        meaning="The process reached its limit of open file descriptors (RLIMIT_NOFILE): tensors shared by "
        "DataLoader workers each hold one under the file_descriptor sharing strategy.",
        remedy=(
            "Raise the open-file limit (ulimit -n 65535 before the launch; docker --ulimit nofile=65535:65535; "
            "SLURM/systemd LimitNOFILE) or call torch.multiprocessing.set_sharing_strategy('file_system') in the "
            "training script; fewer DataLoader num_workers also lowers the count."
        ),
        reference="https://pytorch.org/docs/stable/multiprocessing.html#sharing-strategies",
    ),
    row(
        "filesystem_io_error",
        ("input/output error", "errno 5]", "stale file handle", "errno 116", "disk quota exceeded"),
        (
            r"\[Errno 5\] Input/output error|Input/output error",
            r"Stale file handle|\[Errno 116\]",
            r"Disk quota exceeded|\[Errno 122\]",
        ),
        era="all releases (EIO / ESTALE / EDQUOT from the kernel's file system client)",
        cause="configuration",
        meaning="The file system refused a read or write: a full volume or an exceeded quota (network file "
        "systems often report it as an I/O error), or an NFS/Lustre/GPFS/FUSE mount that lost its server.",
        remedy=(
            "Check the volume the job writes to on that host: free space and quota (df -h and quota -s / "
            "lfs quota on the path), then the mount's health (dmesg -T for nfs/lustre/xfs errors); write "
            "checkpoints to a volume with room (or node-local disk, copied out after) and keep fewer of them; "
            "the checkpoint being written may be truncated."
        ),
        reference="https://man7.org/linux/man-pages/man3/errno.3.html",
        confidence="medium",
    ),
)
