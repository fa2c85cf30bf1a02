"""Signature rows for the errors a training program raises around the communication stack: the CUDA runtime
and its libraries (cuBLAS, cuDNN, the driver), DDP's reducer, the DataLoader's workers, the process-group
start-up barrier and the file system. Same fields as knowledge/signatures.py (whose table ends with these
rows); each message is quoted as its source prints it, the reference is that source or the public page
that gives the fix. Rows are built with signature_row.row: the id, the needles and the patterns come first
(a single needle or pattern bare), and `kind` is written only where it is not the cause's usual finding
(signature_row.KIND_OF_CAUSE).

A remedy may quote what the line states: `{name}` is filled from the row's `fields_re` group of that name
and `{name|fallback}` falls back to the text after the bar when the line does not state it
(readers/signature_scan.py fills them).
"""

from __future__ import annotations

from scope.analyzers.diagnose.knowledge.signature_row import Signature, row

PT = "https://github.com/pytorch/pytorch/blob/main/"
CUDA_RUNTIME_API = "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html"

RUNTIME_SIGNATURES: tuple[Signature, ...] = (
    # ---- the process group's start-up barrier (init_process_group before torch 2.3 waited in the store) -------
    row(
        "store_based_barrier_timeout",
        "store based barrier",
        r"Timed out initializing process group in store based barrier",
        era="torch 1.8-2.2 (distributed_c10d._store_based_barrier; removed in 2.3)",
        kind="missing_rank",
        cause="configuration",
        meaning="The ranks' check-ins at init_process_group did not add up to world_size within the timeout.",
        remedy=(
            "The store counted {worker_count|a different number of} check-ins for world_size={world_size|N}. "
            "Fewer than world_size: a rank never started or failed before init_process_group (every node's "
            "launcher: --nnodes x --nproc_per_node = WORLD_SIZE, the same MASTER_ADDR/MASTER_PORT, each rank's own "
            "log), or is still busy before it (raise init_process_group(timeout=...)). More than world_size: extra "
            "processes share this store: the script spawns its own workers (mp.spawn) under a launcher that already "
            "starts one per GPU (torchrun, srun -n, deepspeed), or another or an earlier job uses the same "
            "MASTER_PORT (give each job its own port, kill leftover processes)."
        ),
        reference=PT + "torch/distributed/distributed_c10d.py",
        fields_re=r"world_size=(?P<world_size>\d+), worker_count=(?P<worker_count>\d+)",
    ),
    row(
        "monitored_barrier_missing",
        "failed to pass monitoredbarrier",
        r"Ranks? [\d, ]+ failed to pass monitoredBarrier",
        era="torch >= 1.10 (ProcessGroupGloo::monitoredBarrier, dist.monitored_barrier)",
        kind="missing_rank",
        cause="application",
        meaning="dist.monitored_barrier named the ranks that did not reach it within its timeout.",
        remedy=(
            "Read the named ranks' own logs and stacks (py-spy dump --pid): an error or a crash of theirs, long "
            "work of their own (evaluation, pre-processing, a save only on those ranks) or a different code path "
            "that skips the barrier; the barrier's timeout was {timeout_ms|its} ms. "
            "monitored_barrier(wait_all_ranks=True) lists every missing rank, not only the first."
        ),
        reference=PT + "torch/csrc/distributed/c10d/ProcessGroupGloo.cpp",
        ranks_re=r"Ranks? ([\d, ]+) failed to pass monitoredBarrier",
        fields_re=r"monitoredBarrier in (?P<timeout_ms>\d+) ms",
    ),
    # ---- DDP's reducer ----------------------------------------------------------------------------------
    row(
        "ddp_unused_parameters",
        ("finished reduction in the prior iteration", "did not receive grad"),
        (
            r"Expected to have finished reduction in the prior iteration",
            r"Parameter indices which did not receive grad",
        ),
        era="torch >= 1.1 (DistributedDataParallel reducer)",
        cause="application",
        meaning="DDP's reducer waited for gradients of parameters that took no part in the loss of this step.",
        remedy=(
            "Pass find_unused_parameters=True to DistributedDataParallel (Lightning: "
            'strategy="ddp_find_unused_parameters_true"; HF Trainer: ddp_find_unused_parameters=True; '
            "accelerate: DistributedDataParallelKwargs(find_unused_parameters=True)), or make every parameter "
            "reach the loss (freeze the unused ones with requires_grad=False); TORCH_DISTRIBUTED_DEBUG=DETAIL "
            "names the parameters{unused| }."
        ),
        reference=PT + "torch/csrc/distributed/c10d/reducer.cpp",
        fields_re=r"did not receive grad for rank \d+: (?P<unused>[\d ,]+)",
    ),
    row(
        "ddp_marked_ready_twice",
        ("ready only once", "marked as ready twice"),
        (r"Expected to mark a variable ready only once", r"has been marked as ready twice"),
        era="torch >= 1.5 (DistributedDataParallel reducer)",
        cause="application",
        meaning="A parameter's gradient reached DDP twice in one step: reentrant activation checkpointing, a "
        "module used twice, or find_unused_parameters with a graph that changes.",
        remedy=(
            "Use non-reentrant checkpointing (torch.utils.checkpoint(..., use_reentrant=False); HF: "
            'gradient_checkpointing_kwargs={"use_reentrant": False}) or, if the graph is the same every step, '
            "DistributedDataParallel(..., static_graph=True); drop find_unused_parameters=True where no "
            "parameter is unused."
        ),
        reference=PT + "torch/csrc/distributed/c10d/reducer.cpp",
    ),
    row(
        "collective_size_mismatch",
        ("times input tensor size", "times world size", "tensor list must be", "same number of elements"),
        (
            r"(?i)output tensor size must be equal to world_size times input tensor size",
            r"(?i)input tensor size must be equal to output tensor size times world size",
            r"(?i)tensor list must be same size as world size|tensor lists must have the same number of elements",
        ),
        era="torch >= 1.7 (ProcessGroupNCCL / ProcessGroupGloo argument checks)",
        cause="desync",
        meaning="A collective's input and output sizes do not agree with the world size (all_gather / "
        "reduce_scatter given tensors of the wrong size on this rank).",
        remedy=(
            "Give all_gather_into_tensor / reduce_scatter_tensor an output of world_size x the input's size (a "
            "list of world_size tensors for all_gather), the same shapes on every rank; pad variable-length "
            "tensors to one size first."
        ),
        reference=PT + "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
    ),
    # ---- the launcher told to stop, the build, MPI ---------------------------------------------------------
    row(
        "launcher_got_sighup",
        ("got signal: 1", "death signal", "closing signal sighup"),
        (
            r"SignalException: Process \d+ got signal: 1\b",
            r"Received (?:Signals\.SIGHUP|1) death signal",
            r"Sending process \d+ closing signal SIGHUP",
        ),
        era="torch >= 1.9 (torch/distributed/elastic/multiprocessing/api.py: SignalException)",
        kind="crash",
        cause="configuration",
        meaning="The launcher received SIGHUP: the terminal or SSH session that started the job closed, and "
        "the launcher took the workers down with it.",
        remedy=(
            "Start the job detached from the terminal: inside tmux / screen, or nohup torchrun ... > train.log 2>&1 & "
            "followed by disown (a shell still sends SIGHUP to its background jobs at logout), or through the "
            "scheduler (sbatch, a Kubernetes Job); nothing in the training failed: resume from the last checkpoint."
        ),
        reference=PT + "torch/distributed/elastic/multiprocessing/api.py",
        severity="warning",  # the launcher's end, after any error of the job itself
    ),
    row(
        "launcher_got_sigterm",
        ("got signal: 15", "death signal"),
        (r"SignalException: Process \d+ got signal: 15\b", r"Received (?:Signals\.SIGTERM|15) death signal"),
        era="torch >= 1.9 (torch/distributed/elastic: SignalException, 'Received ... death signal')",
        kind="crash",
        cause="configuration",
        meaning="The launcher itself was sent SIGTERM from outside the job: the scheduler's time limit or "
        "preemption, scancel, or Kubernetes deleting or evicting the pod; it stopped the workers.",
        remedy=(
            "Ask the scheduler why it stopped the job (sacct -j JOB -o State,Reason; kubectl describe pod / get "
            "events); for time limits and preemption, checkpoint on the signal and requeue (SLURM --signal=USR1@90 "
            "--requeue; Lightning's SLURM auto-requeue; torchrun --max-restarts with a resumable checkpoint)."
        ),
        reference=PT + "torch/distributed/elastic/multiprocessing/api.py",
        severity="warning",  # the launcher's end, after any error of the job itself
    ),
    row(
        "store_socket_timeout",
        "socket timeout",
        r"RuntimeError: Socket Timeout|^Socket Timeout$",
        era="torch 1.x (c10d TCPStore, Utils.hpp recvBytes / sendBytes)",
        kind="missing_rank",
        cause="configuration",
        meaning="A rank's connection to the rendezvous store (TCPStore on MASTER_ADDR:MASTER_PORT) timed out: "
        "the store's host is unreachable or its process is gone, or the other ranks did not arrive in time.",
        remedy=(
            "Check that MASTER_ADDR / MASTER_PORT reach rank 0's host from every node (the same on all nodes; "
            "firewall), that rank 0 is still alive (its own log), and that every rank starts within the "
            "timeout; raise init_process_group(timeout=...) only if ranks are just slow to arrive."
        ),
        reference=PT + "torch/csrc/distributed/c10d/TCPStore.cpp",
        confidence="medium",
    ),
    row(
        "torch_without_nccl",
        ("doesn't have nccl built in", "libnccl.so"),
        (
            r"Distributed package doesn't have NCCL built in",
            r"libnccl\.so(?:\.\d+)?: cannot open shared object file",
        ),
        era="torch builds without NCCL: Windows, macOS, CPU-only wheels; a CUDA wheel without nvidia-nccl",
        cause="configuration",
        meaning="This PyTorch install has no NCCL: a Windows, macOS or CPU-only build, or a CUDA build whose "
        "NCCL library is missing.",
        remedy=(
            'On Windows or macOS use backend="gloo" (init_process_group("gloo"); accelerate / Lightning pick it '
            "when told); on Linux install a CUDA build of PyTorch (pip install torch --index-url "
            "https://download.pytorch.org/whl/cu121) with its nvidia-nccl-cu12 package, and check "
            "torch.cuda.nccl.version()."
        ),
        reference="https://pytorch.org/docs/stable/distributed.html#backends",
    ),
    row(
        "extension_abi_mismatch",
        "undefined symbol",
        (r"ImportError: \S+\.so: undefined symbol: \S+", r"\.so: undefined symbol: _ZN"),
        era="all releases (a compiled extension loaded into a torch it was not built for)",
        cause="configuration",
        meaning="A compiled extension (flash-attn, apex, TransformerEngine, deepspeed ops, a custom op) was "
        "built against another torch or CUDA version than the one installed.",
        remedy=(
            "Rebuild or reinstall the extension against the installed torch (pip install --no-build-isolation "
            "--force-reinstall --no-cache-dir PACKAGE, or a wheel built for this torch and CUDA version), or "
            "install the torch version it was built for; clear stale build caches (~/.cache/torch_extensions)."
        ),
        reference="https://pytorch.org/tutorials/advanced/cpp_extension.html",
    ),
    row(
        "mpi_abort",
        "mpi_abort was invoked",
        r"MPI_ABORT was invoked on rank \d+",
        era="Open MPI, all releases (ompi_mpi_abort)",
        cause="application",
        meaning="A rank called MPI_Abort (its program gave up after an error of its own) and mpirun ended the job.",
        remedy=(
            "Read rank {abort_rank|the aborting rank}'s own output just before the abort: the error that made it call "
            "MPI_Abort is there (errorcode {errorcode|N}); the other ranks were only stopped."
        ),
        reference="https://www.open-mpi.org/doc/current/man3/MPI_Abort.3.php",
        ranks_re=r"MPI_ABORT was invoked on rank (\d+)",
        fields_re=r"on rank (?P<abort_rank>\d+)|errorcode (?P<errorcode>-?\d+)",
    ),
    # ---- the DataLoader's worker processes and the host's limits ----------------------------------------
    row(
        "dataloader_worker_oom_killed",
        "killed by signal: killed",
        r"DataLoader worker \(pid \d+\) is killed by signal: Killed",
        era="all torch releases (torch/csrc/DataLoader.cpp)",
        kind="oom",
        cause="application",
        meaning="A DataLoader worker was killed with SIGKILL: the kernel's or the container's OOM killer took "
        "it for host memory.",
        remedy=(
            "Lower host memory in the data pipeline: fewer num_workers, a smaller prefetch_factor, no dataset "
            "held in Python lists per worker (numpy arrays or memory-mapped files instead); or raise the "
            "host/container memory limit (dmesg -T | grep -i oom shows the kill)."
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
    # ---- the GPU driver and the CUDA runtime -------------------------------------------------------------
    row(
        "nvidia_driver_too_old",
        ("driver on your system is too old", "found no nvidia driver", "couldn't communicate with the"),
        (
            r"NVIDIA driver on your system is too old",
            r"Found no NVIDIA driver on your system",
            r"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver",
        ),
        era="all torch releases (torch/cuda/__init__.py's check of cudaDriverGetVersion); nvidia-smi",
        cause="configuration",
        meaning="The GPU driver is missing, not loaded, or older than the CUDA version PyTorch was built with.",
        remedy=(
            "Install a driver that supports the build's CUDA version (nvidia-smi shows the driver{driver| }, "
            "torch.version.cuda the build's; the CUDA release notes' driver table) or a PyTorch build for an "
            "older CUDA (pip install torch --index-url https://download.pytorch.org/whl/cu118); in a "
            "container, start it with --gpus all / the NVIDIA runtime; if the driver vanished mid-run, look for "
            "Xid 79 in dmesg."
        ),
        reference="https://docs.nvidia.com/deploy/cuda-compatibility/",
        fields_re=r"found version (?P<driver>\d+)",
    ),
    # NVIDIA/nvidia-docker#1730 (maintainer's notice, also nvidia-container-toolkit#48): under the systemd cgroup
    # driver a host `systemctl daemon-reload` rewrites the container's device cgroup without the NVIDIA nodes
    row(
        "nvml_unknown_error_in_container",
        "Failed to initialize NVML: Unknown Error",
        r"Failed to initialize NVML: Unknown Error",
        era="NVIDIA container toolkit with runc and the systemd cgroup driver (cgroup v1 and v2), 2022 on",
        cause="configuration",
        meaning="NVML could not reach the GPUs. In a container that had them, the usual cause: with systemd "
        "managing its cgroups, a daemon-reload on the host drops the NVIDIA device nodes (no /dev/char symlinks).",
        remedy=(
            "In a container: create the /dev/char symlinks of the NVIDIA devices at boot (sudo nvidia-ctk system "
            "create-dev-char-symlinks --create-all, or its udev rule; GPU Operator >= 22.9.2 does it), or run the "
            "container runtime with the cgroupfs driver, then restart the affected containers or pods. On a bare "
            "host: check that the driver is loaded and matches its NVML library (nvidia-smi, dmesg; reboot after "
            "a driver upgrade)."
        ),
        reference="https://github.com/NVIDIA/nvidia-docker/issues/1730",
    ),
    row(
        "cuda_devices_unavailable",
        "busy or unavailable",
        r"all CUDA-capable devices are busy or unavailable",
        era="all CUDA releases (cudaErrorDevicesUnavailable)",
        cause="configuration",
        meaning="The GPU refused a new context: it is in EXCLUSIVE_PROCESS compute mode and another process "
        "holds it, or several ranks were given the same GPU.",
        remedy=(
            "Give each rank its own GPU (torch.cuda.set_device(local_rank) before any CUDA call; "
            "CUDA_VISIBLE_DEVICES per rank), stop the process that holds it (nvidia-smi), or set the compute "
            "mode back to DEFAULT (nvidia-smi -c DEFAULT)."
        ),
        reference=CUDA_RUNTIME_API,
    ),
    row(
        "cuda_device_side_assert",
        ("device-side assert", "assertion `"),
        (r"device-side assert(?:ion)? triggered", r"Assertion `[^`]+` failed"),
        era="all torch releases (a CUDA kernel's assert, reported at the next CUDA call)",
        cause="application",
        meaning="A CUDA kernel's own check failed, almost always an index out of range: a class label >= the "
        "number of classes, a token id >= the embedding size, a negative label without ignore_index.",
        remedy=(
            "Rerun with CUDA_LAUNCH_BLOCKING=1 (or on CPU) to get the failing op{assertion| }; check the labels "
            "against the number of classes (num_labels) and token ids against the embedding size "
            "(resize_token_embeddings after adding tokens)."
        ),
        reference="https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution",
        fields_re=r"Assertion `(?P<assertion>[^`]{1,80})` failed",
    ),
    row(
        "cuda_illegal_memory_access",
        ("illegal memory access", "misaligned address", "unspecified launch failure"),
        r"an illegal memory access was encountered|misaligned address|unspecified launch failure",
        era="all CUDA releases (cudaErrorIllegalAddress, cudaErrorMisalignedAddress, cudaErrorLaunchFailure)",
        cause="application",
        meaning="A CUDA kernel accessed memory it does not own; later CUDA calls only report it.",
        remedy=(
            "Find the kernel: rerun with CUDA_LAUNCH_BLOCKING=1 or under compute-sanitizer; suspect custom or "
            "fused kernels (flash-attention, apex, TransformerEngine, torch.compile) and versions of torch, CUDA, "
            "NCCL and the driver that do not match; dmesg shows an Xid 13/31/43 for the same time. If an NCCL "
            "or InfiniBand error comes first in the log, that error is the cause."
        ),
        reference="https://docs.nvidia.com/compute-sanitizer/ComputeSanitizer/index.html",
        confidence="medium",
        cuda_named=True,
    ),
    row(
        "cublas_alloc_failed",
        ("cublas_status_alloc_failed", "cudnn_status_alloc_failed"),
        r"CUBLAS_STATUS_ALLOC_FAILED|CUDNN_STATUS_ALLOC_FAILED",
        era="all torch releases (cuBLAS / cuDNN handle or workspace allocation)",
        kind="oom",
        cause="application",
        meaning="cuBLAS or cuDNN could not allocate its workspace: the GPU's memory was already full.",
        remedy=(
            "Free GPU memory: check that no other process or second rank uses this GPU (nvidia-smi; "
            "torch.cuda.set_device(local_rank) before init), lower the batch size; "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True reduces fragmentation."
        ),
        reference="https://docs.nvidia.com/cuda/cublas/index.html#cublasstatus-t",
    ),
    row(
        "cudnn_not_initialized",
        "cudnn_status_not_initialized",
        r"CUDNN_STATUS_NOT_INITIALIZED",
        era="all torch releases",
        cause="configuration",
        meaning="cuDNN could not start: a cuDNN library that does not match the CUDA runtime or driver, or no "
        "GPU memory left for its handle.",
        remedy=(
            "Use the cuDNN that ships with the PyTorch wheel (remove other libcudnn from LD_LIBRARY_PATH; "
            "torch.backends.cudnn.version()), check the driver against torch.version.cuda, and that the GPU "
            "is not already full (nvidia-smi)."
        ),
        reference="https://docs.nvidia.com/deeplearning/cudnn/latest/api/cudnn-graph-library.html",
    ),
    row(
        "cublas_cudnn_failed",
        ("cublas_status_", "cudnn_status_", "cudnn error"),
        (r"CUBLAS_STATUS_\w+", r"CUDNN_STATUS_\w+"),
        era="all torch releases (cuBLAS / cuDNN return codes)",
        cause="application",
        meaning="A cuBLAS or cuDNN call failed; the status is often a memory error or a kernel fault earlier in "
        "the step reported late.",
        remedy=(
            "Rerun with CUDA_LAUNCH_BLOCKING=1 to find the failing call and its shapes (an index out of range or "
            "a shape mismatch earlier in the step often surfaces here); check GPU memory headroom and that the "
            "dtype is supported on this GPU (bf16 needs sm_80+); set torch.backends.cudnn.benchmark=False for "
            "cuDNN, and match torch, CUDA and driver versions."
        ),
        reference="https://docs.nvidia.com/cuda/cublas/index.html#cublasstatus-t",
        confidence="medium",
    ),
)
